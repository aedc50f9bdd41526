// Tensor graph IR: element and tensor types, attributes, constants, values, ops and graphs.
#ifndef OSPREY_COMPILER_GRAPH_IR_H_
#define OSPREY_COMPILER_GRAPH_IR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace osprey::compiler::graph {

struct OpInfo;
enum class OpKind : uint8_t;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

enum class ElementType : uint8_t {
  F32, F16, BF16, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool,
};

// Textual name ("f32", "i64", "i1" for Bool).
llvm::StringRef elementTypeName(ElementType type);
std::optional<ElementType> parseElementType(llvm::StringRef name);
size_t elementByteSize(ElementType type);
bool isFloatType(ElementType type);
bool isIntegerType(ElementType type);

// Marks a dimension whose extent is unknown at compile time.
constexpr int64_t kDynamic = -1;

// A tensor type: element type plus either a rank and per-dimension extents
// (kDynamic for unknown) or no rank at all.
class TensorType {
public:
  TensorType() = default;
  static TensorType ranked(ElementType elementType, std::vector<int64_t> dims);
  static TensorType unranked(ElementType elementType);

  ElementType elementType() const { return elementType_; }
  bool hasRank() const { return ranked_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  llvm::ArrayRef<int64_t> dims() const { return dims_; }
  int64_t dim(int64_t i) const { return dims_[i]; }
  bool hasStaticShape() const;
  // Product of the extents; kDynamic unless the shape is static.
  int64_t numElements() const;
  TensorType withElementType(ElementType elementType) const;
  // "tensor<1x?x4xf32>", "tensor<*xf32>", "tensor<f32>".
  std::string str() const;

  bool operator==(const TensorType &other) const {
    return elementType_ == other.elementType_ && ranked_ == other.ranked_ &&
           dims_ == other.dims_;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }

private:
  ElementType elementType_ = ElementType::F32;
  bool ranked_ = false;
  std::vector<int64_t> dims_;
};

// Returns the most precise type consistent with both |a| and |b|, or nullopt
// if they disagree on element type, rank or a static extent.
std::optional<TensorType> refineType(const TensorType &a, const TensorType &b);

//===----------------------------------------------------------------------===//
// Constant data
//===----------------------------------------------------------------------===//

// Immutable dense tensor contents. Copies share the same storage, and a view
// may point into memory owned by something else (a mapped file, a protobuf
// string) kept alive by |owner|, so large weights are never copied.
class DenseData {
public:
  DenseData() = default;
  static DenseData fromBytes(std::vector<uint8_t> bytes);
  static DenseData view(std::shared_ptr<const void> owner, const uint8_t *data,
                        size_t size);
  // Builds little-endian storage for |values| converted to |type|.
  static DenseData fromDoubles(ElementType type, llvm::ArrayRef<double> values);
  static DenseData fromInt64s(ElementType type, llvm::ArrayRef<int64_t> values);

  llvm::ArrayRef<uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  bool sharesStorageWith(const DenseData &other) const {
    return owner_ && owner_ == other.owner_;
  }
  // Element |i| interpreted as |type| and converted. Unaligned storage is fine.
  double getDouble(ElementType type, size_t i) const;
  int64_t getInt64(ElementType type, size_t i) const;
  std::vector<double> toDoubles(ElementType type) const;
  std::vector<int64_t> toInt64s(ElementType type) const;

private:
  std::shared_ptr<const void> owner_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

using IntList = std::vector<int64_t>;
using FloatList = std::vector<double>;

// An op attribute: integer, float, string, integer list or float list.
class Attribute {
public:
  Attribute() : value_(int64_t{0}) {}
  Attribute(int64_t v) : value_(v) {}
  Attribute(int v) : value_(int64_t{v}) {}
  Attribute(double v) : value_(v) {}
  Attribute(std::string v) : value_(std::move(v)) {}
  Attribute(const char *v) : value_(std::string(v)) {}
  Attribute(IntList v) : value_(std::move(v)) {}
  Attribute(FloatList v) : value_(std::move(v)) {}

  bool isInt() const { return std::holds_alternative<int64_t>(value_); }
  bool isFloat() const { return std::holds_alternative<double>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isIntList() const { return std::holds_alternative<IntList>(value_); }
  bool isFloatList() const { return std::holds_alternative<FloatList>(value_); }

  int64_t getInt() const { return std::get<int64_t>(value_); }
  // Integers widen to float.
  double getFloat() const {
    return isInt() ? static_cast<double>(getInt()) : std::get<double>(value_);
  }
  const std::string &getString() const { return std::get<std::string>(value_); }
  const IntList &getIntList() const { return std::get<IntList>(value_); }
  const FloatList &getFloatList() const { return std::get<FloatList>(value_); }

  bool operator==(const Attribute &other) const {
    return value_ == other.value_;
  }

private:
  std::variant<int64_t, double, std::string, IntList, FloatList> value_;
};

//===----------------------------------------------------------------------===//
// Values, ops, graphs
//===----------------------------------------------------------------------===//

class Op;

// An SSA tensor value: a graph input or an op result. Owned by its Graph.
class Value {
public:
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  const TensorType &type() const { return type_; }
  void setType(TensorType type) { type_ = std::move(type); }
  // The op producing this value; null for graph inputs. Borrowed.
  Op *definingOp() const { return definingOp_; }
  unsigned resultIndex() const { return resultIndex_; }

private:
  friend class Graph;
  std::string name_;
  TensorType type_;
  Op *definingOp_ = nullptr;
  unsigned resultIndex_ = 0;
};

// One tensor operation. |kind| names an entry of the op registry (ONNX op
// names, opset-18 operand order); |nodeName| is the model node it came from,
// used in diagnostics. Operands may be null for absent optional inputs.
class Op {
public:
  const std::string &kind() const { return kind_; }
  // The registry entry of kind(); null for a kind the registry does not know.
  const OpInfo *info() const { return info_; }
  // Whether this op is a registered op of |kind|.
  bool is(OpKind kind) const;
  const std::string &nodeName() const { return nodeName_; }
  void setNodeName(std::string name) { nodeName_ = std::move(name); }

