// Graph IR core: types, constant storage, attributes, values, ops and graphs.
#include "compiler/graph/ir.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

namespace {
struct ElementTypeInfo {
  ElementType type;
  const char *name;
  size_t size;
};
constexpr ElementTypeInfo kElementTypes[] = {
    {ElementType::F32, "f32", 4},   {ElementType::F16, "f16", 2},
    {ElementType::BF16, "bf16", 2}, {ElementType::F64, "f64", 8},
    {ElementType::I8, "i8", 1},     {ElementType::I16, "i16", 2},
    {ElementType::I32, "i32", 4},   {ElementType::I64, "i64", 8},
    {ElementType::U8, "u8", 1},     {ElementType::U16, "u16", 2},
    {ElementType::U32, "u32", 4},   {ElementType::U64, "u64", 8},
    {ElementType::Bool, "i1", 1},
};

// IEEE half <-> float conversions for reading/writing f16 constants.
float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = (bits >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mant = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) {
    return sign | 0x7c00 | (mant ? 0x200 : 0);
  }
  if (exp >= 31) {
    return sign | 0x7c00;
  }
  if (exp <= 0) {
    if (exp < -10) {
      return sign;
    }
    mant |= 0x800000;
    uint32_t shift = 14 - exp;
    uint32_t half = mant >> shift;
    if ((mant >> (shift - 1)) & 1) {
      ++half;
    }
    return sign | half;
  }
  uint16_t half = sign | (exp << 10) | (mant >> 13);
  if (mant & 0x1000) {
    ++half; // round to nearest (ties away; adequate for constants)
  }
  return half;
}
} // namespace

llvm::StringRef elementTypeName(ElementType type) {
  for (const auto &info : kElementTypes) {
    if (info.type == type) {
      return info.name;
    }
  }
  return "?";
}

std::optional<ElementType> parseElementType(llvm::StringRef name) {
  for (const auto &info : kElementTypes) {
    if (name == info.name) {
      return info.type;
    }
  }
  return std::nullopt;
}

size_t elementByteSize(ElementType type) {
  for (const auto &info : kElementTypes) {
    if (info.type == type) {
      return info.size;
    }
  }
  return 0;
}

bool isFloatType(ElementType type) {
  return type == ElementType::F32 || type == ElementType::F16 ||
         type == ElementType::BF16 || type == ElementType::F64;
}

bool isIntegerType(ElementType type) {
  return !isFloatType(type) && type != ElementType::Bool;
}

//===----------------------------------------------------------------------===//
// TensorType
//===----------------------------------------------------------------------===//

TensorType TensorType::ranked(ElementType elementType,
                              std::vector<int64_t> dims) {
  TensorType t;
  t.elementType_ = elementType;
  t.ranked_ = true;
  t.dims_ = std::move(dims);
  return t;
}

TensorType TensorType::unranked(ElementType elementType) {
  TensorType t;
  t.elementType_ = elementType;
  return t;
}

bool TensorType::hasStaticShape() const {
  return ranked_ && std::none_of(dims_.begin(), dims_.end(),
                                 [](int64_t d) { return d < 0; });
}

int64_t TensorType::numElements() const {
  if (!hasStaticShape()) {
    return kDynamic;
  }
  int64_t n = 1;
  for (int64_t d : dims_) {
    n *= d;
  }
  return n;
}

TensorType TensorType::withElementType(ElementType elementType) const {
  TensorType t = *this;
  t.elementType_ = elementType;
  return t;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  if (!ranked_) {
    s += "*x";
  } else {
    for (int64_t d : dims_) {
      s += d < 0 ? std::string("?") : std::to_string(d);
      s += "x";
    }
  }
  s += elementTypeName(elementType_).str();
  s += ">";
  return s;
}

std::optional<TensorType> refineType(const TensorType &a, const TensorType &b) {
  if (a.elementType() != b.elementType()) {
    return std::nullopt;
  }
  if (!a.hasRank()) {
    return b;
  }
  if (!b.hasRank()) {
    return a;
  }
  if (a.rank() != b.rank()) {
    return std::nullopt;
  }
  std::vector<int64_t> dims(a.rank());
  for (int64_t i = 0; i < a.rank(); ++i) {
    int64_t x = a.dim(i), y = b.dim(i);
    if (x >= 0 && y >= 0 && x != y) {
      return std::nullopt;
    }
    dims[i] = x >= 0 ? x : y;
  }
  return TensorType::ranked(a.elementType(), std::move(dims));
}

//===----------------------------------------------------------------------===//
// DenseData
//===----------------------------------------------------------------------===//

DenseData DenseData::fromBytes(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  DenseData d;
  d.data_ = owner->data();
  d.size_ = owner->size();
  d.owner_ = std::move(owner);
  return d;
}

