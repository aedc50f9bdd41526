// Converts an ONNX ModelProto into the graph IR.
#include "compiler/import/onnx/importer.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/quantization.h"
#include "compiler/graph/status.h"
#include "compiler/import/onnx/proto_diagnosis.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

namespace osprey::compiler::onnximport {
namespace {

using graph::Attribute;
using graph::DenseData;
using graph::ElementType;
using graph::Graph;
using graph::Op;
using graph::OpKind;
using graph::TensorType;
using graph::Value;

constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 21;

// ONNX op types with no graph op of their own, which the importer rewrites
// into registry ops: Dropout (inference: its input), Sum and Mean (chains of
// Add), DepthToSpace and SpaceToDepth (Reshape, Transpose, Reshape), Size
// (a constant: the element count of a static shape), Trilu (Where with a
// constant mask), CastLike (Cast to the second operand's element type),
// ReduceLogSum and ReduceLogSumExp (Log of ReduceSum, shifted by the
// maximum), NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (GatherElements of the class scores, weights, reductions), OneHot (Where
// of indices equal to a constant 0..depth-1), the elementwise ops and
// reductions of importComposite, Range and EyeLike (constants), Tile
// (Reshape, Expand, Reshape), InstanceNormalization,
// MeanVarianceNormalization and LRN (reductions, slices and elementwise
// ops).
const char *const kRewrittenOps[] = {
    "Dropout",      "Sum",          "Mean",     "DepthToSpace",
    "SpaceToDepth", "Size",         "Trilu",    "CastLike",
    "ReduceLogSum", "ReduceLogSumExp", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "OneHot", "IsNaN", "IsInf", "Celu", "Shrink",
    "ThresholdedRelu", "Mish", "GlobalMaxPool", "Hardmax", "Range", "Tile",
    "EyeLike", "InstanceNormalization", "MeanVarianceNormalization", "LRN"};

// Reductions whose axes moved from an attribute to an input in opset 18
// (ReduceSum's moved in opset 13).
bool axesBecameInputAt18(OpKind kind) {
  switch (kind) {
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceSumSquare:
    return true;
  default:
    return false;
  }
}

// ONNX op types accepted by the importer: the graph op kinds, which carry
// the ONNX names (opset-18 operand order), and kRewrittenOps.
bool isSupported(const std::string &opType) {
  return graph::lookupOp(opType) != nullptr ||
         llvm::is_contained(kRewrittenOps, llvm::StringRef(opType));
}

std::optional<ElementType> mapElementType(int32_t onnxType) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT: return ElementType::F32;
  case TP::FLOAT16: return ElementType::F16;
  case TP::BFLOAT16: return ElementType::BF16;
  case TP::DOUBLE: return ElementType::F64;
  case TP::INT8: return ElementType::I8;
  case TP::INT16: return ElementType::I16;
  case TP::INT32: return ElementType::I32;
  case TP::INT64: return ElementType::I64;
  case TP::UINT8: return ElementType::U8;
  case TP::UINT16: return ElementType::U16;
  case TP::UINT32: return ElementType::U32;
  case TP::UINT64: return ElementType::U64;
  case TP::BOOL: return ElementType::Bool;
  default: return std::nullopt;
  }
}

class Importer {
public:
  Importer(std::shared_ptr<onnx::ModelProto> model, std::string baseDir,
           const ImportOptions &options)
      : model_(std::move(model)), baseDir_(std::move(baseDir)),
        options_(options) {}

  absl::StatusOr<std::unique_ptr<Graph>> run() {
    COMPILER_RETURN_IF_ERROR(checkOpset());
    const onnx::GraphProto &g = model_->graph();
    COMPILER_RETURN_IF_ERROR(checkSupported(g));
    graph_ = std::make_unique<Graph>(g.name().empty() ? "main" : sanitize(g.name()));

    for (const auto &init : g.initializer()) {
      if (values_.count(init.name())) {
        return absl::InvalidArgumentError("initializer '" + init.name() +
                                          "' is defined twice");
      }
      COMPILER_ASSIGN_OR_RETURN(DenseData data, readTensor(init));
      COMPILER_ASSIGN_OR_RETURN(TensorType type, tensorType(init));
      Op *c = graph_->createConstant(type, std::move(data), nullptr,
                                     init.name());
      c->setNodeName(init.name());
      values_[init.name()] = c->result();
    }
    std::set<std::string> inputNames;
    if (g.sparse_initializer_size() > 0) {
      return absl::UnimplementedError(
          "sparse initializer '" + g.sparse_initializer(0).values().name() +
          "' is not implemented");
    }
    for (const auto &input : g.input()) {
      if (!inputNames.insert(input.name()).second) {
        return absl::InvalidArgumentError("graph input '" + input.name() +
                                          "' is listed twice");
      }
      if (values_.count(input.name())) {
        continue; // initializer listed as an input (IR version < 4)
      }
      COMPILER_ASSIGN_OR_RETURN(TensorType type,
                                valueInfoType(input, "graph input"));
      values_[input.name()] = graph_->addInput(input.name(), type);
    }
    // Our shape rules validate every node before ONNX shape inference sees
    // the model: libonnx's inference functions assume well-formed operands
    // and may crash on, for example, a Conv input of the wrong rank.
    for (int i = 0; i < g.node_size(); ++i) {
      COMPILER_RETURN_IF_ERROR(importNode(g.node(i), i));
    }
    std::vector<Value *> outputs;
    std::vector<std::string> outputNames;
    for (const auto &output : g.output()) {
      auto it = values_.find(output.name());
      if (it == values_.end()) {
        return absl::InvalidArgumentError("graph output '" + output.name() +
                                          "' is not produced by any node");
      }
      outputs.push_back(it->second);
      outputNames.push_back(output.name());
    }
    graph_->setOutputs(std::move(outputs), std::move(outputNames));
    if (options_.onnxShapeInference) {
      COMPILER_RETURN_IF_ERROR(refineWithOnnxShapes());
    }
    for (Op *op : graph_->opList()) {
      graph::resolveAutoPad(*op);
    }
    return std::move(graph_);
  }

private:
  static std::string sanitize(const std::string &name) {
    std::string out;
    for (char c : name) {
      out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    }
    return out;
  }

  static std::string nodeName(const onnx::NodeProto &node, int index) {
    return node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                               : node.name();
  }

  absl::Status nodeError(const onnx::NodeProto &node, int index,
                         const std::string &message) const {
    return absl::InvalidArgumentError("node '" + nodeName(node, index) +
                                      "' (" + node.op_type() + "): " + message);
  }