  unsigned numOperands() const { return operands_.size(); }
  Value *operand(unsigned i) const {
    return i < operands_.size() ? operands_[i] : nullptr;
  }
  llvm::ArrayRef<Value *> operands() const { return operands_; }
  void setOperand(unsigned i, Value *value) { operands_[i] = value; }
  void setOperands(std::vector<Value *> operands) {
    operands_ = std::move(operands);
  }
  unsigned numResults() const { return results_.size(); }
  Value *result(unsigned i = 0) const { return results_[i]; }
  llvm::ArrayRef<Value *> results() const { return results_; }

  const std::map<std::string, Attribute> &attributes() const { return attrs_; }
  bool hasAttr(llvm::StringRef name) const { return attrs_.count(name.str()); }
  const Attribute *getAttr(llvm::StringRef name) const;
  void setAttr(llvm::StringRef name, Attribute value) {
    attrs_[name.str()] = std::move(value);
  }
  void removeAttr(llvm::StringRef name) { attrs_.erase(name.str()); }
  // Typed accessors returning |defaultValue| when the attribute is absent.
  int64_t getInt(llvm::StringRef name, int64_t defaultValue) const;
  double getFloat(llvm::StringRef name, double defaultValue) const;
  std::string getString(llvm::StringRef name, llvm::StringRef defaultValue) const;
  IntList getIntList(llvm::StringRef name, IntList defaultValue = {}) const;

  // Constant payload; meaningful only for kind "Constant".
  const DenseData &value() const { return value_; }
  void setValue(DenseData value) { value_ = std::move(value); }

  // "node 'Conv_17' (Conv): " followed by |message|, as INVALID_ARGUMENT.
  absl::Status emitError(llvm::StringRef message) const;
  std::string describe() const;

private:
  friend class Graph;
  std::string kind_;
  const OpInfo *info_ = nullptr;
  std::string nodeName_;
  std::vector<Value *> operands_;
  std::vector<Value *> results_;
  std::map<std::string, Attribute> attrs_;
  DenseData value_;
};

// A function-like graph: inputs, ops in topological order, outputs. Owns every
// Value and Op created through it; pointers stay valid until the Graph dies
// (erased ops are destroyed immediately). Not thread-safe.
class Graph {
public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // Graph inputs keep the model's names (Value::name()); passes never rename
  // them.
  Value *addInput(std::string name, TensorType type);
  llvm::ArrayRef<Value *> inputs() const { return inputs_; }
  llvm::ArrayRef<Value *> outputs() const { return outputs_; }
  // Sets the outputs and their names, the model's output names in graph
  // order. Names default to the values' names. A name belongs to the output
  // position: it survives setOutput and replaceAllUsesWith, so a pass that
  // forwards an output to another value does not rename the output.
  void setOutputs(std::vector<Value *> outputs,
                  std::vector<std::string> names = {});
  void setOutput(unsigned i, Value *value) { outputs_[i] = value; }
  llvm::ArrayRef<std::string> outputNames() const { return outputNames_; }

  // Creates an op with one result per entry of |resultTypes|. The op goes
  // before |insertBefore| (or at the end when null). Result names start as
  // |resultNames| entries when given.
  Op *createOp(llvm::StringRef kind, std::vector<Value *> operands,
               std::vector<TensorType> resultTypes,
               std::map<std::string, Attribute> attrs = {},
               Op *insertBefore = nullptr,
               std::vector<std::string> resultNames = {});
  // Creates a Constant op holding |data| with result type |type|.
  Op *createConstant(TensorType type, DenseData data,
                     Op *insertBefore = nullptr, std::string name = "");

  const std::vector<std::unique_ptr<Op>> &ops() const { return ops_; }
  // Snapshot of the op list, safe to iterate while erasing or inserting.
  std::vector<Op *> opList() const;

  // Ops that use |value| as an operand (each op listed once).
  std::vector<Op *> users(const Value *value) const;
  bool hasUses(const Value *value) const;
  bool isOutput(const Value *value) const;
  // Replaces |from| with |to| in every operand and graph output.
  void replaceAllUsesWith(Value *from, Value *to);
  // Destroys |op|; its results must be unused.
  void eraseOp(Op *op);
  // Destroys every op of |ops| at once; their results must be unused but by
  // each other.
  void eraseOps(const std::unordered_set<const Op *> &ops);
  // Moves |op| directly before |before|.
  void moveBefore(Op *op, Op *before);

private:
  size_t indexOf(const Op *op) const;

  std::string name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::vector<std::string> outputNames_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<std::unique_ptr<Value>> values_;
};

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_IR_H_
