// Host tensors: element type names, half-precision conversion, textual specs,
// printing and tolerant comparison.
#include "tools/common/host_tensor.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace osprey::tools {

namespace {

using hal::ElementType;

struct TypeName {
  const char* name;
  ElementType type;
};
constexpr TypeName kTypeNames[] = {
    {"f32", ElementType::kFloat32}, {"f16", ElementType::kFloat16},
    {"f64", ElementType::kFloat64}, {"bf16", ElementType::kBFloat16},
    {"i8", ElementType::kInt8},     {"i16", ElementType::kInt16},
    {"i32", ElementType::kInt32},   {"i64", ElementType::kInt64},
    {"u8", ElementType::kUint8},    {"u16", ElementType::kUint16},
    {"u32", ElementType::kUint32},  {"u64", ElementType::kUint64},
    {"i1", ElementType::kBool8},    {"bool", ElementType::kBool8},
};

bool IsFloat(ElementType type) {
  return type == ElementType::kFloat16 || type == ElementType::kFloat32 ||
         type == ElementType::kFloat64 || type == ElementType::kBFloat16;
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

template <typename T>
void Store(HostTensor* tensor, int64_t index, T value) {
  std::memcpy(tensor->data.data() + index * sizeof(T), &value, sizeof(T));
}
template <typename T>
T Load(const HostTensor& tensor, int64_t index) {
  T value;
  std::memcpy(&value, tensor.data.data() + index * sizeof(T), sizeof(T));
  return value;
}

// Parses one value of |type| from |text| and stores it at |index|.
Status StoreParsed(HostTensor* tensor, int64_t index, std::string_view text) {
  std::string s(text);
  // Trim spaces so "1, 2, 3" works.
  size_t begin = s.find_first_not_of(" \t");
  size_t end = s.find_last_not_of(" \t");
  if (begin == std::string::npos) {
    return InvalidArgumentError("empty value at element %lld", (long long)index);
  }
  s = s.substr(begin, end - begin + 1);
  const ElementType type = tensor->element_type;
  if (IsFloat(type)) {
    char* parse_end = nullptr;
    errno = 0;
    double value = std::strtod(s.c_str(), &parse_end);
    if (parse_end != s.c_str() + s.size() || s.empty()) {
      return InvalidArgumentError("value '%s' at element %lld is not a number", s.c_str(),
                                  (long long)index);
    }
    switch (type) {
      case ElementType::kFloat32: Store<float>(tensor, index, float(value)); break;
      case ElementType::kFloat64: Store<double>(tensor, index, value); break;
      case ElementType::kFloat16: Store<uint16_t>(tensor, index, FloatToHalf(float(value))); break;
      default: Store<uint16_t>(tensor, index, FloatToBFloat16(float(value))); break;
    }
    return OkStatus();
  }
  if (type == ElementType::kBool8) {
    uint8_t value;
    if (s == "1" || s == "true" || s == "True") {
      value = 1;
    } else if (s == "0" || s == "false" || s == "False") {
      value = 0;
    } else {
      return InvalidArgumentError("value '%s' at element %lld is not a bool (0/1/true/false)",
                                  s.c_str(), (long long)index);
    }
    Store<uint8_t>(tensor, index, value);
    return OkStatus();
  }
  const bool is_signed = (uint32_t(type) >> 24) == 1;
  const uint32_t bits = hal::ElementBitWidth(type);
  char* parse_end = nullptr;
  errno = 0;
  if (is_signed) {
    long long value = std::strtoll(s.c_str(), &parse_end, 0);
    if (parse_end != s.c_str() + s.size()) {
      return InvalidArgumentError("value '%s' at element %lld is not an integer", s.c_str(),
                                  (long long)index);
    }
    const long long max = bits == 64 ? std::numeric_limits<long long>::max()
                                     : (1LL << (bits - 1)) - 1;
    const long long min = -max - 1;
    if (errno == ERANGE || value < min || value > max) {
      return InvalidArgumentError("value '%s' at element %lld is out of range for %s",
                                  s.c_str(), (long long)index, ElementTypeSpelling(type));
    }
    switch (bits) {
      case 8: Store<int8_t>(tensor, index, int8_t(value)); break;
      case 16: Store<int16_t>(tensor, index, int16_t(value)); break;
      case 32: Store<int32_t>(tensor, index, int32_t(value)); break;
      default: Store<int64_t>(tensor, index, int64_t(value)); break;
    }
  } else {
    if (s[0] == '-') {
      return InvalidArgumentError("value '%s' at element %lld is negative but the type is %s",
                                  s.c_str(), (long long)index, ElementTypeSpelling(type));
    }
    unsigned long long value = std::strtoull(s.c_str(), &parse_end, 0);
    if (parse_end != s.c_str() + s.size()) {
      return InvalidArgumentError("value '%s' at element %lld is not an integer", s.c_str(),
                                  (long long)index);
    }
    const unsigned long long max =
        bits == 64 ? std::numeric_limits<unsigned long long>::max() : (1ULL << bits) - 1;
    if (errno == ERANGE || value > max) {
      return InvalidArgumentError("value '%s' at element %lld is out of range for %s",
                                  s.c_str(), (long long)index, ElementTypeSpelling(type));
    }
    switch (bits) {
      case 8: Store<uint8_t>(tensor, index, uint8_t(value)); break;
      case 16: Store<uint16_t>(tensor, index, uint16_t(value)); break;
      case 32: Store<uint32_t>(tensor, index, uint32_t(value)); break;
      default: Store<uint64_t>(tensor, index, uint64_t(value)); break;
    }
  }
  return OkStatus();
}

std::string FormatValue(const HostTensor& tensor, int64_t index) {
  const ElementType type = tensor.element_type;
  char text[64];
  if (IsFloat(type)) {
    std::snprintf(text, sizeof(text), "%g", ElementAsDouble(tensor, index));
  } else if (type == ElementType::kUint64) {
    std::snprintf(text, sizeof(text), "%llu",
                  (unsigned long long)Load<uint64_t>(tensor, index));
  } else if (type == ElementType::kInt64) {
    std::snprintf(text, sizeof(text), "%lld", (long long)Load<int64_t>(tensor, index));
  } else {
    std::snprintf(text, sizeof(text), "%lld", (long long)ElementAsDouble(tensor, index));
  }
  return text;
}

}  // namespace

int64_t HostTensor::element_count() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string HostTensor::FormatShape() const {
  std::string text;
  for (int64_t dim : shape) text += std::to_string(dim) + "x";
  return text + ElementTypeSpelling(element_type);
}

StatusOr<hal::ElementType> ParseElementType(std::string_view text) {
  for (const TypeName& entry : kTypeNames) {
    if (text == entry.name) return entry.type;
  }
  return InvalidArgumentError(
      "unknown element type %s (expected f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, "
      "u32, u64 or i1)",
      Quoted(text).c_str());
}

const char* ElementTypeSpelling(hal::ElementType type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t result;
  if (exponent == 0) {
    if (mantissa == 0) {
      result = sign;
    } else {
      // Subnormal: normalize.
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3FFu;
      result = sign | uint32_t(127 - 15 - shift + 1) << 23 | (mantissa << 13);
    }
  } else if (exponent == 0x1F) {
    result = sign | 0x7F800000u | (mantissa << 13);
  } else {
    result = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &result, sizeof(value));
  return value;
}

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // Inf or NaN.
    return sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // Rounds to infinity.
  if (abs < 0x38800000u) {  // Subnormal or zero in half.
    if (abs < 0x33000000u) return sign;  // Below half the smallest subnormal.
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // Half subnormals count 2^-24 units.
    uint32_t half = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half & 1u))) ++half;
    return sign | uint16_t(half);
  }
  uint32_t half = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t remainder = abs & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return sign | uint16_t(half);
}