  absl::Status checkOpset() {
    bool found = false;
    for (const auto &opset : model_->opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") {
        opset_ = opset.version();
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          "model does not import the default ONNX opset");
    }
    if (opset_ < kMinOpset || opset_ > kMaxOpset) {
      return absl::InvalidArgumentError(
          "model uses ONNX opset " + std::to_string(opset_) +
          "; supported opsets are 1 to " + std::to_string(kMaxOpset) +
          " (below " + std::to_string(kMinOpset) +
          " by conversion to opset " + std::to_string(kMinOpset) + ")");
    }
    return absl::OkStatus();
  }

  // Reports every unsupported node in one error.
  absl::Status checkSupported(const onnx::GraphProto &g) {
    std::string list;
    int count = 0;
    for (int i = 0; i < g.node_size(); ++i) {
      const auto &node = g.node(i);
      bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
      if (!defaultDomain || !isSupported(node.op_type())) {
        list += std::string(count++ ? ", " : "") + "node '" +
                nodeName(node, i) + "' (" +
                (defaultDomain ? "" : node.domain() + "::") + node.op_type() +
                ")";
      }
    }
    if (count) {
      return absl::InvalidArgumentError(
          std::to_string(count) + " unsupported operator" +
          (count > 1 ? "s" : "") + ": " + list);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TensorType> tensorType(const onnx::TensorProto &t) {
    auto et = mapElementType(t.data_type());
    if (!et) {
      return absl::InvalidArgumentError("tensor '" + t.name() +
                                        "' has unsupported data type " +
                                        std::to_string(t.data_type()));
    }
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    for (int64_t d : dims) {
      if (d < 0) {
        return absl::InvalidArgumentError("tensor '" + t.name() +
                                          "' has a negative dimension");
      }
    }
    COMPILER_RETURN_IF_ERROR(checkByteSize(dims, *et, "tensor", t.name()));
    return TensorType::ranked(*et, dims);
  }

  // Rejects shapes whose byte size does not fit in 63 bits: their element
  // count would wrap around and match a short (or empty) payload.
  static absl::Status checkByteSize(llvm::ArrayRef<int64_t> dims,
                                    ElementType et, const std::string &what,
                                    const std::string &name) {
    int64_t bytes = static_cast<int64_t>(graph::elementByteSize(et));
    for (int64_t d : dims) {
      if (d > 0 && __builtin_mul_overflow(bytes, d, &bytes)) {
        return absl::InvalidArgumentError(
            what + " '" + name + "' has " +
            TensorType::ranked(et, dims.vec()).str() +
            ", more bytes than can be addressed");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TensorType> valueInfoType(const onnx::ValueInfoProto &vi,
                                           const std::string &what) {
    if (!vi.type().has_tensor_type()) {
      return absl::InvalidArgumentError(what + " '" + vi.name() +
                                        "' is not a tensor");
    }
    const auto &tt = vi.type().tensor_type();
    auto et = mapElementType(tt.elem_type());
    if (!et) {
      return absl::InvalidArgumentError(what + " '" + vi.name() +
                                        "' has unsupported element type " +
                                        std::to_string(tt.elem_type()));
    }
    if (!tt.has_shape()) {
      return TensorType::unranked(*et);
    }
    std::vector<int64_t> dims;
    for (const auto &d : tt.shape().dim()) {
      // An unknown size is a dimension without dim_value (or with a symbolic
      // dim_param); a negative dim_value is not a size at all.
      if (d.has_dim_value() && d.dim_value() < 0) {
        return absl::InvalidArgumentError(
            what + " '" + vi.name() + "' has dimension " +
            std::to_string(dims.size()) + " of size " +
            std::to_string(d.dim_value()) +
            ", which is not valid (sizes are >= 0; an unknown size has no "
            "dim_value or a symbolic dim_param)");
      }
      dims.push_back(d.has_dim_value() ? d.dim_value() : graph::kDynamic);
    }
    COMPILER_RETURN_IF_ERROR(checkByteSize(dims, *et, what, vi.name()));
    return TensorType::ranked(*et, dims);
  }

  // Tensor payload: raw_data and external data are views (no copy); typed
  // repeated fields are converted.
  absl::StatusOr<DenseData> readTensor(const onnx::TensorProto &t) {
    COMPILER_ASSIGN_OR_RETURN(TensorType type, tensorType(t));
    ElementType et = type.elementType();
    size_t count = static_cast<size_t>(type.numElements());
    size_t bytes = count * graph::elementByteSize(et);
    auto sizeError = [&](size_t found) {
      return absl::InvalidArgumentError(
          "tensor '" + t.name() + "' holds " + std::to_string(found) +
          " bytes but its type " + type.str() + " needs " +
          std::to_string(bytes));
    };
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      return readExternal(t, bytes);
    }
    if (t.has_raw_data()) {
      if (t.raw_data().size() != bytes) {
        return sizeError(t.raw_data().size());
      }
      return DenseData::view(model_,
                             reinterpret_cast<const uint8_t *>(
                                 t.raw_data().data()),
                             bytes);
    }
    auto checkCount = [&](size_t found) -> absl::Status {
      if (found != count) {
        return absl::InvalidArgumentError(
            "tensor '" + t.name() + "' lists " + std::to_string(found) +
            " values but its type " + type.str() + " needs " +
            std::to_string(count));
      }
      return absl::OkStatus();
    };
    switch (et) {
    case ElementType::F32: {
      COMPILER_RETURN_IF_ERROR(checkCount(t.float_data_size()));
      std::vector<double> v(t.float_data().begin(), t.float_data().end());
      return DenseData::fromDoubles(et, v);
    }
    case ElementType::F64: {
      COMPILER_RETURN_IF_ERROR(checkCount(t.double_data_size()));
      std::vector<double> v(t.double_data().begin(), t.double_data().end());
      return DenseData::fromDoubles(et, v);
    }
    case ElementType::I64: {
      COMPILER_RETURN_IF_ERROR(checkCount(t.int64_data_size()));
      std::vector<int64_t> v(t.int64_data().begin(), t.int64_data().end());
      return DenseData::fromInt64s(et, v);
    }
    case ElementType::U32:
    case ElementType::U64: {
      COMPILER_RETURN_IF_ERROR(checkCount(t.uint64_data_size()));
      std::vector<int64_t> v(t.uint64_data().begin(), t.uint64_data().end());
      return DenseData::fromInt64s(et, v);
    }
    case ElementType::F16:
    case ElementType::BF16: {
      // int32_data holds the raw 16-bit patterns.
      COMPILER_RETURN_IF_ERROR(checkCount(t.int32_data_size()));
      std::vector<uint8_t> raw(bytes);
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits = static_cast<uint16_t>(t.int32_data(i));
        std::memcpy(raw.data() + 2 * i, &bits, 2);
      }
      return DenseData::fromBytes(std::move(raw));
    }
    default: {
      COMPILER_RETURN_IF_ERROR(checkCount(t.int32_data_size()));
      std::vector<int64_t> v(t.int32_data().begin(), t.int32_data().end());
      return DenseData::fromInt64s(et, v);
    }
    }
  }

  absl::StatusOr<DenseData> readExternal(const onnx::TensorProto &t,
                                         size_t bytes) {
    std::string location;
    uint64_t offset = 0, length = bytes;
    bool hasLength = false;
    for (const auto &entry : t.external_data()) {
      llvm::StringRef value = entry.value();
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        uint64_t parsed;
        if (value.getAsInteger(10, parsed)) {
          return absl::InvalidArgumentError("tensor '" + t.name() +
                                            "' has a malformed external " +
                                            entry.key());
        }
        (entry.key() == "offset" ? offset : length) = parsed;
        hasLength |= entry.key() == "length";
      }
    }
    if (location.empty()) {
      return absl::InvalidArgumentError("tensor '" + t.name() +
                                        "' has external data without a "
                                        "location");
    }
    // External files must stay inside the model's folder.
    if (llvm::sys::path::is_absolute(location) ||
        llvm::StringRef(location).contains("..")) {
      return absl::InvalidArgumentError(
          "tensor '" + t.name() + "' refers to external data '" + location +
          "' outside the model folder");
    }
    if (hasLength && length != bytes) {
      return absl::InvalidArgumentError(
          "tensor '" + t.name() + "' declares " + std::to_string(length) +
          " external bytes but needs " + std::to_string(bytes));
    }
    llvm::SmallString<256> path(baseDir_);
    llvm::sys::path::append(path, location);
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file) {
      return absl::InvalidArgumentError("tensor '" + t.name() +
                                        "': cannot read external data '" +
                                        path.str().str() +
                                        "': " + file.getError().message());
    }
    if (offset > (*file)->getBufferSize() ||
        bytes > (*file)->getBufferSize() - offset) {
      return absl::InvalidArgumentError(
          "tensor '" + t.name() + "': external data range [" +
          std::to_string(offset) + ", " + std::to_string(offset + bytes) +
          ") exceeds '" + location + "' of " +
          std::to_string((*file)->getBufferSize()) + " bytes");
    }
    std::shared_ptr<llvm::MemoryBuffer> owner(std::move(*file));
    const uint8_t *data =
        reinterpret_cast<const uint8_t *>(owner->getBufferStart()) + offset;
    return DenseData::view(std::move(owner), data, bytes);
  }

  // The double closest to the shortest decimal that round-trips |f|, so an
  // epsilon of 1e-5f reads 1e-05 in the IR rather than 9.99999974e-06.
  static double widen(float f) {
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof(buf), f);
    double d = f;
    std::from_chars(buf, res.ptr, d);
    return d;
  }

  // Attributes that opsets 18 to 21 added to ops the importer supports;
  // libonnx 1.12 knows schemas up to opset 17 only. Their values are
  // checked where the op is imported or lowered (a value the compiler does
  // not implement is UNIMPLEMENTED there, never ignored). Cast's
  // 'saturate' only concerns float8 types, which are refused.
  bool isNewerAttribute(llvm::StringRef opType, llvm::StringRef attr) const {
    struct Added {
      const char *op, *attr;
      int64_t since;
    };
    static constexpr Added kAdded[] = {
        {"Split", "num_outputs", 18},
        {"Resize", "antialias", 18},
        {"Resize", "axes", 18},
        {"Resize", "keep_aspect_ratio_policy", 18},
        {"ReduceMean", "noop_with_empty_axes", 18},
        {"ReduceMax", "noop_with_empty_axes", 18},
        {"ReduceMin", "noop_with_empty_axes", 18},
        {"ReduceProd", "noop_with_empty_axes", 18},
        {"ReduceL1", "noop_with_empty_axes", 18},
        {"ReduceL2", "noop_with_empty_axes", 18},
        {"ReduceSumSquare", "noop_with_empty_axes", 18},
        {"AveragePool", "dilations", 19},
        {"Cast", "saturate", 19},
        {"QuantizeLinear", "saturate", 19},
        {"QuantizeLinear", "block_size", 21},
        {"QuantizeLinear", "output_dtype", 21},
        {"DequantizeLinear", "block_size", 21},
    };
    for (const Added &a : kAdded) {
      if (opType == a.op && attr == a.attr && opset_ >= a.since) {
        return true;
      }
    }
    return false;
  }

  // Attributes whose kind differs from the ONNX schema of the model's opset
  // (group="2", strides given as floats) would otherwise read as absent and
  // silently take their defaults, and attributes the schema does not define
  // (ReduceMean axes in opset 18, where they are an input) would be ignored.
  absl::Status checkAttributeKinds(const onnx::NodeProto &node, int index,
                                   std::optional<OpKind> kind) {
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(opset_), "");
    if (!schema) {
      return absl::OkStatus();
    }
    for (const auto &a : node.attribute()) {
      auto it = schema->attributes().find(a.name());
      // Opset 18 moved the reductions' axes to an input; libonnx's
      // newest schema for them is still the opset-13 one.
      bool removed = opset_ >= 18 && a.name() == "axes" && kind &&
                     axesBecameInputAt18(*kind);
      if (it == schema->attributes().end() || removed) {
        if (isNewerAttribute(node.op_type(), a.name())) {
          continue;
        }
        return nodeError(node, index,
                         "attribute '" + a.name() + "' is not defined for " +
                             node.op_type() + " in opset " +
                             std::to_string(opset_));
      }
      if (it->second.type == a.type()) {
        continue;
      }
      return nodeError(
          node, index,
          "attribute '" + a.name() + "' must be " +
              onnx::AttributeProto::AttributeType_Name(it->second.type) +
              ", found " + onnx::AttributeProto::AttributeType_Name(a.type()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Attribute> convertAttr(const onnx::AttributeProto &a) {
    using AP = onnx::AttributeProto;
    switch (a.type()) {
    case AP::INT: return Attribute(static_cast<int64_t>(a.i()));
    case AP::FLOAT: return Attribute(widen(a.f()));
    case AP::STRING: return Attribute(a.s());
    case AP::INTS:
      return Attribute(graph::IntList(a.ints().begin(), a.ints().end()));
    case AP::FLOATS: {
      graph::FloatList values;
      for (float f : a.floats()) {
        values.push_back(widen(f));
      }
      return Attribute(values);
    }
    default:
      return absl::InvalidArgumentError("attribute '" + a.name() +
                                        "' has an unsupported kind");
    }
  }

  Value *constInts(const std::vector<int64_t> &values, const std::string &name) {
    Op *c = graph_->createConstant(
        TensorType::ranked(ElementType::I64, {int64_t(values.size())}),
        DenseData::fromInt64s(ElementType::I64, values));
    c->setNodeName(name);
    return c->result();
  }

  // A scalar constant of element type |et|.
  Value *constScalar(ElementType et, double value, const std::string &name) {
    Op *c = graph_->createConstant(TensorType::ranked(et, {}),
                                   DenseData::fromDoubles(et, {value}));
    c->setNodeName(name);
    return c->result();
  }

  Value *constFloats(const std::vector<double> &values,
                     const std::string &name) {
    Op *c = graph_->createConstant(
        TensorType::ranked(ElementType::F32, {int64_t(values.size())}),
        DenseData::fromDoubles(ElementType::F32, values));
    c->setNodeName(name);
    return c->result();
  }

  absl::Status unimplemented(const onnx::NodeProto &node, int index,
                             const std::string &message) const {
    return absl::UnimplementedError("node '" + nodeName(node, index) + "' (" +
                                    node.op_type() + "): " + message);
  }

  // Checks the opset-18 |axes| of |node| against |rank| (range, repeats).
  absl::Status checkAxes(const onnx::NodeProto &node, int index,
                         std::vector<int64_t> &axes, int64_t rank) {
    std::vector<bool> seen(rank, false);
    for (int64_t &axis : axes) {
      if (axis < -rank || axis >= rank) {
        return nodeError(node, index,
                         "axis " + std::to_string(axis) +
                             " is out of range for rank " +
                             std::to_string(rank));
      }
      axis = axis < 0 ? axis + rank : axis;
      if (seen[axis]) {
        return nodeError(node, index,
                         "axis " + std::to_string(axis) + " is listed twice");
      }
      seen[axis] = true;
    }
    return absl::OkStatus();
  }

  // Creates |kind| with one result named |resultName| (empty: unnamed) and
  // types it with the shape rules.
  absl::StatusOr<Op *> addTypedOp(llvm::StringRef kind,
                                  std::vector<Value *> operands,
                                  std::map<std::string, Attribute> attrs,
                                  const std::string &nodeName,
                                  const std::string &resultName) {
    Op *op = graph_->createOp(kind, std::move(operands),
                              {TensorType::unranked(ElementType::F32)},
                              std::move(attrs), nullptr, {resultName});
    op->setNodeName(nodeName);
    std::vector<TensorType> types;
    COMPILER_RETURN_IF_ERROR(graph::inferResultTypes(*op, types));
    op->result()->setType(types[0]);
    return op;
  }

  // One registry op of a node's rewrite, named after the node (|name|);
  // its result is named |resultName| (the node's output for the last op).
  absl::StatusOr<Value *> rewriteOp(const std::string &name,
                                    llvm::StringRef kind,
                                    std::vector<Value *> operands,
                                    std::map<std::string, Attribute> attrs = {},
                                    const std::string &resultName = "") {
    COMPILER_ASSIGN_OR_RETURN(
        Op * o, addTypedOp(kind, std::move(operands), std::move(attrs), name,
                           resultName));
    return o->result();
  }

  // The int64 constant 0..extent-1 along |axis| of a rank-|rank| shape
  // (extent 1 on the other axes), to compare indices with.
  Value *constPositions(int64_t extent, int64_t rank, int64_t axis,
                        const std::string &name) {
    std::vector<int64_t> positions(extent), shape(rank, 1);
    for (int64_t i = 0; i < extent; ++i) {
      positions[i] = i;
    }
    shape[axis] = extent;
    Op *c = graph_->createConstant(
        TensorType::ranked(ElementType::I64, shape),
        DenseData::fromInt64s(ElementType::I64, positions));
    c->setNodeName(name);
    return c->result();
  }

  // Numeric attribute |attr| of |node| (an int reads as a number), or
  // |fallback| when absent; another kind is an error naming the node.
  absl::StatusOr<double> numberAttr(const onnx::NodeProto &node, int index,
                                    const std::map<std::string, Attribute> &attrs,
                                    const char *attr, double fallback) {
    auto it = attrs.find(attr);
    if (it == attrs.end()) {
      return fallback;
    }
    if (!it->second.isFloat() && !it->second.isInt()) {
      return nodeError(node, index,
                       std::string("attribute '") + attr + "' must be a number");
    }
    return it->second.getFloat();
  }

  // QuantizeLinear/DequantizeLinear attributes of opsets 19 to 21: saturate
  // only concerns float8 results (integers always saturate), blocked
  // quantization is not implemented, and output_dtype becomes a type name.
  absl::Status canonicalizeQuantize(const onnx::NodeProto &node, int index,
                                    std::vector<Value *> &operands,
                                    std::map<std::string, Attribute> &attrs) {
    attrs.erase("saturate");
    if (auto it = attrs.find("block_size"); it != attrs.end()) {
      if (!it->second.isInt() || it->second.getInt() != 0) {
        return unimplemented(node, index,
                             "blocked quantization (block_size) is not "
                             "supported");
      }
      attrs.erase(it);
    }
    if (auto it = attrs.find("output_dtype"); it != attrs.end()) {
      if (!it->second.isInt()) {
        return nodeError(node, index, "output_dtype must be an integer");
      }
      if (it->second.getInt() == 0) {
        attrs.erase(it);
        return absl::OkStatus();
      }
      auto et = mapElementType(static_cast<int32_t>(it->second.getInt()));
      if (!et || !graph::isQuantizedType(*et)) {
        return unimplemented(node, index,
                             "output_dtype " +
                                 std::to_string(it->second.getInt()) +
                                 " is not supported (int8, uint8)");
      }
      it->second = Attribute(graph::elementTypeName(*et).str());
      // Without a zero point the type becomes a zero point of that type, in
      // the graph and in the model ONNX shape inference reads (libonnx
      // knows QuantizeLinear up to opset 13, where the result is uint8
      // unless a zero point says otherwise).
      onnx::NodeProto &proto = *model_->mutable_graph()->mutable_node(index);
      if (operands.size() < 3) {
        std::string zpName = nodeName(node, index) + "_output_dtype_zero";
        Op *zero = graph_->createConstant(TensorType::ranked(*et, {}),
                                          DenseData::fromInt64s(*et, {0}),
                                          nullptr, zpName);
        zero->setNodeName(nodeName(node, index));
        operands.resize(2);
        operands.push_back(zero->result());
        onnx::TensorProto *t = model_->mutable_graph()->add_initializer();
        t->set_name(zpName);
        t->set_data_type(static_cast<int32_t>(it->second.getString() == "i8"
                                                  ? onnx::TensorProto::INT8
                                                  : onnx::TensorProto::UINT8));
        t->add_int32_data(0);
        while (proto.input_size() < 2) {
          proto.add_input("");
        }
        if (proto.input_size() == 2) {
          proto.add_input(zpName);
        } else {
          proto.set_input(2, zpName);
        }
      }
      for (int i = 0; i < proto.attribute_size(); ++i) {
        if (proto.attribute(i).name() == "output_dtype") {
          proto.mutable_attribute()->DeleteSubrange(i, 1);
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  // Records |result| as the value of the node's first output.
  absl::Status defineOutput(const onnx::NodeProto &node, int index,
                            Value *result) {
    if (values_.count(node.output(0))) {
      return nodeError(node, index,
                       "output '" + node.output(0) + "' is already defined");
    }
    values_[node.output(0)] = result;
    return absl::OkStatus();
  }

  // Dropout in inference is the identity. The mask output and training mode
  // (a training_mode operand that is not a constant false) are refused.
  absl::Status importDropout(const onnx::NodeProto &node, int index,
                             const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.empty() || !operands[0]) {
      return nodeError(node, index, "expected a data operand");
    }
    // Training mode drops nothing when the ratio is a constant 0, so it is
    // deterministic too.
    if (operands.size() > 2 && operands[2]) {
      auto training = graph::getConstantFloats(operands[2]);
      auto ratio = operands.size() > 1 && operands[1]
                       ? graph::getConstantFloats(operands[1])
                       : std::nullopt;
      bool inference = training && training->size() == 1 &&
                       (*training)[0] == 0;
      bool keepsAll = ratio && ratio->size() == 1 && (*ratio)[0] == 0;
      if (!inference && !keepsAll) {
        return unimplemented(node, index,
                             "training-mode Dropout (training_mode must be "
                             "a constant false, or the ratio a constant 0)");
      }
    }
    COMPILER_ASSIGN_OR_RETURN(
        Op * id, addTypedOp("Identity", {operands[0]}, {}, name,
                            node.output(0)));
    if (node.output_size() > 1 && !node.output(1).empty()) {
      // Nothing is dropped: the mask is all true.
      const TensorType &t = operands[0]->type();
      if (!t.hasStaticShape()) {
        return unimplemented(node, index,
                             "the mask output needs a static input shape");
      }
      const std::string &maskName = node.output(1);
      if (values_.count(maskName)) {
        return nodeError(node, index,
                         "output '" + maskName + "' is already defined");
      }
      Op *mask = graph_->createConstant(
          TensorType::ranked(ElementType::Bool, t.dims().vec()),
          DenseData::fromInt64s(ElementType::Bool,
                                std::vector<int64_t>(t.numElements(), 1)));
      mask->setNodeName(name);
      values_[maskName] = mask->result();
    }
    return defineOutput(node, index, id->result());
  }

  // Sum and Mean of any number of operands (multidirectional broadcast) as
  // a chain of Adds from the left, as the ONNX reference sums; Mean then
  // divides by the operand count.
  absl::Status importVariadicSum(const onnx::NodeProto &node, int index,
                                 const std::vector<Value *> &operands) {
    std::string name = nodeName(node, index);
    if (operands.empty() ||
        std::count(operands.begin(), operands.end(), nullptr)) {
      return nodeError(node, index, "expected one or more operands");
    }
    Value *acc = operands[0];
    bool last = operands.size() == 1 && node.op_type() == "Sum";
    if (operands.size() == 1) {
      COMPILER_ASSIGN_OR_RETURN(
          Op * id, addTypedOp("Identity", {acc}, {}, name,
                              last ? node.output(0) : ""));
      acc = id->result();
    }
    for (size_t i = 1; i < operands.size(); ++i) {
      bool final = i + 1 == operands.size() && node.op_type() == "Sum";
      COMPILER_ASSIGN_OR_RETURN(
          Op * add, addTypedOp("Add", {acc, operands[i]}, {}, name,
                               final ? node.output(0) : ""));
      acc = add->result();
    }
    if (node.op_type() == "Mean") {
      ElementType et = acc->type().elementType();
      if (!graph::isFloatType(et)) {
        return nodeError(node, index, "Mean needs floating-point operands");
      }
      Op *count = graph_->createConstant(
          TensorType::ranked(et, {}),
          DenseData::fromDoubles(et, {double(operands.size())}));
      count->setNodeName(name);
      COMPILER_ASSIGN_OR_RETURN(
          Op * div, addTypedOp("Div", {acc, count->result()}, {}, name,
                               node.output(0)));
      acc = div->result();
    }
    return defineOutput(node, index, acc);
  }

  // The tensor of attribute |a|: its type and data, errors naming the node.
  absl::Status readTensorAttr(const onnx::NodeProto &node, int index,
                              const onnx::AttributeProto &a, TensorType &type,
                              DenseData &data) {
    auto t = tensorType(a.t());
    if (!t.ok()) {
      return nodeError(node, index, std::string(t.status().message()));
    }
    auto d = readTensor(a.t());
    if (!d.ok()) {
      return nodeError(node, index, std::string(d.status().message()));
    }
    type = *t;
    data = *d;
    return absl::OkStatus();
  }

  // ConstantOfShape's one-element tensor 'value' as the graph op's
  // attributes 'value' (a number) and 'dtype' (its element type's name).
  absl::Status fillValue(const onnx::NodeProto &node, int index,
                         const onnx::AttributeProto &a,
                         std::map<std::string, Attribute> &attrs) {
    TensorType type;
    DenseData data;
    COMPILER_RETURN_IF_ERROR(readTensorAttr(node, index, a, type, data));
    ElementType et = type.elementType();
    if (type.numElements() != 1 || data.size() != graph::elementByteSize(et)) {
      return nodeError(node, index,
                       "attribute 'value' must hold exactly one element");
    }
    double v = data.getDouble(et, 0);
    // The fill travels as a double: integers must be exact in one.
    if (!graph::isFloatType(et) && std::fabs(v) > 9007199254740992.0) {
      return unimplemented(node, index,
                           "an integer 'value' beyond 2^53 is not supported");
    }
    attrs["value"] = Attribute(v);
    attrs["dtype"] = Attribute(graph::elementTypeName(et).str());
    return absl::OkStatus();
  }

  // Size: the element count of its operand as an int64 scalar constant.
  absl::Status importSize(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands) {
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    const TensorType &type = operands[0]->type();
    if (!type.hasStaticShape()) {
      return unimplemented(node, index,
                           "needs an operand of static shape (pin dynamic "
                           "dimensions with --input-shape)");
    }
    Op *c = graph_->createConstant(
        TensorType::ranked(ElementType::I64, {}),
        DenseData::fromInt64s(ElementType::I64, {type.numElements()}),
        nullptr, node.output(0));
    c->setNodeName(nodeName(node, index));
    return defineOutput(node, index, c->result());
  }

  // Trilu keeps the elements of each trailing N x M matrix with column -
  // row >= k (upper, the default) or <= k (lower) and zeroes the rest: a
  // Where with a constant [N, M] mask. Needs a static shape and a constant k.
  absl::Status importTrilu(const onnx::NodeProto &node, int index,
                           const std::vector<Value *> &operands,
                           const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.empty() || !operands[0] || operands.size() > 2) {
      return nodeError(node, index, "expected 1 or 2 operands");
    }
    int64_t k = 0;
    if (operands.size() == 2 && operands[1]) {
      auto ks = graph::getConstantInts(operands[1]);
      if (!ks || ks->size() != 1) {
        return unimplemented(node, index,
                             "k must be a constant integer scalar");
      }
      k = (*ks)[0];
    }
    bool upper = true;
    if (auto it = attrs.find("upper"); it != attrs.end()) {
      if (!it->second.isInt()) {
        return nodeError(node, index, "attribute 'upper' must be an integer");
      }
      upper = it->second.getInt() != 0;
    }
    Value *x = operands[0];
    const TensorType &type = x->type();
    if (!type.hasStaticShape() || type.rank() < 2) {
      return unimplemented(node, index,
                           "needs an input of rank 2 or more and static "
                           "shape (pin dynamic dimensions with "
                           "--input-shape)");
    }
    const int64_t rows = type.dim(type.rank() - 2),
                  cols = type.dim(type.rank() - 1);
    // Compared without overflow: |j - i| < 2^62 for any tensor that fits
    // in memory, and k is clamped to that range.
    k = std::clamp<int64_t>(k, -(int64_t{1} << 62), int64_t{1} << 62);
    std::vector<int64_t> keep(rows * cols);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        keep[i * cols + j] = upper ? j - i >= k : j - i <= k;
      }
    }
    Op *mask = graph_->createConstant(
        TensorType::ranked(ElementType::Bool, {rows, cols}),
        DenseData::fromInt64s(ElementType::Bool, keep));
    mask->setNodeName(name);
    COMPILER_ASSIGN_OR_RETURN(
        Op * where, addTypedOp("Where",
                               {mask->result(), x,
                                constScalar(type.elementType(), 0.0, name)},
                               {},
                               name, node.output(0)));
    return defineOutput(node, index, where->result());
  }

  // ReduceLogSum: log(sum(x)). ReduceLogSumExp: log(sum(exp(x - m))) + m
  // with m the maximum over the same axes, clipped to the finite range, so
  // large values do not overflow (logsumexp([1000, 1000]) is 1000.69, not
  // inf) and all -inf gives -inf, +inf gives +inf, NaN gives NaN.
  absl::Status importReduceLog(const onnx::NodeProto &node, int index,
                               const std::vector<Value *> &operands,
                               const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.empty() || !operands[0] || operands.size() > 2) {
      return nodeError(node, index, "expected 1 or 2 operands");
    }
    Value *x = operands[0];
    const TensorType &type = x->type();
    if (!type.hasRank() || !graph::isFloatType(type.elementType())) {
      return unimplemented(node, index,
                           "needs a floating-point input of known rank");
    }
    std::vector<int64_t> axes;
    if (auto it = attrs.find("axes"); it != attrs.end()) {
      if (!it->second.isIntList()) {
        return nodeError(node, index, "attribute 'axes' must be integers");
      }
      axes = it->second.getIntList();
    } else if (operands.size() == 2 && operands[1]) {
      auto values = graph::getConstantInts(operands[1]);
      if (!values) {
        return unimplemented(node, index, "axes must be a constant");
      }
      axes = *values;
    }
    int64_t keepdims = 1;
    if (auto it = attrs.find("keepdims"); it != attrs.end() && it->second.isInt()) {
      keepdims = it->second.getInt() != 0;
    }
    if (axes.empty()) {
      if (auto it = attrs.find("noop_with_empty_axes");
          it != attrs.end() && it->second.isInt() && it->second.getInt() != 0) {
        return unimplemented(node, index,
                             "noop_with_empty_axes with no axes is not "
                             "supported");
      }
      for (int64_t a = 0; a < type.rank(); ++a) {
        axes.push_back(a);
      }
    }
    COMPILER_RETURN_IF_ERROR(checkAxes(node, index, axes, type.rank()));
    auto reduce = [&](const char *kind, Value *v, int64_t keep)
        -> absl::StatusOr<Value *> {
      COMPILER_ASSIGN_OR_RETURN(
          Op * r, addTypedOp(kind, {v, constInts(axes, name)},
                             {{"keepdims", Attribute(keep)}}, name, ""));
      return r->result();
    };
    const std::string &out = node.output(0);
    if (node.op_type() == "ReduceLogSum") {
      COMPILER_ASSIGN_OR_RETURN(Value * sum, reduce("ReduceSum", x, keepdims));
      COMPILER_ASSIGN_OR_RETURN(Op * log, addTypedOp("Log", {sum}, {}, name, out));
      return defineOutput(node, index, log->result());
    }
    ElementType et = type.elementType();
    double big = et == ElementType::F64 ? std::numeric_limits<double>::max()
                                        : std::numeric_limits<float>::max();
    COMPILER_ASSIGN_OR_RETURN(Value * max, reduce("ReduceMax", x, 1));
    COMPILER_ASSIGN_OR_RETURN(
        Op * shift, addTypedOp("Clip",
                               {max, constScalar(et, -big, name),
                                constScalar(et, big, name)},
                               {},
                               name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * centered, addTypedOp("Sub", {x, shift->result()}, {}, name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * exp, addTypedOp("Exp", {centered->result()}, {}, name, ""));
    COMPILER_ASSIGN_OR_RETURN(Value * sum,
                              reduce("ReduceSum", exp->result(), keepdims));
    COMPILER_ASSIGN_OR_RETURN(Op * log, addTypedOp("Log", {sum}, {}, name, ""));
    Value *offset = shift->result();
    if (!keepdims) {
      COMPILER_ASSIGN_OR_RETURN(
          Op * squeezed, addTypedOp("Squeeze", {offset, constInts(axes, name)},
                                    {}, name, ""));
      offset = squeezed->result();
    }
    COMPILER_ASSIGN_OR_RETURN(
        Op * add, addTypedOp("Add", {log->result(), offset}, {}, name, out));
    return defineOutput(node, index, add->result());
  }

  // NegativeLogLikelihoodLoss on log-probabilities x [N, C, d...] and
  // class indices t [N, d...]: element (n, d...) loses -x[n, t, d...] *
  // w[t] (w: the optional class weights, else 1), nothing where t is
  // ignore_index (read there as class 0, so it never indexes out of
  // range). Reduction 'none' keeps the elements, 'sum' adds them, 'mean'
  // divides their sum by the sum of the weights used (by the element count
  // when there are neither weights nor ignore_index). A class index out of
  // range fails the run (GatherElements checks it).
  // SoftmaxCrossEntropyLoss is the same on x = LogSoftmax(scores) along
  // axis 1, which is its optional second output.
  absl::Status importLoss(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands,
                          const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const bool softmax = node.op_type() == "SoftmaxCrossEntropyLoss";
    if (operands.size() < 2 || operands.size() > 3 || !operands[0] ||
        !operands[1]) {
      return nodeError(node, index, "expected 2 or 3 operands");
    }
    Value *x = operands[0], *target = operands[1];
    Value *weight = operands.size() == 3 ? operands[2] : nullptr;
    const TensorType &xt = x->type(), &tt = target->type();
    if (!xt.hasRank() || !tt.hasRank() ||
        !graph::isFloatType(xt.elementType())) {
      return unimplemented(node, index,
                           "needs a floating-point input and a target of "
                           "known ranks");
    }
    if (tt.elementType() != ElementType::I32 &&
        tt.elementType() != ElementType::I64) {
      return nodeError(node, index, "the target must hold int32 or int64 "
                                    "class indices");
    }
    if (xt.rank() < 2 || tt.rank() != xt.rank() - 1) {
      return nodeError(node, index,
                       "the input must be [N, C, d...] and the target "
                       "[N, d...]; got ranks " +
                           std::to_string(xt.rank()) + " and " +
                           std::to_string(tt.rank()));
    }
    for (int64_t d = 0; d < tt.rank(); ++d) {
      int64_t xd = xt.dim(d == 0 ? 0 : d + 1);
      // Dims computed from other values are checked once they fold.
      if (tt.dim(d) != xd && tt.dim(d) != graph::kDynamic &&
          xd != graph::kDynamic) {
        return nodeError(node, index,
                         "target dimension " + std::to_string(d) + " (" +
                             std::to_string(tt.dim(d)) +
                             ") differs from the input's (" +
                             std::to_string(xd) + ")");
      }
    }
    if (weight && (!weight->type().hasRank() || weight->type().rank() != 1 ||
                   (weight->type().dim(0) != xt.dim(1) &&
                    xt.dim(1) != graph::kDynamic) ||
                   weight->type().elementType() != xt.elementType())) {
      return nodeError(node, index,
                       "the weights must be a vector of one " +
                           graph::elementTypeName(xt.elementType()).str() +
                           " per class (" + std::to_string(xt.dim(1)) + ")");
    }
    std::string reduction = "mean";
    if (auto it = attrs.find("reduction"); it != attrs.end()) {
      if (!it->second.isString()) {
        return nodeError(node, index, "attribute 'reduction' must be a string");
      }
      reduction = it->second.getString();
    }
    if (reduction != "none" && reduction != "sum" && reduction != "mean") {
      return nodeError(node, index,
                       "reduction '" + reduction +
                           "' is not one of none, sum, mean");
    }
    std::optional<int64_t> ignore;
    if (auto it = attrs.find("ignore_index"); it != attrs.end()) {
      if (!it->second.isInt()) {
        return nodeError(node, index, "attribute 'ignore_index' must be an integer");
      }
      ignore = it->second.getInt();
    }
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    const ElementType et = xt.elementType();
    if (softmax) {
      const std::string logProb =
          node.output_size() > 1 ? node.output(1) : std::string();
      COMPILER_ASSIGN_OR_RETURN(
          x, op("LogSoftmax", {x}, {{"axis", Attribute(int64_t(1))}}, logProb));
      if (!logProb.empty()) {
        if (values_.count(logProb)) {
          return nodeError(node, index,
                           "output '" + logProb + "' is already defined");
        }
        values_[logProb] = x;
      }
    }
    Value *ignored = nullptr; // t == ignore_index
    Value *classes = target;
    if (ignore) {
      COMPILER_ASSIGN_OR_RETURN(
          ignored, op("Equal", {target, constScalar(tt.elementType(),
                                                    double(*ignore), name)}));
      COMPILER_ASSIGN_OR_RETURN(
          classes, op("Where", {ignored, constScalar(tt.elementType(), 0, name),
                                target}));
    }
    Value *w = nullptr; // weight of each element, when not all 1
    if (weight) {
      COMPILER_ASSIGN_OR_RETURN(w, op("Gather", {weight, classes},
                                      {{"axis", Attribute(int64_t(0))}}));
    }
    if (ignored) {
      COMPILER_ASSIGN_OR_RETURN(
          w, op("Where", {ignored, constScalar(et, 0, name),
                          w ? w : constScalar(et, 1, name)}));
    }
    const std::string &out = node.output(0);
    const bool none = reduction == "none";
    COMPILER_ASSIGN_OR_RETURN(Value * at,
                              op("Unsqueeze", {classes, constInts({1}, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * picked,
        op("GatherElements", {x, at}, {{"axis", Attribute(int64_t(1))}}));
    COMPILER_ASSIGN_OR_RETURN(picked,
                              op("Squeeze", {picked, constInts({1}, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * loss,
                              op("Neg", {picked}, {}, none && !w ? out : ""));
    if (w) {
      COMPILER_ASSIGN_OR_RETURN(loss, op("Mul", {loss, w}, {}, none ? out : ""));
    }
    if (none) {
      return defineOutput(node, index, loss);
    }
    const std::map<std::string, Attribute> all = {
        {"keepdims", Attribute(int64_t(0))}};
    if (reduction == "sum" || !w) {
      COMPILER_ASSIGN_OR_RETURN(
          loss, op(reduction == "sum" ? "ReduceSum" : "ReduceMean", {loss}, all,
                   out));
      return defineOutput(node, index, loss);
    }
    COMPILER_ASSIGN_OR_RETURN(Value * total, op("ReduceSum", {loss}, all));
    COMPILER_ASSIGN_OR_RETURN(Value * weights, op("ReduceSum", {w}, all));
    COMPILER_ASSIGN_OR_RETURN(loss, op("Div", {total, weights}, {}, out));
    return defineOutput(node, index, loss);
  }

  // OneHot: the indices (cast to int64 as the definition says; a negative
  // one counts back from depth) compared with 0..depth-1 along a new axis:
  // values[1] where equal, values[0] elsewhere. An index outside
  // [-depth, depth) matches nothing, so its row is all values[0]. depth
  // sets the output's shape, so it must be a constant.
  absl::Status importOneHot(const onnx::NodeProto &node, int index,
                            const std::vector<Value *> &operands,
                            const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 3 || !operands[0] || !operands[1] || !operands[2]) {
      return nodeError(node, index, "expected 3 operands");
    }
    Value *indices = operands[0], *values = operands[2];
    auto depthValue = graph::getConstantFloats(operands[1]);
    if (!depthValue) {
      return unimplemented(node, index,
                           "depth must be a constant (it sets the output's "
                           "shape)");
    }
    constexpr double kMaxDepth = double(int64_t(1) << 31);
    if (depthValue->size() != 1 || !((*depthValue)[0] >= 1) ||
        (*depthValue)[0] > kMaxDepth) {
      return nodeError(node, index,
                       "depth must be one value in [1, 2^31]");
    }
    const int64_t depth = int64_t((*depthValue)[0]);
    const TensorType &it = indices->type(), &vt = values->type();
    if (!it.hasRank() || !vt.hasRank()) {
      return unimplemented(node, index,
                           "needs indices and values of known ranks");
    }
    if (vt.rank() != 1 || vt.dim(0) != 2) {
      return nodeError(node, index,
                       "values must be a vector of two: [off, on]");
    }
    if (it.elementType() == ElementType::Bool) {
      return nodeError(node, index, "indices must be numbers");
    }
    int64_t rank = it.rank();
    int64_t axis = -1;
    if (auto a = attrs.find("axis"); a != attrs.end()) {
      if (!a->second.isInt()) {
        return nodeError(node, index, "attribute 'axis' must be an integer");
      }
      axis = a->second.getInt();
    }
    if (axis < -(rank + 1) || axis > rank) {
      return nodeError(node, index,
                       "axis " + std::to_string(axis) +
                           " is out of range for an output of rank " +
                           std::to_string(rank + 1));
    }
    axis = axis < 0 ? axis + rank + 1 : axis;
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    const ElementType i64 = ElementType::I64;
    Value *idx = indices;
    if (it.elementType() != i64) {
      COMPILER_ASSIGN_OR_RETURN(
          idx, op("Cast", {idx},
                  {{"to", Attribute(graph::elementTypeName(i64).str())}}));
    }
    COMPILER_ASSIGN_OR_RETURN(Value * negative,
                              op("Less", {idx, constScalar(i64, 0, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * fromEnd, op("Add", {idx, constScalar(i64, double(depth), name)}));
    COMPILER_ASSIGN_OR_RETURN(idx, op("Where", {negative, fromEnd, idx}));
    COMPILER_ASSIGN_OR_RETURN(idx,
                              op("Unsqueeze", {idx, constInts({axis}, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * hot,
        op("Equal", {idx, constPositions(depth, rank + 1, axis, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * off, op("Gather", {values, constScalar(i64, 0, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * on, op("Gather", {values, constScalar(i64, 1, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * out,
                              op("Where", {hot, on, off}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // Ops written with a few registry ops, as their definitions read:
  //   IsNaN(x)            x != x
  //   IsInf(x)            x == +inf or x == -inf (detect_positive,
  //                       detect_negative select which)
  //   ThresholdedRelu(x)  x > alpha ? x : 0
  //   Shrink(x)           x < -lambd ? x + bias : x > lambd ? x - bias : 0
  //   Celu(x)             x > 0 ? x : alpha * Elu(x / alpha)
  //   Mish(x)             x * tanh(softplus(x))
  //   GlobalMaxPool(x)    ReduceMax over the spatial axes, kept
  //   Hardmax(x)          1 at the first maximum along the axis, else 0
  absl::Status importComposite(const onnx::NodeProto &node, int index,
                               const std::vector<Value *> &operands,
                               const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const std::string &kind = node.op_type();
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    Value *x = operands[0];
    const TensorType &type = x->type();
    const ElementType et = type.elementType();
    auto number = [&](const char *attr, double fallback) {
      return numberAttr(node, index, attrs, attr, fallback);
    };
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    auto c = [&](double v) { return constScalar(et, v, name); };
    Value *out = nullptr;
    if (kind == "IsNaN") {
      COMPILER_ASSIGN_OR_RETURN(Value * same, op("Equal", {x, x}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Not", {same}, {}, node.output(0)));
    } else if (kind == "IsInf") {
      COMPILER_ASSIGN_OR_RETURN(double pos, number("detect_positive", 1));
      COMPILER_ASSIGN_OR_RETURN(double neg, number("detect_negative", 1));
      if (!graph::isFloatType(et)) {
        return nodeError(node, index, "needs a floating-point input");
      }
      if (pos != 0 && neg != 0) {
        COMPILER_ASSIGN_OR_RETURN(Value * mag, op("Abs", {x}));
        COMPILER_ASSIGN_OR_RETURN(out, op("Equal", {mag, c(INFINITY)}, {}, node.output(0)));
      } else if (pos != 0 || neg != 0) {
        COMPILER_ASSIGN_OR_RETURN(
            out, op("Equal", {x, c(pos != 0 ? INFINITY : -INFINITY)}, {}, node.output(0)));
      } else {
        // Nothing is detected: all false (no value is below -inf).
        COMPILER_ASSIGN_OR_RETURN(out, op("Less", {x, c(-INFINITY)}, {}, node.output(0)));
      }
    } else if (kind == "ThresholdedRelu") {
      COMPILER_ASSIGN_OR_RETURN(double alpha, number("alpha", 1.0));
      COMPILER_ASSIGN_OR_RETURN(Value * above, op("Greater", {x, c(alpha)}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Where", {above, x, c(0)}, {}, node.output(0)));
    } else if (kind == "Shrink") {
      COMPILER_ASSIGN_OR_RETURN(double bias, number("bias", 0.0));
      COMPILER_ASSIGN_OR_RETURN(double lambd, number("lambd", 0.5));
      if (!graph::isFloatType(et) &&
          (bias != std::trunc(bias) || lambd != std::trunc(lambd))) {
        return unimplemented(node, index,
                             "fractional bias or lambd on integers");
      }
      COMPILER_ASSIGN_OR_RETURN(Value * low, op("Less", {x, c(-lambd)}));
      COMPILER_ASSIGN_OR_RETURN(Value * high, op("Greater", {x, c(lambd)}));
      COMPILER_ASSIGN_OR_RETURN(Value * up, op("Add", {x, c(bias)}));
      COMPILER_ASSIGN_OR_RETURN(Value * down, op("Sub", {x, c(bias)}));
      COMPILER_ASSIGN_OR_RETURN(Value * mid, op("Where", {high, down, c(0)}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Where", {low, up, mid}, {}, node.output(0)));
    } else if (kind == "Celu") {
      COMPILER_ASSIGN_OR_RETURN(double alpha, number("alpha", 1.0));
      if (alpha == 0) {
        return nodeError(node, index, "alpha must not be 0");
      }
      COMPILER_ASSIGN_OR_RETURN(Value * scaled, op("Div", {x, c(alpha)}));
      COMPILER_ASSIGN_OR_RETURN(Value * elu, op("Elu", {scaled}));
      COMPILER_ASSIGN_OR_RETURN(Value * neg, op("Mul", {elu, c(alpha)}));
      COMPILER_ASSIGN_OR_RETURN(Value * pos, op("Greater", {x, c(0)}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Where", {pos, x, neg}, {}, node.output(0)));
    } else if (kind == "Mish") {
      COMPILER_ASSIGN_OR_RETURN(Value * sp, op("Softplus", {x}));
      COMPILER_ASSIGN_OR_RETURN(Value * t, op("Tanh", {sp}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Mul", {x, t}, {}, node.output(0)));
    } else if (kind == "GlobalMaxPool") {
      if (!type.hasRank() || type.rank() < 3) {
        return nodeError(node, index, "needs an input [N, C, spatial...]");
      }
      std::vector<int64_t> axes;
      for (int64_t a = 2; a < type.rank(); ++a) {
        axes.push_back(a);
      }
      COMPILER_ASSIGN_OR_RETURN(
          out, op("ReduceMax", {x, constInts(axes, name)},
                  {{"keepdims", Attribute(int64_t(1))}}, node.output(0)));
    } else { // Hardmax
      if (!type.hasRank() || type.rank() == 0) {
        return nodeError(node, index, "needs an input of known rank >= 1");
      }
      int64_t axis = -1;
      if (auto it = attrs.find("axis"); it != attrs.end() && it->second.isInt()) {
        axis = it->second.getInt();
      } else if (opset_ < 13) {
        axis = 1;
      }
      absl::Status valid = graph::normalizeAxis(axis, type.rank(), "axis");
      if (!valid.ok()) {
        return nodeError(node, index, std::string(valid.message()));
      }
      if (opset_ < 13 && axis != type.rank() - 1) {
        return unimplemented(node, index,
                             "opset-" + std::to_string(opset_) +
                                 " Hardmax over several axes (the input "
                                 "coerced to 2-D) is not supported");
      }
      COMPILER_ASSIGN_OR_RETURN(
          Value * at, op("ArgMax", {x},
                         {{"axis", Attribute(axis)},
                          {"keepdims", Attribute(int64_t(1))}}));
      COMPILER_ASSIGN_OR_RETURN(
          Value * hot,
          op("Equal",
             {at, constPositions(type.dim(axis), type.rank(), axis, name)}));
      // The index (extent 1 on the axis) against 0..D-1 (extent 1 on the
      // others) broadcasts to the input's shape.
      COMPILER_ASSIGN_OR_RETURN(out, op("Where", {hot, c(1), c(0)}, {}, node.output(0)));
    }
    return defineOutput(node, index, out);
  }

  // Range of constant start, limit and delta: a constant of
  // max(ceil((limit - start) / delta), 0) elements start + i * delta (its
  // length sets the output's shape, so run-time operands are refused).
  absl::Status importRange(const onnx::NodeProto &node, int index,
                           const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 3 || !operands[0] || !operands[1] || !operands[2]) {
      return nodeError(node, index, "expected 3 operands");
    }
    double v[3];
    for (int i = 0; i < 3; ++i) {
      auto c = graph::getConstantFloats(operands[i]);
      if (!c) {
        return unimplemented(node, index,
                             "start, limit and delta must be constants (the "
                             "length of the range sets the output's shape)");
      }
      if (c->size() != 1) {
        return nodeError(node, index, "start, limit and delta must be scalars");
      }
      v[i] = (*c)[0];
    }
    const ElementType et = operands[0]->type().elementType();
    if (operands[1]->type().elementType() != et ||
        operands[2]->type().elementType() != et) {
      return nodeError(node, index,
                       "start, limit and delta must have one element type");
    }
    if (v[2] == 0 || !std::isfinite(v[0]) || !std::isfinite(v[1]) ||
        !std::isfinite(v[2])) {
      return nodeError(node, index,
                       "delta must be nonzero and all three finite");
    }
    constexpr double kMaxElements = double(int64_t(1) << 28);
    double count = std::max(std::ceil((v[1] - v[0]) / v[2]), 0.0);
    if (count > kMaxElements) {
      return unimplemented(node, index,
                           "a range of " + std::to_string(int64_t(count)) +
                               " elements (at most 2^28)");
    }
    std::vector<double> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = v[0] + double(i) * v[2];
    }
    Op *c = graph_->createConstant(
        TensorType::ranked(et, {int64_t(values.size())}),
        DenseData::fromDoubles(et, values));
    c->setNodeName(name);
    return defineOutput(node, index, c->result());
  }

  // EyeLike: a constant of the input's (static, 2-D) shape, ones on the
  // diagonal k, of element type dtype (default: the input's).
  absl::Status importEyeLike(const onnx::NodeProto &node, int index,
                             const std::vector<Value *> &operands,
                             const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    const TensorType &t = operands[0]->type();
    if (!t.hasStaticShape() || t.rank() != 2) {
      return nodeError(node, index, "needs a 2-D input of static shape");
    }
    ElementType et = t.elementType();
    if (auto it = attrs.find("dtype"); it != attrs.end()) {
      auto mapped = it->second.isInt()
                        ? mapElementType(static_cast<int32_t>(it->second.getInt()))
                        : std::nullopt;
      if (!mapped) {
        return nodeError(node, index, "unsupported dtype");
      }
      et = *mapped;
    }
    int64_t k = 0;
    if (auto it = attrs.find("k"); it != attrs.end() && it->second.isInt()) {
      k = it->second.getInt();
    }
    int64_t rows = t.dim(0), cols = t.dim(1);
    std::vector<int64_t> values(size_t(rows * cols), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t c = r + k;
      if (c >= 0 && c < cols) {
        values[size_t(r * cols + c)] = 1;
      }
    }
    Op *c = graph_->createConstant(TensorType::ranked(et, {rows, cols}),
                                   DenseData::fromInt64s(et, values));
    c->setNodeName(name);
    return defineOutput(node, index, c->result());
  }

  // Tile by constant repeats r on a static shape d: the input reshaped to
  // [1, d0, 1, d1, ...], expanded to [r0, d0, r1, d1, ...] and reshaped to
  // [r0 * d0, r1 * d1, ...].
  absl::Status importTile(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected 2 operands");
    }
    const TensorType &t = operands[0]->type();
    auto repeats = graph::getConstantInts(operands[1]);
    if (!repeats) {
      return unimplemented(node, index,
                           "repeats must be a constant (they set the "
                           "output's shape)");
    }
    if (!t.hasStaticShape()) {
      return unimplemented(node, index, "needs a static input shape");
    }
    if (int64_t(repeats->size()) != t.rank()) {
      return nodeError(node, index,
                       "repeats has " + std::to_string(repeats->size()) +
                           " values for an input of rank " +
                           std::to_string(t.rank()));
    }
    std::vector<int64_t> split, expanded, out;
    for (int64_t d = 0; d < t.rank(); ++d) {
      int64_t r = (*repeats)[d];
      if (r < 0) {
        return nodeError(node, index, "repeats must not be negative");
      }
      split.insert(split.end(), {1, t.dim(d)});
      expanded.insert(expanded.end(), {r, t.dim(d)});
      out.push_back(r * t.dim(d));
    }
    COMPILER_ASSIGN_OR_RETURN(
        Op * a, addTypedOp("Reshape", {operands[0], constInts(split, name)},
                           {}, name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * b, addTypedOp("Expand", {a->result(), constInts(expanded, name)},
                           {}, name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * c, addTypedOp("Reshape", {b->result(), constInts(out, name)}, {},
                           name, node.output(0)));
    return defineOutput(node, index, c->result());
  }

  // InstanceNormalization (per sample and channel over the spatial axes,
  // then scale[c] and B[c]) and MeanVarianceNormalization (over attribute
  // axes, default 0, 2, 3): d = x - mean(x), var = mean(d * d) (the
  // centred form, which does not cancel as E(x^2) - E(x)^2 does), then
  // d / sqrt(var + epsilon) and d / (sqrt(var) + 1e-9) respectively, as
  // their definitions add epsilon.
  absl::Status importNormalization(const onnx::NodeProto &node, int index,
                                   const std::vector<Value *> &operands,
                                   const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const bool instance = node.op_type() == "InstanceNormalization";
    if (operands.size() != (instance ? 3u : 1u) ||
        std::count(operands.begin(), operands.end(), nullptr)) {
      return nodeError(node, index, instance ? "expected 3 operands"
                                             : "expected 1 operand");
    }
    Value *x = operands[0];
    const TensorType &t = x->type();
    if (!t.hasRank() || !graph::isFloatType(t.elementType()) || t.rank() < 3) {
      return nodeError(node, index,
                       "needs a floating-point input [N, C, spatial...]");
    }
    const ElementType et = t.elementType();
    const int64_t rank = t.rank();
    std::vector<int64_t> axes;
    if (instance) {
      for (int64_t a = 2; a < rank; ++a) {
        axes.push_back(a);
      }
    } else if (auto it = attrs.find("axes"); it != attrs.end()) {
      if (!it->second.isIntList()) {
        return nodeError(node, index, "attribute 'axes' must be integers");
      }
      axes = it->second.getIntList();
    } else {
      axes = {0, 2, 3};
    }
    COMPILER_RETURN_IF_ERROR(checkAxes(node, index, axes, rank));
    COMPILER_ASSIGN_OR_RETURN(double epsilon,
                              numberAttr(node, index, attrs, "epsilon", 1e-5));
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    auto mean = [&](Value *v) {
      return op("ReduceMean", {v, constInts(axes, name)},
                {{"keepdims", Attribute(int64_t(1))}});
    };
    COMPILER_ASSIGN_OR_RETURN(Value * m, mean(x));
    COMPILER_ASSIGN_OR_RETURN(Value * d, op("Sub", {x, m}));
    COMPILER_ASSIGN_OR_RETURN(Value * sq, op("Mul", {d, d}));
    COMPILER_ASSIGN_OR_RETURN(Value * var, mean(sq));
    Value *out = nullptr;
    if (!instance) {
      COMPILER_ASSIGN_OR_RETURN(Value * sd, op("Sqrt", {var}));
      COMPILER_ASSIGN_OR_RETURN(
          Value * den, op("Add", {sd, constScalar(et, 1e-9, name)}));
      COMPILER_ASSIGN_OR_RETURN(out, op("Div", {d, den}, {}, node.output(0)));
      return defineOutput(node, index, out);
    }
    for (int i = 1; i < 3; ++i) {
      const TensorType &p = operands[i]->type();
      if (!p.hasRank() || p.rank() != 1 || p.elementType() != et ||
          (p.dim(0) != t.dim(1) && t.dim(1) != graph::kDynamic)) {
        return nodeError(node, index,
                         std::string(i == 1 ? "scale" : "B") +
                             " must be a vector of one " +
                             graph::elementTypeName(et).str() +
                             " per channel");
      }
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * shifted, op("Add", {var, constScalar(et, epsilon, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * den, op("Sqrt", {shifted}));
    COMPILER_ASSIGN_OR_RETURN(Value * n, op("Div", {d, den}));
    std::vector<int64_t> trailing;
    for (int64_t a = 1; a < rank - 1; ++a) {
      trailing.push_back(a);
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * scale, op("Unsqueeze", {operands[1], constInts(trailing, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * bias, op("Unsqueeze", {operands[2], constInts(trailing, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * scaled, op("Mul", {n, scale}));
    COMPILER_ASSIGN_OR_RETURN(out, op("Add", {scaled, bias}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // LRN: x / (bias + alpha / size * s)^beta with s the sum of x^2 over
  // channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] inside
  // the input: the squares padded with zeros along the channels, summed
  // over size channel slices.
  absl::Status importLrn(const onnx::NodeProto &node, int index,
                         const std::vector<Value *> &operands,
                         const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    Value *x = operands[0];
    const TensorType &t = x->type();
    if (!t.hasStaticShape() || !graph::isFloatType(t.elementType()) ||
        t.rank() < 3) {
      return unimplemented(node, index,
                           "needs a floating-point input [N, C, spatial...] "
                           "of static shape");
    }
    auto it = attrs.find("size");
    if (it == attrs.end() || !it->second.isInt() || it->second.getInt() < 1) {
      return nodeError(node, index, "attribute 'size' must be a positive integer");
    }
    const int64_t size = it->second.getInt();
    if (size > 1024) {
      return unimplemented(node, index, "a window of more than 1024 channels");
    }
    COMPILER_ASSIGN_OR_RETURN(double alpha,
                              numberAttr(node, index, attrs, "alpha", 1e-4));
    COMPILER_ASSIGN_OR_RETURN(double beta,
                              numberAttr(node, index, attrs, "beta", 0.75));
    COMPILER_ASSIGN_OR_RETURN(double bias,
                              numberAttr(node, index, attrs, "bias", 1.0));
    const ElementType et = t.elementType();
    const int64_t rank = t.rank(), channels = t.dim(1);
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    COMPILER_ASSIGN_OR_RETURN(Value * sq, op("Mul", {x, x}));
    std::vector<int64_t> pads(2 * rank, 0);
    pads[1] = before;
    pads[rank + 1] = after;
    COMPILER_ASSIGN_OR_RETURN(Value * padded, op("Pad", {sq, constInts(pads, name)}));
    Value *sum = nullptr;
    for (int64_t k = 0; k < size; ++k) {
      COMPILER_ASSIGN_OR_RETURN(
          Value * window,
          op("Slice", {padded, constInts({k}, name),
                       constInts({k + channels}, name), constInts({1}, name)}));
      if (sum) {
        COMPILER_ASSIGN_OR_RETURN(sum, op("Add", {sum, window}));
      } else {
        sum = window;
      }
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * scaled, op("Mul", {sum, constScalar(et, alpha / double(size), name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * base,
                              op("Add", {scaled, constScalar(et, bias, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * den,
                              op("Pow", {base, constScalar(et, beta, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * out, op("Div", {x, den}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // DepthToSpace and SpaceToDepth on [N, C, H, W] with blocksize b, as the
  // ONNX definitions write them: a reshape to 6-D, a transpose, a reshape
  // back to 4-D. Needs a static input shape.
  absl::Status importDepthSpace(const onnx::NodeProto &node, int index,
                                const std::vector<Value *> &operands,
                                const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const bool toSpace = node.op_type() == "DepthToSpace";
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    auto b = attrs.find("blocksize");
    if (b == attrs.end() || !b->second.isInt() || b->second.getInt() < 1) {
      return nodeError(node, index,
                       "attribute 'blocksize' must be a positive integer");
    }
    std::string mode = "DCR";
    if (auto it = attrs.find("mode"); it != attrs.end()) {
      if (!toSpace || !it->second.isString() ||
          (it->second.getString() != "DCR" && it->second.getString() != "CRD")) {
        return nodeError(node, index,
                         "attribute 'mode' must be DCR or CRD (DepthToSpace)");
      }
      mode = it->second.getString();
    }
    Value *x = operands[0];
    const TensorType &type = x->type();
    if (!type.hasStaticShape() || type.rank() != 4) {
      return unimplemented(node, index,
                           "needs a 4-D input of static shape (pin dynamic "
                           "dimensions with --input-shape)");
    }
    const int64_t bs = b->second.getInt();
    const int64_t n = type.dim(0), c = type.dim(1), h = type.dim(2),
                  w = type.dim(3);
    std::vector<int64_t> split, perm, out;
    if (toSpace) {
      if (c % (bs * bs) != 0) {
        return nodeError(node, index,
                         "channels (" + std::to_string(c) +
                             ") are not a multiple of blocksize^2 (" +
                             std::to_string(bs * bs) + ")");
      }
      const int64_t cOut = c / (bs * bs);
      if (mode == "DCR") {
        split = {n, bs, bs, cOut, h, w};
        perm = {0, 3, 4, 1, 5, 2};
      } else {
        split = {n, cOut, bs, bs, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      }
      out = {n, cOut, h * bs, w * bs};
    } else {
      if (h % bs != 0 || w % bs != 0) {
        return nodeError(node, index,
                         "height and width (" + std::to_string(h) + ", " +
                             std::to_string(w) +
                             ") are not multiples of blocksize (" +
                             std::to_string(bs) + ")");
      }
      split = {n, c, h / bs, bs, w / bs, bs};
      perm = {0, 3, 5, 1, 2, 4};
      out = {n, c * bs * bs, h / bs, w / bs};
    }
    COMPILER_ASSIGN_OR_RETURN(
        Op * blocks, addTypedOp("Reshape", {x, constInts(split, name)}, {},
                                name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * moved, addTypedOp("Transpose", {blocks->result()},
                               {{"perm", Attribute(graph::IntList(perm))}},
                               name, ""));
    COMPILER_ASSIGN_OR_RETURN(
        Op * back, addTypedOp("Reshape", {moved->result(), constInts(out, name)},
                              {}, name, node.output(0)));
    return defineOutput(node, index, back->result());
  }

  // Before opset 13, Softmax (default axis 1) coerces its input to 2-D,
  // [prod(dims before axis), prod(dims from axis)], and normalizes each row:
  // one softmax over all the trailing axes together. The graph's Softmax is
  // the opset-13 one (a single axis), so the coercion becomes explicit
  // reshapes around it.
  absl::Status importCoercedSoftmax(const onnx::NodeProto &node, int index,
                                    std::vector<Value *> &operands,
                                    std::map<std::string, Attribute> &attrs,
                                    const char *kindName) {
    std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    Value *x = operands[0];
    const TensorType &type = x->type();
    int64_t axis = 1;
    if (auto it = attrs.find("axis"); it != attrs.end()) {
      axis = it->second.getInt();
    }
    if (type.hasRank()) {
      absl::Status s = graph::normalizeAxis(axis, type.rank(), "axis");
      if (!s.ok()) {
        return nodeError(node, index, std::string(s.message()));
      }
    }
    if (values_.count(node.output(0))) {
      return nodeError(node, index,
                       "output '" + node.output(0) + "' is already defined");
    }
    Value *result;
    if (type.hasRank() && axis == type.rank() - 1) {
      COMPILER_ASSIGN_OR_RETURN(
          Op * sm, addTypedOp(kindName, {x}, {{"axis", Attribute(axis)}},
                              name, node.output(0)));
      result = sm->result();
    } else {
      if (!type.hasStaticShape()) {
        return unimplemented(node, index,
                             "opset-" + std::to_string(opset_) +
                                 " " + kindName +
                                 " over several axes needs a static "
                                 "input shape");
      }
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < type.rank(); ++i) {
        (i < axis ? outer : inner) *= type.dim(i);
      }
      COMPILER_ASSIGN_OR_RETURN(
          Op * rows, addTypedOp("Reshape", {x, constInts({outer, inner}, name)},
                                {}, name, ""));
      COMPILER_ASSIGN_OR_RETURN(
          Op * sm, addTypedOp(kindName, {rows->result()},
                              {{"axis", Attribute(int64_t{1})}}, name, ""));
      COMPILER_ASSIGN_OR_RETURN(
          Op * back,
          addTypedOp("Reshape", {sm->result(), constInts(type.dims().vec(), name)},
                     {}, name, node.output(0)));
      result = back->result();
    }
    values_[node.output(0)] = result;
    return absl::OkStatus();
  }

  // Opset 18 lets Pad list pads for some axes only. Expands constant pads and
  // axes to every axis so the graph IR keeps the one full-rank form.
  absl::Status expandPadAxes(const onnx::NodeProto &node, int index,
                             std::vector<Value *> &operands) {
    if (operands.size() < 4 || !operands[3]) {
      return absl::OkStatus();
    }
    auto pads = graph::getConstantInts(operands[1]);
    auto axes = graph::getConstantInts(operands[3]);
    const TensorType &x = operands[0]->type();
    if (!pads || !axes || !x.hasRank()) {
      return unimplemented(node, index,
                           "axes need constant pads and axes and an input of "
                           "known rank");
    }
    COMPILER_RETURN_IF_ERROR(checkAxes(node, index, *axes, x.rank()));
    size_t n = axes->size();
    if (pads->size() != 2 * n) {
      return nodeError(node, index,
                       "pads lists " + std::to_string(pads->size()) +
                           " values for " + std::to_string(n) + " axes");
    }
    std::vector<int64_t> full(2 * x.rank(), 0);
    for (size_t i = 0; i < n; ++i) {
      full[(*axes)[i]] = (*pads)[i];
      full[(*axes)[i] + x.rank()] = (*pads)[i + n];
    }
    operands[1] = constInts(full, nodeName(node, index));
    operands.resize(3);
    while (!operands.empty() && !operands.back()) {
      operands.pop_back();
    }
    return absl::OkStatus();
  }

  // Negative pads remove elements. They become a Slice of the input (the
  // crop) feeding a Pad with the remaining non-negative pads, so the Pad op
  // only ever adds. Cropping first is exact: each side of an axis is either
  // cropped or padded, and edge/reflect values come from what remains (for
  // reflect, as long as the crop leaves more elements than are mirrored).
  absl::Status splitNegativePads(const onnx::NodeProto &node, int index,
                                 std::vector<Value *> &operands,
                                 const std::map<std::string, Attribute> &attrs) {
    std::string mode = "constant";
    if (auto it = attrs.find("mode");
        it != attrs.end() && it->second.isString()) {
      mode = it->second.getString();
    }
    auto pads = graph::getConstantInts(operands[1]);
    const TensorType &x = operands[0]->type();
    if (!pads || !x.hasRank() ||
        static_cast<int64_t>(pads->size()) != 2 * x.rank() ||
        std::none_of(pads->begin(), pads->end(),
                     [](int64_t p) { return p < 0; })) {
      return absl::OkStatus();
    }
    if (!x.hasStaticShape()) {
      return unimplemented(node, index,
                           "negative pads need a static input shape");
    }
    int64_t rank = x.rank();
    std::vector<int64_t> starts, ends, axes, rest(2 * rank, 0);
    for (int64_t i = 0; i < rank; ++i) {
      int64_t begin = (*pads)[i], end = (*pads)[i + rank];
      if (begin < 0 || end < 0) {
        int64_t cropBegin = std::max<int64_t>(0, -begin);
        int64_t cropEnd = std::max<int64_t>(0, -end);
        if (cropBegin + cropEnd > x.dim(i)) {
          return nodeError(node, index,
                           "pads remove " +
                               std::to_string(cropBegin + cropEnd) +
                               " elements from axis " + std::to_string(i) +
                               " of extent " + std::to_string(x.dim(i)));
        }
        int64_t kept = x.dim(i) - cropBegin - cropEnd;
        if (mode == "reflect" && std::max(begin, end) >= kept) {
          return unimplemented(node, index,
                               "reflect padding of axis " + std::to_string(i) +
                                   " beyond what its negative pads leave");
        }
        starts.push_back(cropBegin);
        ends.push_back(x.dim(i) - cropEnd);
        axes.push_back(i);
      }
      rest[i] = std::max<int64_t>(0, begin);
      rest[i + rank] = std::max<int64_t>(0, end);
    }
    std::string name = nodeName(node, index);
    COMPILER_ASSIGN_OR_RETURN(
        Op * crop,
        addTypedOp("Slice",
                   {operands[0], constInts(starts, name), constInts(ends, name),
                    constInts(axes, name)},
                   {}, name, ""));
    operands[0] = crop->result();
    operands[1] = constInts(rest, name);
    return absl::OkStatus();
  }

  // Resize: expands opset-18 |axes| (scales, sizes and roi listed for some
  // axes only) to every axis, and refuses the opset-18 options the lowering
  // does not implement rather than ignoring them.
  absl::Status canonicalizeResize(const onnx::NodeProto &node, int index,
                                  std::vector<Value *> &operands,
                                  std::map<std::string, Attribute> &attrs) {
    auto policy = attrs.find("keep_aspect_ratio_policy");
    if (policy != attrs.end() && policy->second.isString()) {
      if (policy->second.getString() != "stretch") {
        return unimplemented(node, index,
                             "keep_aspect_ratio_policy '" +
                                 policy->second.getString() +
                                 "' is not implemented (only 'stretch')");
      }
      attrs.erase(policy);
    }
    auto antialias = attrs.find("antialias");
    if (antialias != attrs.end()) {
      if (antialias->second.isInt() && antialias->second.getInt() != 0) {
        return unimplemented(node, index, "antialias=1 is not implemented");
      }
      attrs.erase(antialias);
    }
    auto axesAttr = attrs.find("axes");
    if (axesAttr == attrs.end()) {
      return absl::OkStatus();
    }
    const TensorType &x = operands[0]->type();
    if (!axesAttr->second.isIntList() || !x.hasRank()) {
      return unimplemented(node, index,
                           "axes need an input of known rank");
    }
    std::vector<int64_t> axes = axesAttr->second.getIntList();
    COMPILER_RETURN_IF_ERROR(checkAxes(node, index, axes, x.rank()));
    size_t n = axes.size();
    std::string name = nodeName(node, index);
    auto isEmpty = [&](size_t i) {
      return i >= operands.size() || !operands[i] ||
             (operands[i]->type().hasStaticShape() &&
              operands[i]->type().numElements() == 0);
    };
    if (!isEmpty(1)) {
      auto roi = graph::getConstantFloats(operands[1]);
      if (!roi || roi->size() != 2 * n) {
        return unimplemented(node, index,
                             "axes need a constant roi of 2 x " +
                                 std::to_string(n) + " values");
      }
      std::vector<double> full(2 * x.rank(), 0.0);
      std::fill(full.begin() + x.rank(), full.end(), 1.0);
      for (size_t i = 0; i < n; ++i) {
        full[axes[i]] = (*roi)[i];
        full[axes[i] + x.rank()] = (*roi)[i + n];
      }
      operands[1] = constFloats(full, name);
    }
    if (!isEmpty(2)) {
      auto scales = graph::getConstantFloats(operands[2]);
      if (!scales || scales->size() != n) {
        return unimplemented(node, index,
                             "axes need constant scales with " +
                                 std::to_string(n) + " values");
      }
      std::vector<double> full(x.rank(), 1.0);
      for (size_t i = 0; i < n; ++i) {
        full[axes[i]] = (*scales)[i];
      }
      operands[2] = constFloats(full, name);
    }
    if (!isEmpty(3)) {
      auto sizes = graph::getConstantInts(operands[3]);
      if (!sizes || sizes->size() != n || !x.hasStaticShape()) {
        return unimplemented(node, index,
                             "axes need constant sizes with " +
                                 std::to_string(n) +
                                 " values and a static input shape");
      }
      std::vector<int64_t> full(x.dims().begin(), x.dims().end());
      for (size_t i = 0; i < n; ++i) {
        full[axes[i]] = (*sizes)[i];
      }
      operands[3] = constInts(full, name);
    }
    attrs.erase(axesAttr);
    return absl::OkStatus();
  }

  absl::Status importConstant(const onnx::NodeProto &node, int index) {
    std::string name = nodeName(node, index);
    if (node.attribute_size() != 1) {
      return nodeError(node, index, "expected exactly one value attribute");
    }
    const auto &a = node.attribute(0);
    TensorType type;
    DenseData data;
    if (a.name() == "value") {
      COMPILER_RETURN_IF_ERROR(readTensorAttr(node, index, a, type, data));
    } else if (a.name() == "value_float") {
      type = TensorType::ranked(ElementType::F32, {});
      data = DenseData::fromDoubles(ElementType::F32, {double(a.f())});
    } else if (a.name() == "value_floats") {
      std::vector<double> v(a.floats().begin(), a.floats().end());
      type = TensorType::ranked(ElementType::F32, {int64_t(v.size())});
      data = DenseData::fromDoubles(ElementType::F32, v);
    } else if (a.name() == "value_int") {
      type = TensorType::ranked(ElementType::I64, {});
      data = DenseData::fromInt64s(ElementType::I64, {int64_t(a.i())});
    } else if (a.name() == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      type = TensorType::ranked(ElementType::I64, {int64_t(v.size())});
      data = DenseData::fromInt64s(ElementType::I64, v);
    } else {
      return nodeError(node, index,
                       "attribute '" + a.name() + "' is not supported");
    }
    if (values_.count(node.output(0))) {
      return nodeError(node, index,
                       "output '" + node.output(0) + "' is already defined");
    }
    Op *c = graph_->createConstant(type, std::move(data), nullptr,
                                   node.output(0));
    c->setNodeName(name);
    values_[node.output(0)] = c->result();
    return absl::OkStatus();
  }

  absl::Status importNode(const onnx::NodeProto &node, int index) {
    const std::string &opType = node.op_type();
    std::string name = nodeName(node, index);
    if (node.output_size() < 1) {
      return nodeError(node, index, "node has no outputs");
    }
    // checkSupported has rejected every op type the registry does not know
    // but kRewrittenOps (which have no kind).
    const graph::OpInfo *info = graph::lookupOp(opType);
    if (!isSupported(opType)) {
      return nodeError(node, index, "unsupported operator " + opType);
    }
    const std::optional<OpKind> kind =
        info ? std::optional<OpKind>(info->kind) : std::nullopt;
    if (kind == OpKind::Constant) {
      return importConstant(node, index);
    }
    std::vector<Value *> operands;
    for (const std::string &input : node.input()) {
      if (input.empty()) {
        operands.push_back(nullptr);
        continue;
      }
      auto it = values_.find(input);
      if (it == values_.end()) {
        return nodeError(node, index,
                         "input '" + input + "' is not defined before use");
      }
      operands.push_back(it->second);
    }
    while (!operands.empty() && !operands.back()) {
      operands.pop_back();
    }
    COMPILER_RETURN_IF_ERROR(checkAttributeKinds(node, index, kind));
    std::map<std::string, Attribute> attrs;
    for (const auto &a : node.attribute()) {
      if (kind == OpKind::ConstantOfShape && a.name() == "value") {
        COMPILER_RETURN_IF_ERROR(fillValue(node, index, a, attrs));
        continue;
      }
      auto attr = convertAttr(a);
      if (!attr.ok()) {
        return nodeError(node, index, std::string(attr.status().message()));
      }
      attrs[a.name()] = *attr;
    }
    // Opset differences: move list attributes that later opsets take as
    // inputs into constant operands, so the graph IR has one form.
    auto attrToInput = [&](const char *attr, size_t position) {
      auto it = attrs.find(attr);
      if (it == attrs.end()) {
        return;
      }
      if (it->second.isIntList()) {
        if (operands.size() < position) {
          operands.resize(position, nullptr);
        }
        operands.insert(operands.begin() + position,
                        constInts(it->second.getIntList(), name));
      }
      attrs.erase(it);
    };
    if ((kind == OpKind::Squeeze || kind == OpKind::Unsqueeze) && opset_ < 13) {
      attrToInput("axes", 1);
    } else if (kind == OpKind::Split && opset_ < 13) {
      attrToInput("split", 1);
    } else if (kind == OpKind::ReduceSum && opset_ < 13) {
      attrToInput("axes", 1);
    } else if (kind && axesBecameInputAt18(*kind) && opset_ < 18) {
      attrToInput("axes", 1);
    } else if (kind == OpKind::Cast) {
      auto it = attrs.find("to");
      if (it == attrs.end() || !it->second.isInt()) {
        return nodeError(node, index, "attribute 'to' is required");
      }
      auto et = mapElementType(static_cast<int32_t>(it->second.getInt()));
      if (!et) {
        return nodeError(node, index,
                         "unsupported target type " +
                             std::to_string(it->second.getInt()));
      }
      it->second = Attribute(graph::elementTypeName(*et).str());
    } else if ((kind == OpKind::Softmax || kind == OpKind::LogSoftmax) &&
               opset_ < 13) {
      return importCoercedSoftmax(node, index, operands, attrs,
                                  kind == OpKind::Softmax ? "Softmax"
                                                          : "LogSoftmax");
    } else if (kind == OpKind::QuantizeLinear ||
               kind == OpKind::DequantizeLinear) {
      COMPILER_RETURN_IF_ERROR(
          canonicalizeQuantize(node, index, operands, attrs));
    } else if (opType == "Dropout") {
      return importDropout(node, index, operands);
    } else if (opType == "Sum" || opType == "Mean") {
      return importVariadicSum(node, index, operands);
    } else if (opType == "ReduceLogSum" || opType == "ReduceLogSumExp") {
      return importReduceLog(node, index, operands, attrs);
    } else if (opType == "CastLike") {
      if (operands.size() != 2 || !operands[0] || !operands[1]) {
        return nodeError(node, index, "expected 2 operands");
      }
      ElementType to = operands[1]->type().elementType();
      COMPILER_ASSIGN_OR_RETURN(
          Op * cast,
          addTypedOp("Cast", {operands[0]},
                     {{"to", Attribute(graph::elementTypeName(to).str())}},
                     name, node.output(0)));
      return defineOutput(node, index, cast->result());
    } else if (opType == "Trilu") {
      return importTrilu(node, index, operands, attrs);
    } else if (opType == "NegativeLogLikelihoodLoss" ||
               opType == "SoftmaxCrossEntropyLoss") {
      return importLoss(node, index, operands, attrs);
    } else if (opType == "OneHot") {
      return importOneHot(node, index, operands, attrs);
    } else if (opType == "IsNaN" || opType == "IsInf" || opType == "Celu" ||
               opType == "Shrink" || opType == "ThresholdedRelu" ||
               opType == "Mish" || opType == "GlobalMaxPool" ||
               opType == "Hardmax") {
      return importComposite(node, index, operands, attrs);
    } else if (opType == "Range") {
      return importRange(node, index, operands);
    } else if (opType == "EyeLike") {
      return importEyeLike(node, index, operands, attrs);
    } else if (opType == "Tile") {
      return importTile(node, index, operands);
    } else if (opType == "InstanceNormalization" ||
               opType == "MeanVarianceNormalization") {
      return importNormalization(node, index, operands, attrs);
    } else if (opType == "LRN") {
      return importLrn(node, index, operands, attrs);
    } else if (opType == "Size") {
      return importSize(node, index, operands);
    } else if (opType == "DepthToSpace" || opType == "SpaceToDepth") {
      return importDepthSpace(node, index, operands, attrs);
    } else if (kind == OpKind::Pad) {
      COMPILER_RETURN_IF_ERROR(expandPadAxes(node, index, operands));
      COMPILER_RETURN_IF_ERROR(
          splitNegativePads(node, index, operands, attrs));
    } else if (kind == OpKind::Resize) {
      COMPILER_RETURN_IF_ERROR(
          canonicalizeResize(node, index, operands, attrs));
    }
    // Only the first output of these ops is supported.
    size_t results = node.output_size();
    if (kind == OpKind::LayerNormalization) {
      // Mean and InvStdDev are supported; an omitted output may only be
      // followed by omitted outputs.
      while (results > 1 && node.output(results - 1).empty()) {
        --results;
      }
      for (size_t i = 1; i < results; ++i) {
        if (node.output(i).empty()) {
          return nodeError(node, index,
                           "omitting output #" + std::to_string(i) +
                               " while giving a later one is not supported");
        }
      }
    } else if (kind == OpKind::BatchNormalization || kind == OpKind::MaxPool) {
      for (int i = 1; i < node.output_size(); ++i) {
        if (!node.output(i).empty()) {
          return nodeError(node, index,
                           "optional output #" + std::to_string(i) + " ('" +
                               node.output(i) + "') is not supported");
        }
      }
      results = 1;
    }
    std::vector<TensorType> placeholders(results,
                                         TensorType::unranked(ElementType::F32));
    std::vector<std::string> names(node.output().begin(),
                                   node.output().begin() + results);
    Op *op = graph_->createOp(opType, std::move(operands), placeholders,
                              std::move(attrs), nullptr, names);
    op->setNodeName(name);
    std::vector<TensorType> types;
    COMPILER_RETURN_IF_ERROR(graph::inferResultTypes(*op, types));
    for (size_t i = 0; i < results; ++i) {
      op->result(i)->setType(types[i]);
      if (names[i].empty()) {
        continue;
      }
      if (values_.count(names[i])) {
        return nodeError(node, index,
                         "output '" + names[i] + "' is already defined");
      }
      values_[names[i]] = op->result(i);
    }
    return absl::OkStatus();
  }

  // libonnx reports "[ShapeInferenceError] (op_type:Relu, node name: r0):
  // [ShapeInferenceError] <reason>"; this names the node the way our own
  // errors do.
  static absl::Status onnxInferenceError(llvm::StringRef what) {
    llvm::StringRef rest = what;
    llvm::StringRef opType, node;
    if (rest.consume_front("[ShapeInferenceError] (op_type:")) {
      std::tie(opType, rest) = rest.split(", node name: ");
      std::tie(node, rest) = rest.split("): ");
      while (rest.consume_front("[ShapeInferenceError] ") ||
             rest.consume_front("[TypeInferenceError] ")) {
      }
      if (!opType.empty() && !rest.empty()) {
        std::string named = node.empty() ? "" : "'" + node.str() + "' ";
        return absl::InvalidArgumentError("node " + named + "(" +
                                          opType.str() +
                                          "): ONNX shape inference: " +
                                          rest.str());
      }
    }
    return absl::InvalidArgumentError("ONNX shape inference failed: " +
                                      what.str());
  }

  // Runs ONNX shape inference on the (already validated) model and refines
  // every result type with it, recomputing types in graph order so refined
  // operands reach their users.
  absl::Status refineWithOnnxShapes() {
    try {
      onnx::shape_inference::InferShapes(*model_);
    } catch (const std::exception &e) {
      return onnxInferenceError(e.what());
    }
    std::unordered_map<std::string, const onnx::ValueInfoProto *> inferred;
    const onnx::GraphProto &g = model_->graph();
    for (const auto &vi : g.value_info()) {
      inferred[vi.name()] = &vi;
    }
    for (const auto &vi : g.output()) {
      inferred[vi.name()] = &vi;
    }
    for (Op *op : graph_->opList()) {
      if (op->is(OpKind::Constant)) {
        continue;
      }
      std::vector<TensorType> types;
      COMPILER_RETURN_IF_ERROR(graph::inferResultTypes(*op, types));
      for (unsigned i = 0; i < op->numResults(); ++i) {
        TensorType type = types[i];
        const std::string &name = op->result(i)->name();
        auto it = inferred.find(name);
        if (it != inferred.end()) {
          auto onnxType = valueInfoType(*it->second, "value");
          if (onnxType.ok()) {
            auto refined = graph::refineType(type, *onnxType);
            if (!refined) {
              return op->emitError("ONNX infers " + onnxType->str() +
                                   " for output '" + name + "', expected " +
                                   type.str());
            }
            type = *refined;
          }
        }
        op->result(i)->setType(type);
      }
    }
    return absl::OkStatus();
  }

  std::shared_ptr<onnx::ModelProto> model_;
  std::string baseDir_;
  ImportOptions options_;
  int64_t opset_ = 0;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Value *> values_;
};

// The model's default-domain opset, or 0 when it imports none.
int64_t defaultOpset(const onnx::ModelProto &model) {
  int64_t opset = 0;
  for (const auto &o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset = o.version();
    }
  }
  return opset;
}

// Upsample and opset-10 Resize map output to input coordinates as
// x_in = x_out / scale (nearest takes the floor); opset 11's Resize
// defaults to half_pixel. The version converter does not write the old mode
// into the Resize nodes it produces, so every Resize of a converted model
// (none can be an opset-11 one) gets it here.
void keepAsymmetricResize(onnx::ModelProto &model) {
  for (onnx::NodeProto &node : *model.mutable_graph()->mutable_node()) {
    if (node.op_type() != "Resize") {
      continue;
    }
    auto add = [&](const char *name, const char *value) {
      for (const auto &a : node.attribute()) {
        if (a.name() == name) {
          return;
        }
      }
      onnx::AttributeProto *a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(value);
    };
    add("coordinate_transformation_mode", "asymmetric");
    add("nearest_mode", "floor");
  }
}

// Models of opsets 1 to kMinOpset - 1 are converted to kMinOpset by ONNX's
// own version converter (which rewrites, e.g., Upsample into Resize, and
// BatchNormalization's old attributes away); the importer then reads them
// like any opset-11 model. The checker validates the model first: the
// converter's adapters assume well-formed nodes. Returns the model's
// original opset.
absl::StatusOr<int64_t> upgradeOldOpset(onnx::ModelProto &model) {
  int64_t opset = defaultOpset(model);
  if (opset <= 0 || opset >= kMinOpset) {
    return opset;
  }
  std::string stage = "checking";
  try {
    onnx::checker::check_model(model);
    stage = "converting";
    model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
  } catch (const std::exception &e) {
    std::string what = e.what();
    if (what.size() > 400) {
      what = what.substr(0, 400) + "...";
    }
    return absl::InvalidArgumentError(
        "model uses ONNX opset " + std::to_string(opset) +
        ", which the importer reads by converting it to opset " +
        std::to_string(kMinOpset) + " with ONNX's version converter; " +
        stage + " the model failed: " + what);
  }
  keepAsymmetricResize(model);
  return opset;
}

} // namespace

absl::StatusOr<std::unique_ptr<Graph>>
importOnnxBytes(std::string bytes, llvm::StringRef baseDir,
                const ImportOptions &options) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (bytes.empty() || !model->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        "not a valid ONNX ModelProto: " +
        diagnoseProtoParseFailure(bytes, onnx::ModelProto::descriptor()));
  }
  if (!model->has_graph()) {
    return absl::InvalidArgumentError("ONNX model has no graph");
  }
  COMPILER_ASSIGN_OR_RETURN(int64_t opset, upgradeOldOpset(*model));
  auto graph = Importer(std::move(model), baseDir.str(), options).run();
  if (!graph.ok() && opset < kMinOpset) {
    return absl::Status(graph.status().code(),
                        std::string(graph.status().message()) +
                            " (in the model as converted from opset " +
                            std::to_string(opset) + " to " +
                            std::to_string(kMinOpset) + ")");
  }
  return graph;
}

absl::StatusOr<std::unique_ptr<Graph>>
importOnnxFile(llvm::StringRef path, const ImportOptions &options) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file) {
    return absl::InvalidArgumentError("cannot read '" + path.str() +
                                      "': " + file.getError().message());
  }
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty()) {
    dir = ".";
  }
  auto graph = importOnnxBytes((*file)->getBuffer().str(), dir, options);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        std::string(graph.status().message()) +
                            "; while importing '" + path.str() + "'");
  }
  return graph;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> names;
  for (const graph::OpInfo *info : graph::allOps()) {
    names.push_back(info->name);
  }
  return names;
}

} // namespace osprey::compiler::onnximport
