// .npy parsing and serialization with strict header validation.
#include "tools/common/npy.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace osprey::tools {

namespace {

using hal::ElementType;

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// Larger headers are certainly corrupt; NumPy itself refuses > 10000 bytes
// by default.
constexpr size_t kMaxHeaderLength = 1 << 20;

// The parsed header dictionary.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A tiny parser for the Python literal dictionary NumPy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Status Parse(NpyHeader* header) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{' at the start of the header dictionary");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      OSPREY_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (Peek() != '\'' && Peek() != '"') {
          return Error("'descr' is not a string (structured dtypes are not supported)");
        }
        OSPREY_RETURN_IF_ERROR(ParseString(&header->descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (ConsumeWord("True")) {
          header->fortran_order = true;
        } else if (ConsumeWord("False")) {
          header->fortran_order = false;
        } else {
          return Error("'fortran_order' must be True or False");
        }
        have_order = true;
      } else if (key == "shape") {
        OSPREY_RETURN_IF_ERROR(ParseShape(&header->shape));
        have_shape = true;
      } else {
        return Error("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Error("expected ',' or '}' after the value of '" + key + "'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the header dictionary");
    if (!have_descr) return Error("header has no 'descr'");
    if (!have_order) return Error("header has no 'fortran_order'");
    if (!have_shape) return Error("header has no 'shape'");
    return OkStatus();
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgumentError("malformed .npy header at offset %zu: %s", pos_, what.c_str());
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  Status ParseString(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return OkStatus();
  }
  Status ParseShape(std::vector<int64_t>* shape) {
    const char close = Consume('(') ? ')' : Consume('[') ? ']' : '\0';
    if (!close) return Error("'shape' must be a tuple of integers");
    while (true) {
      SkipSpace();
      if (Consume(close)) return OkStatus();
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("'shape' must contain non-negative integers");
      }
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        if (value > (int64_t(1) << 50)) return Error("dimension in 'shape' is too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      Consume('L');  // Python 2 long suffix.
      shape->push_back(value);
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume(close)) return OkStatus();
      return Error("expected ',' or the end of 'shape'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Maps a descr such as "<f4" to an element type; sets |*swap| if the data is
// big-endian multi-byte.
StatusOr<ElementType> ParseDescr(const std::string& descr, bool* swap) {
  *swap = false;
  if (descr == "?" || descr == "|?") return ElementType::kBool8;
  if (descr.size() < 3) {
    return InvalidArgumentError("unsupported .npy dtype '%s'", descr.c_str());
  }
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return InvalidArgumentError("unsupported .npy dtype '%s': bad byte-order character",
                                descr.c_str());
  }
  const char kind = descr[1];
  const std::string size_text = descr.substr(2);
  for (char c : size_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return InvalidArgumentError("unsupported .npy dtype '%s'", descr.c_str());
    }
  }
  const int size = std::atoi(size_text.c_str());
  ElementType type = ElementType::kNone;
  switch (kind) {
    case 'f':
      type = size == 2 ? ElementType::kFloat16
             : size == 4 ? ElementType::kFloat32
             : size == 8 ? ElementType::kFloat64
                         : ElementType::kNone;
      break;
    case 'i':
      type = size == 1 ? ElementType::kInt8
             : size == 2 ? ElementType::kInt16
             : size == 4 ? ElementType::kInt32
             : size == 8 ? ElementType::kInt64
                         : ElementType::kNone;
      break;
    case 'u':
      type = size == 1 ? ElementType::kUint8
             : size == 2 ? ElementType::kUint16
             : size == 4 ? ElementType::kUint32
             : size == 8 ? ElementType::kUint64
                         : ElementType::kNone;
      break;
    case 'b':
      type = size == 1 ? ElementType::kBool8 : ElementType::kNone;
      break;
    default:
      break;
  }
  if (type == ElementType::kNone) {
    return InvalidArgumentError(
        "unsupported .npy dtype '%s' (supported: f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, u8, b1)",
        descr.c_str());
  }
  *swap = order == '>' && size > 1;
  return type;
}

void SwapBytes(std::vector<uint8_t>* data, size_t element_size) {
  for (size_t i = 0; i + element_size <= data->size(); i += element_size) {
    for (size_t j = 0; j < element_size / 2; ++j) {
      std::swap((*data)[i + j], (*data)[i + element_size - 1 - j]);
    }
  }
}

// Reorders column-major |data| to row-major.
std::vector<uint8_t> FortranToC(const std::vector<uint8_t>& data,
                                const std::vector<int64_t>& shape, size_t element_size) {
  const size_t rank = shape.size();
  std::vector<uint8_t> result(data.size());
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> f_strides(rank, 1);
  for (size_t d = 1; d < rank; ++d) f_strides[d] = f_strides[d - 1] * shape[d - 1];
  for (int64_t c = 0; c < count; ++c) {
    int64_t f = 0;
    for (size_t d = 0; d < rank; ++d) f += index[d] * f_strides[d];
    std::memcpy(result.data() + c * element_size, data.data() + f * element_size,
                element_size);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return result;
}

const char* DescrFor(ElementType type) {
  switch (type) {
    case ElementType::kFloat16: return "<f2";
    case ElementType::kFloat32: return "<f4";
    case ElementType::kFloat64: return "<f8";
    case ElementType::kInt8: return "|i1";
    case ElementType::kInt16: return "<i2";
    case ElementType::kInt32: return "<i4";
    case ElementType::kInt64: return "<i8";
    case ElementType::kUint8: return "|u1";
    case ElementType::kUint16: return "<u2";
    case ElementType::kUint32: return "<u4";
    case ElementType::kUint64: return "<u8";
    case ElementType::kBool8: return "|b1";
    default: return nullptr;
  }
}

}  // namespace

StatusOr<HostTensor> ParseNpy(std::span<const uint8_t> bytes) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return InvalidArgumentError("not a .npy file: missing the \\x93NUMPY magic (%zu bytes)",
                                bytes.size());
  }
  const uint8_t major = bytes[6];
  const uint8_t minor = bytes[7];
  size_t header_length;
  size_t preamble;
  if (major == 1) {
    header_length = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    preamble = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      return DataLossError(".npy file truncated in the header length (%zu bytes)", bytes.size());
    }
    header_length = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 |
                    size_t(bytes[11]) << 24;
    preamble = 12;
  } else {
    return InvalidArgumentError("unsupported .npy format version %u.%u (supported: 1.0, 2.0, "
                                "3.0)",
                                major, minor);
  }
  if (header_length > kMaxHeaderLength) {
    return InvalidArgumentError(".npy header length %zu is implausibly large", header_length);
  }
  if (bytes.size() < preamble + header_length) {
    return DataLossError(".npy file truncated: header needs %zu bytes, file has %zu",
                         preamble + header_length, bytes.size());
  }
  std::string_view header_text(reinterpret_cast<const char*>(bytes.data()) + preamble,
                               header_length);
  NpyHeader header;
  OSPREY_RETURN_IF_ERROR(HeaderParser(header_text).Parse(&header));
  bool swap = false;
  HostTensor tensor;
  OSPREY_ASSIGN_OR_RETURN(tensor.element_type, ParseDescr(header.descr, &swap));
  if (header.shape.size() > 8) {
    return InvalidArgumentError(".npy array has rank %zu; at most 8 is supported",
                                header.shape.size());
  }
  tensor.shape = header.shape;
  const size_t element_size = hal::ElementByteSize(tensor.element_type);
  uint64_t count = 1;
  for (int64_t dim : tensor.shape) {
    if (dim != 0 && count > (uint64_t(1) << 40) / uint64_t(dim)) {
      return InvalidArgumentError(".npy shape %s has too many elements",
                                  tensor.FormatShape().c_str());
    }
    count *= uint64_t(dim);
  }
  const uint64_t data_length = count * element_size;
  const size_t available = bytes.size() - preamble - header_length;
  if (available < data_length) {
    return DataLossError(".npy data truncated: shape %s needs %llu bytes, file has %zu",
                         tensor.FormatShape().c_str(), (unsigned long long)data_length,
                         available);
  }
  if (available > data_length) {
    return InvalidArgumentError(".npy file has %zu bytes after the %llu bytes shape %s needs",
                                available - size_t(data_length), (unsigned long long)data_length,
                                tensor.FormatShape().c_str());
  }
  const uint8_t* data = bytes.data() + preamble + header_length;
  tensor.data.assign(data, data + data_length);
  if (swap) SwapBytes(&tensor.data, element_size);
  if (header.fortran_order && tensor.shape.size() > 1) {
    tensor.data = FortranToC(tensor.data, tensor.shape, element_size);
  }
  if (tensor.element_type == ElementType::kBool8) {
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      if (tensor.data[i] > 1) {
        return InvalidArgumentError(".npy bool element %zu has value %u (expected 0 or 1)", i,
                                    tensor.data[i]);
      }
    }
  }
  return tensor;
}