DenseData DenseData::view(std::shared_ptr<const void> owner,
                          const uint8_t *data, size_t size) {
  DenseData d;
  d.owner_ = std::move(owner);
  d.data_ = data;
  d.size_ = size;
  return d;
}

namespace {
template <typename T> void put(std::vector<uint8_t> &out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}
template <typename T> T get(const uint8_t *data, size_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}

void storeDouble(ElementType type, std::vector<uint8_t> &out, size_t i,
                 double v) {
  switch (type) {
  case ElementType::F32: put<float>(out, i, static_cast<float>(v)); break;
  case ElementType::F64: put<double>(out, i, v); break;
  case ElementType::F16:
    put<uint16_t>(out, i, floatToHalf(static_cast<float>(v)));
    break;
  case ElementType::BF16: {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put<uint16_t>(out, i, static_cast<uint16_t>(bits >> 16));
    break;
  }
  case ElementType::I8: put<int8_t>(out, i, static_cast<int8_t>(v)); break;
  case ElementType::I16: put<int16_t>(out, i, static_cast<int16_t>(v)); break;
  case ElementType::I32: put<int32_t>(out, i, static_cast<int32_t>(v)); break;
  case ElementType::I64: put<int64_t>(out, i, static_cast<int64_t>(v)); break;
  case ElementType::U8: put<uint8_t>(out, i, static_cast<uint8_t>(v)); break;
  case ElementType::U16: put<uint16_t>(out, i, static_cast<uint16_t>(v)); break;
  case ElementType::U32: put<uint32_t>(out, i, static_cast<uint32_t>(v)); break;
  case ElementType::U64: put<uint64_t>(out, i, static_cast<uint64_t>(v)); break;
  case ElementType::Bool: put<uint8_t>(out, i, v != 0 ? 1 : 0); break;
  }
}
} // namespace

DenseData DenseData::fromDoubles(ElementType type,
                                 llvm::ArrayRef<double> values) {
  std::vector<uint8_t> bytes(values.size() * elementByteSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    storeDouble(type, bytes, i, values[i]);
  }
  return fromBytes(std::move(bytes));
}

DenseData DenseData::fromInt64s(ElementType type,
                                llvm::ArrayRef<int64_t> values) {
  std::vector<uint8_t> bytes(values.size() * elementByteSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == ElementType::I64) {
      put<int64_t>(bytes, i, values[i]);
    } else if (type == ElementType::U64) {
      put<uint64_t>(bytes, i, static_cast<uint64_t>(values[i]));
    } else {
      storeDouble(type, bytes, i, static_cast<double>(values[i]));
    }
  }
  return fromBytes(std::move(bytes));
}