float BFloat16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t FloatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

double ElementAsDouble(const HostTensor& tensor, int64_t index) {
  switch (tensor.element_type) {
    case ElementType::kFloat32: return Load<float>(tensor, index);
    case ElementType::kFloat64: return Load<double>(tensor, index);
    case ElementType::kFloat16: return HalfToFloat(Load<uint16_t>(tensor, index));
    case ElementType::kBFloat16: return BFloat16ToFloat(Load<uint16_t>(tensor, index));
    case ElementType::kInt8: return Load<int8_t>(tensor, index);
    case ElementType::kInt16: return Load<int16_t>(tensor, index);
    case ElementType::kInt32: return Load<int32_t>(tensor, index);
    case ElementType::kInt64: return double(Load<int64_t>(tensor, index));
    case ElementType::kUint8: return Load<uint8_t>(tensor, index);
    case ElementType::kUint16: return Load<uint16_t>(tensor, index);
    case ElementType::kUint32: return Load<uint32_t>(tensor, index);
    case ElementType::kUint64: return double(Load<uint64_t>(tensor, index));
    case ElementType::kBool8: return Load<uint8_t>(tensor, index) != 0 ? 1.0 : 0.0;
    case ElementType::kNone: break;
  }
  return 0.0;
}

StatusOr<HostTensor> ParseTensorSpec(std::string_view spec) {
  HostTensor tensor;
  const size_t equals = spec.find('=');
  const std::string_view type_part = spec.substr(0, equals);
  if (type_part.empty()) {
    return InvalidArgumentError("tensor spec %s has no shape/type before '=' (expected e.g. "
                                "2x3xf32=1,2,3,4,5,6)",
                                Quoted(spec).c_str());
  }
  // Everything up to the last 'x' is dimensions; the rest is the type.
  const size_t last_x = type_part.rfind('x');
  std::string_view dims_part;
  std::string_view element_part = type_part;
  if (last_x != std::string_view::npos) {
    dims_part = type_part.substr(0, last_x);
    element_part = type_part.substr(last_x + 1);
  }
  auto element_type = ParseElementType(element_part);
  if (!element_type.ok()) {
    return std::move(element_type).status().Annotate("in tensor spec %s", Quoted(spec).c_str());
  }
  tensor.element_type = *element_type;
  int64_t element_count = 1;
  size_t start = 0;
  while (!dims_part.empty() && start <= dims_part.size()) {
    size_t next = dims_part.find('x', start);
    if (next == std::string_view::npos) next = dims_part.size();
    std::string dim_text(dims_part.substr(start, next - start));
    char* end = nullptr;
    errno = 0;
    long long dim = std::strtoll(dim_text.c_str(), &end, 10);
    if (dim_text.empty() || end != dim_text.c_str() + dim_text.size() || dim < 0 ||
        errno == ERANGE) {
      return InvalidArgumentError("bad dimension '%s' in tensor spec %s (dimensions are "
                                  "non-negative integers separated by 'x')",
                                  dim_text.c_str(), Quoted(spec).c_str());
    }
    if (dim != 0 && element_count > (int64_t(1) << 40) / dim) {
      return InvalidArgumentError("tensor spec %s has too many elements", Quoted(spec).c_str());
    }
    element_count *= dim;
    tensor.shape.push_back(dim);
    start = next + 1;
    if (next == dims_part.size()) break;
  }
  if (tensor.shape.size() > 8) {
    return InvalidArgumentError("tensor spec %s has rank %zu; at most 8 is supported",
                                Quoted(spec).c_str(), tensor.shape.size());
  }
  const size_t element_size = hal::ElementByteSize(tensor.element_type);
  tensor.data.assign(size_t(element_count) * element_size, 0);
  if (equals == std::string_view::npos) return tensor;

  std::string_view values = spec.substr(equals + 1);
  std::vector<std::string_view> items;
  size_t pos = 0;
  while (true) {
    size_t comma = values.find(',', pos);
    items.push_back(values.substr(pos, comma == std::string_view::npos ? std::string_view::npos
                                                                       : comma - pos));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (items.size() == 1 && element_count != 1) {
    // One value fills the tensor.
    if (element_count == 0) return tensor;
    OSPREY_RETURN_IF_ERROR(StoreParsed(&tensor, 0, items[0]), "in tensor spec %s",
                           Quoted(spec).c_str());
    for (int64_t i = 1; i < element_count; ++i) {
      std::memcpy(tensor.data.data() + i * element_size, tensor.data.data(), element_size);
    }
    return tensor;
  }
  if (int64_t(items.size()) != element_count) {
    return InvalidArgumentError("tensor spec %s has %zu values but shape %s needs %lld",
                                Quoted(spec).c_str(), items.size(),
                                tensor.FormatShape().c_str(), (long long)element_count);
  }
  for (int64_t i = 0; i < element_count; ++i) {
    OSPREY_RETURN_IF_ERROR(StoreParsed(&tensor, i, items[i]), "in tensor spec %s",
                           Quoted(spec).c_str());
  }
  return tensor;
}

std::string FormatTensor(const HostTensor& tensor, int64_t max_elements) {
  std::string text = tensor.FormatShape() + "=";
  const int64_t count = tensor.element_count();
  const size_t rank = tensor.shape.size();
  if (rank == 0) return text + FormatValue(tensor, 0);
  // Elements spanned by one bracket of each level, to open and close
  // brackets at dimension boundaries.
  std::vector<int64_t> blocks(rank, tensor.shape[rank - 1]);
  for (size_t i = rank - 1; i > 0; --i) blocks[i - 1] = blocks[i] * tensor.shape[i - 1];
  if (count == 0) return text + std::string(rank, '[') + std::string(rank, ']');
  for (int64_t i = 0; i < count; ++i) {
    if (i >= max_elements) {
      text += "...";
      break;
    }
    bool opened = false;
    for (size_t d = 0; d < rank; ++d) {
      if (i % blocks[d] == 0) {
        text += "[";
        opened = true;
      }
    }
    if (!opened) text += " ";
    text += FormatValue(tensor, i);
    for (size_t d = 0; d < rank; ++d) {
      if ((i + 1) % blocks[d] == 0) text += "]";
    }
  }
  return text;
}

Status CompareTensors(const HostTensor& expected, const HostTensor& actual, double tolerance) {
  if (expected.element_type != actual.element_type || expected.shape != actual.shape) {
    return InvalidArgumentError("expected %s, got %s", expected.FormatShape().c_str(),
                                actual.FormatShape().c_str());
  }
  const bool is_float = IsFloat(expected.element_type);
  const double int_tolerance = std::floor(tolerance);
  const int64_t count = expected.element_count();
  int64_t mismatches = 0;
  std::ostringstream first;
  double max_error = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    bool equal;
    double e, a;
    if (!is_float && (expected.element_type == hal::ElementType::kInt64 ||
                      expected.element_type == hal::ElementType::kUint64)) {
      // 64-bit integers do not fit a double exactly: compare as integers.
      uint64_t ue = Load<uint64_t>(expected, i), ua = Load<uint64_t>(actual, i);
      if (ue == ua) continue;
      e = ElementAsDouble(expected, i);
      a = ElementAsDouble(actual, i);
      equal = int_tolerance >= 1 && std::fabs(a - e) <= int_tolerance;
    } else {
      e = ElementAsDouble(expected, i);
      a = ElementAsDouble(actual, i);
      if (is_float) {
        if (std::isnan(e) || std::isnan(a)) {
          equal = std::isnan(e) && std::isnan(a);
        } else if (std::isinf(e) || std::isinf(a)) {
          equal = e == a;
        } else {
          equal = std::fabs(a - e) <= tolerance * std::max(1.0, std::fabs(e));
        }
      } else {
        equal = std::fabs(a - e) <= int_tolerance;
      }
    }
    if (equal) continue;
    if (!std::isnan(a - e)) max_error = std::max(max_error, std::fabs(a - e));
    if (mismatches < 5) {
      first << "\n  element " << i << ": expected " << FormatValue(expected, i) << ", got "
            << FormatValue(actual, i);
    }
    ++mismatches;
  }
  if (mismatches == 0) return OkStatus();
  return InvalidArgumentError("%lld of %lld elements of %s differ (tolerance %g, max abs error "
                              "%g):%s",
                              (long long)mismatches, (long long)count,
                              expected.FormatShape().c_str(), tolerance, max_error,
                              first.str().c_str());
}

}  // namespace osprey::tools