StatusOr<HostTensor> ReadNpyFile(const std::string& path) {
  OSPREY_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  OSPREY_ASSIGN_OR_RETURN(auto tensor, ParseNpy(bytes), "reading '%s'", path.c_str());
  return tensor;
}

StatusOr<std::vector<uint8_t>> SerializeNpy(const HostTensor& tensor) {
  const char* descr = DescrFor(tensor.element_type);
  if (!descr) {
    return InvalidArgumentError("element type %s has no .npy dtype",
                                ElementTypeSpelling(tensor.element_type));
  }
  if (tensor.data.size() != size_t(tensor.element_count()) *
                                hal::ElementByteSize(tensor.element_type)) {
    return InvalidArgumentError("tensor %s holds %zu bytes", tensor.FormatShape().c_str(),
                                tensor.data.size());
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    shape += std::to_string(tensor.shape[i]);
    if (tensor.shape.size() == 1 || i + 1 < tensor.shape.size()) shape += ", ";
  }
  if (tensor.shape.size() == 1) shape.pop_back();
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) return InvalidArgumentError(".npy header too long");
  std::vector<uint8_t> bytes(kMagic, kMagic + sizeof(kMagic));
  bytes.push_back(1);
  bytes.push_back(0);
  bytes.push_back(uint8_t(header.size() & 0xFF));
  bytes.push_back(uint8_t(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), tensor.data.begin(), tensor.data.end());
  return bytes;
}

Status WriteNpyFile(const std::string& path, const HostTensor& tensor) {
  OSPREY_ASSIGN_OR_RETURN(auto bytes, SerializeNpy(tensor), "writing '%s'", path.c_str());
  return WriteFileBytes(path, bytes);
}

StatusOr<HostTensor> ParseInputArgument(const std::string& argument) {
  if (!argument.empty() && argument[0] == '@') return ReadNpyFile(argument.substr(1));
  return ParseTensorSpec(argument);
}

}  // namespace osprey::tools