double DenseData::getDouble(ElementType type, size_t i) const {
  switch (type) {
  case ElementType::F32: return get<float>(data_, i);
  case ElementType::F64: return get<double>(data_, i);
  case ElementType::F16: return halfToFloat(get<uint16_t>(data_, i));
  case ElementType::BF16: {
    uint32_t bits = static_cast<uint32_t>(get<uint16_t>(data_, i)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default: return static_cast<double>(getInt64(type, i));
  }
}

int64_t DenseData::getInt64(ElementType type, size_t i) const {
  switch (type) {
  case ElementType::I8: return get<int8_t>(data_, i);
  case ElementType::I16: return get<int16_t>(data_, i);
  case ElementType::I32: return get<int32_t>(data_, i);
  case ElementType::I64: return get<int64_t>(data_, i);
  case ElementType::U8: return get<uint8_t>(data_, i);
  case ElementType::U16: return get<uint16_t>(data_, i);
  case ElementType::U32: return get<uint32_t>(data_, i);
  case ElementType::U64: return static_cast<int64_t>(get<uint64_t>(data_, i));
  case ElementType::Bool: return get<uint8_t>(data_, i) != 0;
  default: return static_cast<int64_t>(getDouble(type, i));
  }
}

std::vector<double> DenseData::toDoubles(ElementType type) const {
  size_t n = size_ / elementByteSize(type);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = getDouble(type, i);
  }
  return out;
}

std::vector<int64_t> DenseData::toInt64s(ElementType type) const {
  size_t n = size_ / elementByteSize(type);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = getInt64(type, i);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Op
//===----------------------------------------------------------------------===//

const Attribute *Op::getAttr(llvm::StringRef name) const {
  auto it = attrs_.find(name.str());
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Op::getInt(llvm::StringRef name, int64_t defaultValue) const {
  const Attribute *a = getAttr(name);
  return a && a->isInt() ? a->getInt() : defaultValue;
}

double Op::getFloat(llvm::StringRef name, double defaultValue) const {
  const Attribute *a = getAttr(name);
  return a && (a->isFloat() || a->isInt()) ? a->getFloat() : defaultValue;
}

std::string Op::getString(llvm::StringRef name,
                          llvm::StringRef defaultValue) const {
  const Attribute *a = getAttr(name);
  return a && a->isString() ? a->getString() : defaultValue.str();
}

IntList Op::getIntList(llvm::StringRef name, IntList defaultValue) const {
  const Attribute *a = getAttr(name);
  return a && a->isIntList() ? a->getIntList() : defaultValue;
}

bool Op::is(OpKind kind) const { return info_ && info_->kind == kind; }

std::string Op::describe() const {
  std::string node = nodeName_.empty()
                         ? (results_.empty() ? std::string("?")
                                             : "%" + results_[0]->name())
                         : nodeName_;
  return "node '" + node + "' (" + kind_ + ")";
}

absl::Status Op::emitError(llvm::StringRef message) const {
  return absl::InvalidArgumentError(describe() + ": " + message.str());
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Value *Graph::addInput(std::string name, TensorType type) {
  values_.push_back(std::make_unique<Value>());
  Value *v = values_.back().get();
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Op *Graph::createOp(llvm::StringRef kind, std::vector<Value *> operands,
                    std::vector<TensorType> resultTypes,
                    std::map<std::string, Attribute> attrs, Op *insertBefore,
                    std::vector<std::string> resultNames) {
  auto op = std::make_unique<Op>();
  op->kind_ = kind.str();
  op->info_ = lookupOp(kind);
  op->operands_ = std::move(operands);
  op->attrs_ = std::move(attrs);
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    values_.push_back(std::make_unique<Value>());
    Value *v = values_.back().get();
    v->type_ = std::move(resultTypes[i]);
    v->definingOp_ = op.get();
    v->resultIndex_ = static_cast<unsigned>(i);
    if (i < resultNames.size()) {
      v->name_ = resultNames[i];
    }
    op->results_.push_back(v);
  }
  Op *raw = op.get();
  if (insertBefore) {
    ops_.insert(ops_.begin() + indexOf(insertBefore), std::move(op));
  } else {
    ops_.push_back(std::move(op));
  }
  return raw;
}

Op *Graph::createConstant(TensorType type, DenseData data, Op *insertBefore,
                          std::string name) {
  Op *op = createOp("Constant", {}, {std::move(type)}, {}, insertBefore,
                    {std::move(name)});
  op->setValue(std::move(data));
  return op;
}

std::vector<Op *> Graph::opList() const {
  std::vector<Op *> list;
  list.reserve(ops_.size());
  for (const auto &op : ops_) {
    list.push_back(op.get());
  }
  return list;
}

std::vector<Op *> Graph::users(const Value *value) const {
  std::vector<Op *> result;
  for (const auto &op : ops_) {
    for (Value *operand : op->operands_) {
      if (operand == value) {
        result.push_back(op.get());
        break;
      }
    }
  }
  return result;
}

bool Graph::hasUses(const Value *value) const {
  if (isOutput(value)) {
    return true;
  }
  for (const auto &op : ops_) {
    for (Value *operand : op->operands_) {
      if (operand == value) {
        return true;
      }
    }
  }
  return false;
}

void Graph::setOutputs(std::vector<Value *> outputs,
                       std::vector<std::string> names) {
  if (names.size() != outputs.size()) {
    names.clear();
    for (const Value *v : outputs) {
      names.push_back(v ? v->name() : std::string());
    }
  }
  outputs_ = std::move(outputs);
  outputNames_ = std::move(names);
}

bool Graph::isOutput(const Value *value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  for (auto &op : ops_) {
    for (Value *&operand : op->operands_) {
      if (operand == from) {
        operand = to;
      }
    }
  }
  for (Value *&output : outputs_) {
    if (output == from) {
      output = to;
    }
  }
}

size_t Graph::indexOf(const Op *op) const {
  // From the back: the ops passes erase are most often recent ones.
  for (size_t i = ops_.size(); i-- > 0;) {
    if (ops_[i].get() == op) {
      return i;
    }
  }
  assert(false && "op not in graph");
  return ops_.size();
}

void Graph::eraseOp(Op *op) {
  size_t i = indexOf(op);
  for (Value *result : op->results_) {
    result->definingOp_ = nullptr;
  }
  ops_.erase(ops_.begin() + i);
}

void Graph::eraseOps(const std::unordered_set<const Op *> &ops) {
  for (const auto &op : ops_) {
    if (ops.count(op.get())) {
      for (Value *result : op->results_) {
        result->definingOp_ = nullptr;
      }
    }
  }
  ops_.erase(std::remove_if(ops_.begin(), ops_.end(),
                            [&](const std::unique_ptr<Op> &op) {
                              return ops.count(op.get()) != 0;
                            }),
             ops_.end());
}

void Graph::moveBefore(Op *op, Op *before) {
  size_t i = indexOf(op);
  std::unique_ptr<Op> owned = std::move(ops_[i]);
  ops_.erase(ops_.begin() + i);
  ops_.insert(ops_.begin() + indexOf(before), std::move(owned));
}

} // namespace osprey::compiler::graph
