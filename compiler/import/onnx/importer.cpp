// Converts an ONNX ModelProto into the graph IR.
#include "compiler/import/onnx/importer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/crop_and_resize.h"
#include "compiler/graph/passes/evaluator.h"
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
// ops), Det (Leibniz sums of gathered products), MelWeightMatrix (a
// constant), If (its branches inlined, selected by Where), Loop and Scan
// (unrolled: their bodies inlined once per iteration).
const char *const kRewrittenOps[] = {
    "Dropout",      "Sum",          "Mean",     "DepthToSpace",
    "SpaceToDepth", "Size",         "Trilu",    "CastLike",
    "ReduceLogSum", "ReduceLogSumExp", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "OneHot", "IsNaN", "IsInf", "Celu", "Shrink",
    "ThresholdedRelu", "Mish", "GlobalMaxPool", "Hardmax", "Range", "Tile",
    "EyeLike", "InstanceNormalization", "MeanVarianceNormalization", "LRN",
    "HannWindow", "HammingWindow", "BlackmanWindow", "Einsum", "Scatter",
    "ScatterElements", "ScatterND", "GatherND", "RNN", "GRU", "LSTM",
    "DynamicQuantizeLinear", "ReverseSequence", "GridSample", "TopK",
    "Compress", "DFT", "STFT", "Det", "MelWeightMatrix", "If", "Loop", "Scan"};

// The optimizers of ONNX's training domain (version 1), imported as the
// elementwise arithmetic of one update step.
constexpr const char *kTrainingDomain = "ai.onnx.preview.training";
const char *const kTrainingOps[] = {"Adagrad", "Momentum", "Adam"};

bool isTrainingOp(const onnx::NodeProto &node) {
  return node.domain() == kTrainingDomain &&
         llvm::is_contained(kTrainingOps, llvm::StringRef(node.op_type()));
}

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
bool isRecurrent(const std::string &opType) {
  return opType == "RNN" || opType == "GRU" || opType == "LSTM";
}

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
    COMPILER_RETURN_IF_ERROR(checkDomains(g));
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
    for (onnx::ValueInfoProto &input : *model_->mutable_graph()->mutable_input()) {
      if (!inputNames.insert(input.name()).second) {
        return absl::InvalidArgumentError("graph input '" + input.name() +
                                          "' is listed twice");
      }
      if (values_.count(input.name())) {
        // An initializer listed as an input (IR version < 4, or a default
        // value): a constant of the model.
        if (options_.inputShapes.count(input.name()) ||
            options_.inputValues.count(input.name())) {
          return absl::InvalidArgumentError(
              std::string(options_.inputValues.count(input.name())
                              ? "--input-value"
                              : "--input-shape") +
              ": graph input '" + input.name() +
              "' has an initializer: the model gives it a constant value, "
              "whose shape and value cannot be set");
        }
        continue;
      }
      COMPILER_ASSIGN_OR_RETURN(TensorType type,
                                valueInfoType(input, "graph input"));
      COMPILER_ASSIGN_OR_RETURN(values_[input.name()],
                                defineInput(input, type));
    }
    COMPILER_RETURN_IF_ERROR(checkGivenInputsExist(inputNames));
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
  // Graph input |proto| of declared |type|: a constant when
  // options_.inputValues binds it, else an input of the graph, with the
  // shape options_.inputShapes pins (each checked against |type|). |proto|
  // takes the static shape too, for ONNX's shape inference.
  absl::StatusOr<Value *> defineInput(onnx::ValueInfoProto &proto,
                                      TensorType type) {
    const std::string &name = proto.name();
    if (auto it = options_.inputShapes.find(name);
        it != options_.inputShapes.end()) {
      COMPILER_ASSIGN_OR_RETURN(
          type, givenShape(type, it->second, "--input-shape pins", name));
    }
    auto bound = options_.inputValues.find(name);
    if (bound != options_.inputValues.end()) {
      const ImportOptions::InputValue &value = bound->second;
      if (value.elementType != type.elementType()) {
        return absl::InvalidArgumentError(
            "--input-value gives graph input '" + name + "' (" + type.str() +
            ") a value of " + graph::elementTypeName(value.elementType).str());
      }
      COMPILER_ASSIGN_OR_RETURN(
          type, givenShape(type, value.dims, "--input-value gives", name));
      if (value.data.size() !=
          size_t(type.numElements()) * graph::elementByteSize(type.elementType())) {
        return absl::InvalidArgumentError(
            "--input-value for graph input '" + name + "' has " +
            std::to_string(value.data.size()) + " bytes, not those of " +
            type.str());
      }
    }
    if (type.hasRank()) {
      onnx::TensorShapeProto *shape =
          proto.mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : type.dims()) {
        if (d == graph::kDynamic) {
          shape->add_dim();
        } else {
          shape->add_dim()->set_dim_value(d);
        }
      }
    }
    if (bound != options_.inputValues.end()) {
      Op *c = graph_->createConstant(type, bound->second.data, nullptr, name);
      c->setNodeName(name);
      return c->result();
    }
    return graph_->addInput(name, type);
  }

  // |declared| with the static |dims| that |flag| gives input |name|,
  // which must have its rank and repeat its static dims.
  static absl::StatusOr<TensorType>
  givenShape(const TensorType &declared, const std::vector<int64_t> &dims,
             const std::string &flag, const std::string &name) {
    bool agrees = !declared.hasRank() ||
                  declared.rank() == static_cast<int64_t>(dims.size());
    for (size_t i = 0; agrees && declared.hasRank() && i < dims.size(); ++i) {
      agrees = declared.dim(i) == graph::kDynamic || declared.dim(i) == dims[i];
    }
    TensorType given = TensorType::ranked(declared.elementType(), dims);
    if (!agrees) {
      return absl::InvalidArgumentError(
          flag + " graph input '" + name + "' " + given.str() +
          ", which does not match its declared type " + declared.str());
    }
    return given;
  }

  // Every input named in options_ is one of the graph's |inputs|.
  absl::Status checkGivenInputsExist(const std::set<std::string> &inputs) {
    std::vector<std::pair<std::string, const char *>> names;
    for (const auto &[name, dims] : options_.inputShapes) {
      names.emplace_back(name, "--input-shape");
    }
    for (const auto &[name, value] : options_.inputValues) {
      names.emplace_back(name, "--input-value");
    }
    for (const auto &[name, flag] : names) {
      if (inputs.count(name)) {
        continue;
      }
      std::string list;
      for (const std::string &input : inputs) {
        list += (list.empty() ? "'" : ", '") + input + "'";
      }
      return absl::InvalidArgumentError(
          std::string(flag) + ": the graph has no input named '" + name +
          "' (its inputs: " +
          (list.empty() ? std::string("none") : list) + ")");
    }
    return absl::OkStatus();
  }

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
    bool found = false, training = false;
    for (const auto &opset : model_->opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") {
        opset_ = opset.version();
        found = true;
      }
      training |= opset.domain() == kTrainingDomain && opset.version() == 1;
    }
    if (!found && training) {
      // Only training-domain nodes can appear (checkSupported).
      defaultDomain_ = false;
      opset_ = kMaxOpset;
      return absl::OkStatus();
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
    listUnsupported(g, list, count);
    if (count) {
      return absl::InvalidArgumentError(
          std::to_string(count) + " unsupported operator" +
          (count > 1 ? "s" : "") + ": " + list);
    }
    return absl::OkStatus();
  }

  // Appends every unsupported node of |g| and of its subgraphs (If
  // branches) to |list|.
  void listUnsupported(const onnx::GraphProto &g, std::string &list, int &count) {
    for (int i = 0; i < g.node_size(); ++i) {
      const auto &node = g.node(i);
      for (const auto &a : node.attribute()) {
        if (a.type() == onnx::AttributeProto::GRAPH && isSupported(node.op_type())) {
          listUnsupported(a.g(), list, count);
        }
      }
      bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
      if (isTrainingOp(node)) {
        continue;
      }
      if (!defaultDomain || !isSupported(node.op_type())) {
        list += std::string(count++ ? ", " : "") + "node '" +
                nodeName(node, i) + "' (" +
                (defaultDomain ? "" : node.domain() + "::") + node.op_type() +
                ")";
      }
    }
  }

  // A default-domain node in a model that does not import the default
  // domain (one of the training domain alone).
  absl::Status checkDomains(const onnx::GraphProto &g) {
    for (int i = 0; i < g.node_size() && !defaultDomain_; ++i) {
      const auto &node = g.node(i);
      if (node.domain().empty() || node.domain() == "ai.onnx") {
        return absl::InvalidArgumentError(
            "node '" + nodeName(node, i) + "' (" + node.op_type() +
            ") is in the default ONNX domain, which the model does not import");
      }
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

  // A constant of element type |et| and |shape| from |values| (doubles, or
  // int64 for integer and bool types), named after node |name|.
  Value *constTensor(ElementType et, std::vector<int64_t> shape,
                     const std::vector<double> &values, const std::string &name) {
    Op *c = graph_->createConstant(TensorType::ranked(et, std::move(shape)),
                                   DenseData::fromDoubles(et, values));
    c->setNodeName(name);
    return c->result();
  }
  Value *constTensor(ElementType et, std::vector<int64_t> shape,
                     const std::vector<int64_t> &values, const std::string &name) {
    Op *c = graph_->createConstant(TensorType::ranked(et, std::move(shape)),
                                   DenseData::fromInt64s(et, values));
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

  // Results of at most this many bytes are folded at import.
  static constexpr size_t kImportFoldBytes = 64 << 10;

  // Whether |op| only moves elements of its constant operands, into a
  // result of |bytes| no larger than they are: such an op folds at import
  // whatever its size (weights sliced and concatenated into an LSTM's
  // gates), since folding does not multiply the model's data.
  static bool rearrangesAtMost(const Op &op, size_t bytes) {
    if (!graph::isStorageSharingOp(op) && !op.is(OpKind::Concat) &&
        !op.is(OpKind::Slice) && !op.is(OpKind::Transpose)) {
      return false;
    }
    size_t operandBytes = 0;
    for (const Value *operand : op.operands()) {
      if (operand) {
        operandBytes += operand->type().numElements() *
                        graph::elementByteSize(operand->type().elementType());
      }
    }
    return bytes <= operandBytes;
  }

  // Folds |op| (typed) when its operands are all constants (a Shape's: of
  // static type) and its results static and small: the Constant ops that
  // replace its results, in order, or none when it stays. Operands computed
  // from constants (a Range's limit from Cast(size), a Reshape's shape from
  // Shape, Gather and Concat) are then constants to the rewrites that need
  // them; the constant folding pass folds the rest later. Quantize and
  // dequantize ops stay: the QDQ fusion reads the integer weights behind
  // them.
  absl::StatusOr<std::vector<Op *>> foldAtImport(Op *op) {
    if (op->is(OpKind::QuantizeLinear) || op->is(OpKind::DequantizeLinear)) {
      return std::vector<Op *>{};
    }
    bool shape = op->is(OpKind::Shape);
    bool foldable = shape ? op->operand(0)->type().hasStaticShape()
                          : op->numOperands() > 0;
    for (Value *operand : op->operands()) {
      foldable &= shape || !operand || graph::isConstant(operand);
    }
    std::vector<TensorType> types;
    size_t bytes = 0;
    for (Value *result : op->results()) {
      foldable &= result->type().hasStaticShape();
      if (!foldable) {
        return std::vector<Op *>{};
      }
      types.push_back(result->type());
      bytes += result->type().numElements() *
               graph::elementByteSize(result->type().elementType());
    }
    if (!foldable || (bytes > kImportFoldBytes && !rearrangesAtMost(*op, bytes))) {
      return std::vector<Op *>{};
    }
    auto folded = graph::evaluateOp(*op, types);
    if (!folded.ok()) {
      if (absl::IsUnimplemented(folded.status())) {
        return std::vector<Op *>{};
      }
      return folded.status();
    }
    // |op| was just created: nothing uses its results yet.
    std::vector<Op *> constants;
    for (unsigned i = 0; i < op->numResults(); ++i) {
      Op *c = graph_->createConstant(types[i], std::move((*folded)[i]), op,
                                     op->result(i)->name());
      c->setNodeName(op->nodeName());
      constants.push_back(c);
    }
    graph_->eraseOp(op);
    return constants;
  }

  // Creates |kind| with one result named |resultName| (empty: unnamed) and
  // types it with the shape rules (a Constant when it folds).
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
    COMPILER_ASSIGN_OR_RETURN(std::vector<Op *> folded, foldAtImport(op));
    return folded.empty() ? op : folded[0];
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
  // Names |node|'s output |k| (0 by default) |result|; an absent or empty
  // output name defines nothing.
  absl::Status defineOutput(const onnx::NodeProto &node, int index,
                            Value *result, int k = 0) {
    if (k >= node.output_size() || node.output(k).empty()) {
      return absl::OkStatus();
    }
    if (values_.count(node.output(k))) {
      return nodeError(node, index,
                       "output '" + node.output(k) + "' is already defined");
    }
    values_[node.output(k)] = result;
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

  // Einsum as broadcasting arithmetic. Every operand's axes are moved to one
  // index space (the output's labels, then the summed ones): a label twice
  // in one operand keeps its diagonal first (the operand times an identity
  // mask, summed over the second axis), the axes are transposed into the
  // space's order and the absent labels unsqueezed; the operands are then
  // multiplied with broadcasting and the summed labels reduced. Ellipsis
  // dims are labels of their own, aligned from the right (-1 the last).
  absl::Status importEinsum(const onnx::NodeProto &node, int index,
                            const std::vector<Value *> &operands,
                            const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    auto eq = attrs.find("equation");
    if (eq == attrs.end() || !eq->second.isString()) {
      return nodeError(node, index, "needs the string attribute 'equation'");
    }
    std::string text;
    for (char ch : eq->second.getString()) {
      if (ch != ' ') {
        text += ch;
      }
    }
    const size_t arrow = text.find("->");
    llvm::SmallVector<llvm::StringRef> terms;
    llvm::StringRef(text).substr(0, arrow).split(terms, ',');
    if (terms.size() != operands.size()) {
      return nodeError(node, index,
                       "the equation '" + text + "' names " +
                           std::to_string(terms.size()) + " inputs, the node has " +
                           std::to_string(operands.size()));
    }
    auto badTerm = [&](llvm::StringRef term, const std::string &why) {
      return nodeError(node, index,
                       "term '" + term.str() + "' of '" + text + "': " + why);
    };
    // A term's labels; |rank| < 0: the output (its ellipsis is all of them).
    int64_t ellipsisRank = 0;
    auto parse = [&](llvm::StringRef term, int64_t rank,
                     std::vector<int> &labels) -> absl::Status {
      size_t dots = term.find("...");
      if (dots != llvm::StringRef::npos &&
          term.find("...", dots + 3) != llvm::StringRef::npos) {
        return badTerm(term, "more than one ellipsis");
      }
      int64_t letters = int64_t(term.size()) - (dots == llvm::StringRef::npos ? 0 : 3);
      int64_t dotted = rank < 0 ? ellipsisRank : rank - letters;
      if (rank >= 0 && (dots == llvm::StringRef::npos ? dotted != 0 : dotted < 0)) {
        return badTerm(term, "does not match the operand's rank " +
                                 std::to_string(rank));
      }
      for (size_t i = 0; i < term.size(); ++i) {
        if (i == dots) {
          for (int64_t k = dotted; k > 0; --k) {
            labels.push_back(-int(k));
          }
          i += 2;
        } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
          labels.push_back(term[i]);
        } else {
          return badTerm(term, std::string("'") + term[i] + "' is not a letter");
        }
      }
      ellipsisRank = std::max(ellipsisRank, dotted);
      return absl::OkStatus();
    };
    std::vector<std::vector<int>> labels(operands.size());
    std::map<int, int64_t> extent;
    std::map<int, int> uses;
    for (size_t i = 0; i < operands.size(); ++i) {
      if (!operands[i] || !operands[i]->type().hasStaticShape()) {
        return unimplemented(node, index, "operands of dynamic shape");
      }
      const TensorType &t = operands[i]->type();
      COMPILER_RETURN_IF_ERROR(parse(terms[i], t.rank(), labels[i]));
      for (size_t a = 0; a < labels[i].size(); ++a) {
        int64_t d = t.dims()[a];
        auto [it, fresh] = extent.emplace(labels[i][a], d);
        if (!fresh && it->second != d && it->second != 1 && d != 1) {
          return nodeError(node, index,
                           "label '" +
                               std::string(labels[i][a] < 0 ? "..."
                                                             : std::string(1, char(labels[i][a]))) +
                               "' has extents " + std::to_string(it->second) +
                               " and " + std::to_string(d));
        }
        it->second = std::max(it->second, d);
        ++uses[labels[i][a]];
      }
    }
    std::vector<int> space;
    if (arrow != std::string::npos) {
      llvm::StringRef out = llvm::StringRef(text).substr(arrow + 2);
      COMPILER_RETURN_IF_ERROR(parse(out, -1, space));
      for (size_t a = 0; a < space.size(); ++a) {
        if (!uses.count(space[a]) ||
            llvm::is_contained(llvm::ArrayRef(space).take_front(a), space[a])) {
          return badTerm(out, "an output label must appear in the inputs, once");
        }
      }
    } else { // the ellipsis, then the labels used once, alphabetically
      for (int64_t k = ellipsisRank; k > 0; --k) {
        space.push_back(-int(k));
      }
      for (auto [label, count] : uses) {
        if (label > 0 && count == 1) {
          space.push_back(label);
        }
      }
    }
    const size_t outRank = space.size();
    for (const std::vector<int> &ls : labels) {
      for (int label : ls) {
        if (!llvm::is_contained(space, label)) {
          space.push_back(label);
        }
      }
    }
    Value *product = nullptr;
    for (size_t i = 0; i < operands.size(); ++i) {
      Value *v = operands[i];
      std::vector<int> &ls = labels[i];
      const ElementType et = v->type().elementType();
      for (size_t q = 1; q < ls.size(); ++q) {
        auto p = std::find(ls.begin(), ls.begin() + q, ls[q]) - ls.begin();
        if (size_t(p) == q) {
          continue;
        }
        const int64_t n = v->type().dims()[p];
        if (v->type().dims()[q] != n) {
          return badTerm(terms[i], "a repeated label needs equal extents");
        }
        std::vector<int64_t> shape(ls.size(), 1);
        shape[p] = shape[q] = n;
        std::vector<double> eye(n * n, 0.0);
        for (int64_t k = 0; k < n; ++k) {
          eye[k * n + k] = 1;
        }
        Op *mask = graph_->createConstant(TensorType::ranked(et, shape),
                                          DenseData::fromDoubles(et, eye));
        mask->setNodeName(name);
        COMPILER_ASSIGN_OR_RETURN(v, rewriteOp(name, "Mul", {v, mask->result()}));
        COMPILER_ASSIGN_OR_RETURN(
            v, rewriteOp(name, "ReduceSum", {v, constInts({int64_t(q)}, name)},
                         {{"keepdims", Attribute(int64_t(0))}}));
        ls.erase(ls.begin() + q);
        --q;
      }
      std::vector<int64_t> perm(ls.size());
      for (size_t a = 0; a < perm.size(); ++a) {
        perm[a] = int64_t(a);
      }
      auto position = [&](int label) {
        return std::find(space.begin(), space.end(), label) - space.begin();
      };
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return position(ls[a]) < position(ls[b]);
      });
      if (!std::is_sorted(perm.begin(), perm.end())) {
        COMPILER_ASSIGN_OR_RETURN(
            v, rewriteOp(name, "Transpose", {v},
                         {{"perm", Attribute(graph::IntList(perm))}}));
      }
      std::vector<int64_t> missing;
      for (size_t a = 0; a < space.size(); ++a) {
        if (!llvm::is_contained(ls, space[a])) {
          missing.push_back(int64_t(a));
        }
      }
      if (!missing.empty()) {
        COMPILER_ASSIGN_OR_RETURN(
            v, rewriteOp(name, "Unsqueeze", {v, constInts(missing, name)}));
      }
      if (product) {
        COMPILER_ASSIGN_OR_RETURN(product, rewriteOp(name, "Mul", {product, v}));
      } else {
        product = v;
      }
    }
    std::vector<int64_t> summed;
    for (size_t a = outRank; a < space.size(); ++a) {
      summed.push_back(int64_t(a));
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * out,
        summed.empty()
            ? rewriteOp(name, "Identity", {product}, {}, node.output(0))
            : rewriteOp(name, "ReduceSum", {product, constInts(summed, name)},
                        {{"keepdims", Attribute(int64_t(0))}}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // RNN, GRU and LSTM unrolled over their (static) sequence: per direction,
  // the input projections of every step are one MatMul with the gates'
  // weights (constants, transposed at import) and the summed biases; each
  // step adds the recurrent MatMul of the previous state, slices the gates
  // and applies the activations. Constant sequence_lens mask the steps past
  // each batch element's length (state kept, output 0), which also starts
  // reverse directions at each element's own last step.
  absl::Status importRecurrent(const onnx::NodeProto &node, int index,
                               const std::vector<Value *> &operands,
                               const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const std::string &type = node.op_type();
    const int64_t gates = type == "LSTM" ? 4 : type == "GRU" ? 3 : 1;
    auto operand = [&](size_t i) {
      return i < operands.size() ? operands[i] : nullptr;
    };
    Value *x = operand(0);
    if (!x || !operand(1) || !operand(2)) {
      return nodeError(node, index, "expected X, W and R");
    }
    if (!x->type().hasStaticShape() || x->type().rank() != 3) {
      return unimplemented(node, index,
                           "an input X of dynamic shape (the sequence is "
                           "unrolled)");
    }
    if (x->type().elementType() != ElementType::F32) {
      return unimplemented(node, index, "element types other than f32");
    }
    auto intAttr = [&](const char *attr, int64_t fallback) {
      auto it = attrs.find(attr);
      return it != attrs.end() && it->second.isInt() ? it->second.getInt()
                                                     : fallback;
    };
    const int64_t layout = intAttr("layout", 0);
    std::string direction = "forward";
    if (auto it = attrs.find("direction"); it != attrs.end()) {
      direction = it->second.isString() ? it->second.getString() : "";
    }
    if (direction != "forward" && direction != "reverse" &&
        direction != "bidirectional") {
      return nodeError(node, index, "unknown direction '" + direction + "'");
    }
    if (intAttr("input_forget", 0) != 0) {
      return unimplemented(node, index, "input_forget (coupled gates)");
    }
    const int64_t dirs = direction == "bidirectional" ? 2 : 1;
    if (layout == 1) {
      COMPILER_ASSIGN_OR_RETURN(
          x, rewriteOp(name, "Transpose", {x},
                       {{"perm", Attribute(graph::IntList{1, 0, 2})}}));
    }
    const int64_t steps = x->type().dims()[0], batch = x->type().dims()[1],
                  inputs = x->type().dims()[2];
    auto w = graph::getConstantFloats(operand(1));
    auto r = graph::getConstantFloats(operand(2));
    if (!w || !r) {
      return unimplemented(node, index, "weights W and R that are not constants");
    }
    // R holds dirs * gates * hidden^2 values.
    const int64_t h = static_cast<int64_t>(
        std::llround(std::sqrt(double(r->size()) / double(dirs * gates))));
    if (intAttr("hidden_size", h) != h || h * h * dirs * gates != int64_t(r->size()) ||
        int64_t(w->size()) != dirs * gates * h * inputs) {
      return nodeError(node, index,
                       "W, R and hidden_size do not match the input and "
                       "direction count");
    }
    std::vector<double> bias(dirs * 2 * gates * h, 0.0);
    if (Value *bv = operand(3)) {
      auto b = graph::getConstantFloats(bv);
      if (!b) {
        return unimplemented(node, index, "a bias B that is not a constant");
      }
      if (b->size() != bias.size()) {
        return nodeError(node, index, "B must hold 2 * gates * hidden per direction");
      }
      bias = *b;
    }
    std::vector<int64_t> lengths(batch, steps);
    if (Value *lv = operand(4)) {
      auto l = graph::getConstantInts(lv);
      if (!l) {
        return unimplemented(node, index, "run-time sequence_lens");
      }
      if (int64_t(l->size()) != batch) {
        return nodeError(node, index, "sequence_lens must hold one length per batch element");
      }
      for (int64_t v : *l) {
        if (v < 0 || v > steps) {
          return nodeError(node, index, "a sequence length is out of range");
        }
      }
      lengths = *l;
    }
    std::vector<double> peep;
    if (Value *pv = operand(7)) {
      auto p = graph::getConstantFloats(pv);
      if (!p || int64_t(p->size()) != dirs * 3 * h) {
        return unimplemented(node, index, "peepholes P that are not constants of 3 * hidden per direction");
      }
      peep = *p;
    }
    double clip = 0;
    if (auto it = attrs.find("clip"); it != attrs.end()) {
      clip = it->second.getFloat();
    }
    // Activations: per direction f (and g, h), with defaults.
    std::vector<std::string> acts;
    std::vector<double> alphas, betas;
    for (const auto &a : node.attribute()) {
      if (a.name() == "activations") {
        acts.assign(a.strings().begin(), a.strings().end());
      } else if (a.name() == "activation_alpha") {
        alphas.assign(a.floats().begin(), a.floats().end());
      } else if (a.name() == "activation_beta") {
        betas.assign(a.floats().begin(), a.floats().end());
      }
    }
    const size_t perDir = type == "LSTM" ? 3 : type == "GRU" ? 2 : 1;
    if (acts.empty()) {
      for (int64_t d = 0; d < dirs; ++d) {
        for (size_t k = 0; k < perDir; ++k) {
          acts.push_back(k == 0 && type != "RNN" ? "Sigmoid" : "Tanh");
        }
      }
    }
    if (acts.size() != perDir * dirs) {
      return nodeError(node, index,
                       "expected " + std::to_string(perDir * dirs) +
                           " activations");
    }
    struct Activation {
      std::string kind;
      std::map<std::string, Attribute> attrs;
    };
    std::vector<Activation> fns;
    size_t nextAlpha = 0, nextBeta = 0;
    for (const std::string &a : acts) {
      Activation fn{a, {}};
      if (a == "HardSigmoid" || a == "LeakyRelu") {
        double defAlpha = a == "HardSigmoid" ? 0.2 : 0.01;
        fn.attrs["alpha"] = Attribute(nextAlpha < alphas.size() ? alphas[nextAlpha++] : defAlpha);
        if (a == "HardSigmoid") {
          fn.attrs["beta"] = Attribute(nextBeta < betas.size() ? betas[nextBeta++] : 0.5);
        }
      } else if (a != "Sigmoid" && a != "Tanh" && a != "Relu") {
        return unimplemented(node, index, "activation '" + a + "'");
      }
      fns.push_back(std::move(fn));
    }
    auto constant = [&](std::vector<int64_t> shape, const std::vector<double> &v) {
      return constTensor(ElementType::F32, std::move(shape), v, name);
    };
    auto slice = [&](Value *v, int64_t axis, int64_t begin, int64_t end) {
      return rewriteOp(name, "Slice",
                       {v, constInts({begin}, name), constInts({end}, name),
                        constInts({axis}, name)});
    };
    auto apply = [&](const Activation &fn, Value *v) {
      return rewriteOp(name, fn.kind, {v}, fn.attrs);
    };
    auto clipped = [&](Value *v) -> absl::StatusOr<Value *> {
      if (clip <= 0) {
        return v;
      }
      return rewriteOp(name, "Clip",
                       {v, constScalar(ElementType::F32, -clip, name),
                        constScalar(ElementType::F32, clip, name)});
    };
    auto initial = [&](Value *v, int64_t d) -> absl::StatusOr<Value *> {
      if (!v) {
        return constant({batch, h}, std::vector<double>(batch * h, 0.0));
      }
      if (!v->type().hasStaticShape() || v->type().rank() != 3) {
        return nodeError(node, index, "initial states must be 3-D of static shape");
      }
      return rewriteOp(name, "Gather",
                       {v, constScalar(ElementType::I64, double(d), name)},
                       {{"axis", Attribute(int64_t(layout == 1 ? 1 : 0))}});
    };
    const bool lbr = intAttr("linear_before_reset", 0) != 0;
    const bool masked = llvm::any_of(lengths, [&](int64_t l) { return l != steps; });
    std::vector<Value *> ys(dirs), lastH(dirs), lastC(dirs);
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      // W_d^T [I, G*H], R_d^T [H, G*H] (GRU's h gate apart when its reset
      // gate multiplies the state first), biases summed.
      std::vector<double> wt(inputs * gates * h), rt(h * gates * h), bsum(gates * h);
      for (int64_t o = 0; o < gates * h; ++o) {
        for (int64_t i = 0; i < inputs; ++i) {
          wt[i * gates * h + o] = (*w)[(d * gates * h + o) * inputs + i];
        }
        for (int64_t i = 0; i < h; ++i) {
          rt[i * gates * h + o] = (*r)[(d * gates * h + o) * h + i];
        }
        const double wb = bias[d * 2 * gates * h + o];
        const double rb = bias[d * 2 * gates * h + gates * h + o];
        // GRU's h gate keeps its recurrent bias apart (inside the reset).
        bsum[o] = type == "GRU" && o >= 2 * h ? wb : wb + rb;
      }
      std::vector<double> rbH(h);
      for (int64_t o = 0; o < h; ++o) {
        rbH[o] = bias[d * 2 * gates * h + gates * h + 2 * h + o];
      }
      COMPILER_ASSIGN_OR_RETURN(
          Value * flatX, rewriteOp(name, "Reshape", {x, constInts({steps * batch, inputs}, name)}));
      COMPILER_ASSIGN_OR_RETURN(
          Value * proj, rewriteOp(name, "MatMul", {flatX, constant({inputs, gates * h}, wt)}));
      COMPILER_ASSIGN_OR_RETURN(
          proj, rewriteOp(name, "Add", {proj, constant({gates * h}, bsum)}));
      COMPILER_ASSIGN_OR_RETURN(
          proj, rewriteOp(name, "Reshape", {proj, constInts({steps, batch, gates * h}, name)}));
      Value *rAll = constant({h, gates * h}, rt);
      COMPILER_ASSIGN_OR_RETURN(Value * hState, initial(operand(5), d));
      Value *cState = nullptr;
      if (type == "LSTM") {
        COMPILER_ASSIGN_OR_RETURN(cState, initial(operand(6), d));
      }
      const Activation &f = fns[d * perDir];
      std::vector<Value *> outs(steps);
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t t = reverse ? steps - 1 - s : s;
        COMPILER_ASSIGN_OR_RETURN(
            Value * xt,
            rewriteOp(name, "Gather",
                      {proj, constScalar(ElementType::I64, double(t), name)},
                      {{"axis", Attribute(int64_t(0))}}));
        Value *hNew = nullptr, *cNew = nullptr;
        if (type == "GRU") {
          COMPILER_ASSIGN_OR_RETURN(Value * rec, rewriteOp(name, "MatMul", {hState, rAll}));
          COMPILER_ASSIGN_OR_RETURN(Value * xzr, slice(xt, 1, 0, 2 * h));
          COMPILER_ASSIGN_OR_RETURN(Value * hzr, slice(rec, 1, 0, 2 * h));
          COMPILER_ASSIGN_OR_RETURN(Value * zr, rewriteOp(name, "Add", {xzr, hzr}));
          COMPILER_ASSIGN_OR_RETURN(zr, clipped(zr));
          COMPILER_ASSIGN_OR_RETURN(zr, apply(f, zr));
          COMPILER_ASSIGN_OR_RETURN(Value * z, slice(zr, 1, 0, h));
          COMPILER_ASSIGN_OR_RETURN(Value * rg, slice(zr, 1, h, 2 * h));
          COMPILER_ASSIGN_OR_RETURN(Value * xh, slice(xt, 1, 2 * h, 3 * h));
          Value *hh = nullptr;
          if (lbr) {
            COMPILER_ASSIGN_OR_RETURN(Value * rh, slice(rec, 1, 2 * h, 3 * h));
            COMPILER_ASSIGN_OR_RETURN(rh, rewriteOp(name, "Add", {rh, constant({h}, rbH)}));
            COMPILER_ASSIGN_OR_RETURN(rh, rewriteOp(name, "Mul", {rg, rh}));
            COMPILER_ASSIGN_OR_RETURN(hh, rewriteOp(name, "Add", {xh, rh}));
          } else {
            COMPILER_ASSIGN_OR_RETURN(Value * reset, rewriteOp(name, "Mul", {rg, hState}));
            COMPILER_ASSIGN_OR_RETURN(Value * rH, slice(rAll, 1, 2 * h, 3 * h));
            COMPILER_ASSIGN_OR_RETURN(Value * rh, rewriteOp(name, "MatMul", {reset, rH}));
            COMPILER_ASSIGN_OR_RETURN(rh, rewriteOp(name, "Add", {rh, constant({h}, rbH)}));
            COMPILER_ASSIGN_OR_RETURN(hh, rewriteOp(name, "Add", {xh, rh}));
          }
          COMPILER_ASSIGN_OR_RETURN(hh, clipped(hh));
          COMPILER_ASSIGN_OR_RETURN(hh, apply(fns[d * perDir + 1], hh));
          // (1 - z) * hh + z * H = hh + z * (H - hh)
          COMPILER_ASSIGN_OR_RETURN(Value * diff, rewriteOp(name, "Sub", {hState, hh}));
          COMPILER_ASSIGN_OR_RETURN(diff, rewriteOp(name, "Mul", {z, diff}));
          COMPILER_ASSIGN_OR_RETURN(hNew, rewriteOp(name, "Add", {hh, diff}));
        } else {
          COMPILER_ASSIGN_OR_RETURN(Value * rec, rewriteOp(name, "MatMul", {hState, rAll}));
          COMPILER_ASSIGN_OR_RETURN(Value * pre, rewriteOp(name, "Add", {xt, rec}));
          if (type == "RNN") {
            COMPILER_ASSIGN_OR_RETURN(pre, clipped(pre));
            COMPILER_ASSIGN_OR_RETURN(hNew, apply(f, pre));
          } else {
            // Gate order i, o, f, c; peepholes i, o, f.
            auto gate = [&](int64_t g) { return slice(pre, 1, g * h, (g + 1) * h); };
            auto peephole = [&](Value *v, int64_t k, Value *c) -> absl::StatusOr<Value *> {
              if (peep.empty()) {
                return v;
              }
              std::vector<double> pk(peep.begin() + (d * 3 + k) * h,
                                     peep.begin() + (d * 3 + k + 1) * h);
              COMPILER_ASSIGN_OR_RETURN(Value * m, rewriteOp(name, "Mul", {c, constant({h}, pk)}));
              return rewriteOp(name, "Add", {v, m});
            };
            COMPILER_ASSIGN_OR_RETURN(Value * gi, gate(0));
            COMPILER_ASSIGN_OR_RETURN(gi, peephole(gi, 0, cState));
            COMPILER_ASSIGN_OR_RETURN(gi, clipped(gi));
            COMPILER_ASSIGN_OR_RETURN(gi, apply(f, gi));
            COMPILER_ASSIGN_OR_RETURN(Value * gf, gate(2));
            COMPILER_ASSIGN_OR_RETURN(gf, peephole(gf, 2, cState));
            COMPILER_ASSIGN_OR_RETURN(gf, clipped(gf));
            COMPILER_ASSIGN_OR_RETURN(gf, apply(f, gf));
            COMPILER_ASSIGN_OR_RETURN(Value * gc, gate(3));
            COMPILER_ASSIGN_OR_RETURN(gc, clipped(gc));
            COMPILER_ASSIGN_OR_RETURN(gc, apply(fns[d * perDir + 1], gc));
            COMPILER_ASSIGN_OR_RETURN(Value * keep, rewriteOp(name, "Mul", {gf, cState}));
            COMPILER_ASSIGN_OR_RETURN(Value * put, rewriteOp(name, "Mul", {gi, gc}));
            COMPILER_ASSIGN_OR_RETURN(cNew, rewriteOp(name, "Add", {keep, put}));
            COMPILER_ASSIGN_OR_RETURN(Value * go, gate(1));
            COMPILER_ASSIGN_OR_RETURN(go, peephole(go, 1, cNew));
            COMPILER_ASSIGN_OR_RETURN(go, clipped(go));
            COMPILER_ASSIGN_OR_RETURN(go, apply(f, go));
            COMPILER_ASSIGN_OR_RETURN(Value * hc, apply(fns[d * perDir + 2], cNew));
            COMPILER_ASSIGN_OR_RETURN(hNew, rewriteOp(name, "Mul", {go, hc}));
          }
        }
        Value *y = hNew;
        if (masked) {
          std::vector<int64_t> valid(batch);
          for (int64_t b = 0; b < batch; ++b) {
            valid[b] = t < lengths[b];
          }
          Op *m = graph_->createConstant(TensorType::ranked(ElementType::Bool, {batch, 1}),
                                         DenseData::fromInt64s(ElementType::Bool, valid));
          m->setNodeName(name);
          COMPILER_ASSIGN_OR_RETURN(hNew, rewriteOp(name, "Where", {m->result(), hNew, hState}));
          if (cNew) {
            COMPILER_ASSIGN_OR_RETURN(cNew, rewriteOp(name, "Where", {m->result(), cNew, cState}));
          }
          COMPILER_ASSIGN_OR_RETURN(
              y, rewriteOp(name, "Where", {m->result(), y, constScalar(ElementType::F32, 0, name)}));
        }
        hState = hNew;
        cState = cNew;
        COMPILER_ASSIGN_OR_RETURN(outs[t], rewriteOp(name, "Unsqueeze", {y, constInts({0, 1}, name)}));
      }
      COMPILER_ASSIGN_OR_RETURN(ys[d], rewriteOp(name, "Concat", outs, {{"axis", Attribute(int64_t(0))}}));
      lastH[d] = hState;
      lastC[d] = cState;
    }
    auto define = [&](int k, Value *v) -> absl::Status {
      if (k >= node.output_size() || node.output(k).empty()) {
        return absl::OkStatus();
      }
      COMPILER_ASSIGN_OR_RETURN(v, rewriteOp(name, "Identity", {v}, {}, node.output(k)));
      return defineOutput(node, index, v, k);
    };
    // Y [T, D, B, H] (layout 1: [B, T, D, H]); Y_h, Y_c [D, B, H] (layout
    // 1: [B, D, H]).
    auto joinStates = [&](std::vector<Value *> &states) -> absl::StatusOr<Value *> {
      std::vector<Value *> parts;
      for (Value *s : states) {
        COMPILER_ASSIGN_OR_RETURN(Value * u, rewriteOp(name, "Unsqueeze", {s, constInts({0}, name)}));
        parts.push_back(u);
      }
      Value *joined = parts[0];
      if (parts.size() > 1) {
        COMPILER_ASSIGN_OR_RETURN(joined, rewriteOp(name, "Concat", parts, {{"axis", Attribute(int64_t(0))}}));
      }
      if (layout == 1) {
        return rewriteOp(name, "Transpose", {joined}, {{"perm", Attribute(graph::IntList{1, 0, 2})}});
      }
      return joined;
    };
    Value *y = ys[0];
    if (dirs > 1) {
      COMPILER_ASSIGN_OR_RETURN(y, rewriteOp(name, "Concat", ys, {{"axis", Attribute(int64_t(1))}}));
    }
    if (layout == 1) {
      COMPILER_ASSIGN_OR_RETURN(
          y, rewriteOp(name, "Transpose", {y}, {{"perm", Attribute(graph::IntList{2, 0, 1, 3})}}));
    }
    COMPILER_RETURN_IF_ERROR(define(0, y));
    COMPILER_ASSIGN_OR_RETURN(Value * yh, joinStates(lastH));
    COMPILER_RETURN_IF_ERROR(define(1, yh));
    if (type == "LSTM") {
      COMPILER_ASSIGN_OR_RETURN(Value * yc, joinStates(lastC));
      COMPILER_RETURN_IF_ERROR(define(2, yc));
    }
    return absl::OkStatus();
  }

  // round(x / scale) + zero point, saturated to |type| and cast to it, in
  // f32 arithmetic (scale and zero point may be run-time values; |zp| may be
  // null for 0). Round is to nearest even, as the ONNX definition.
  absl::StatusOr<Value *> quantizeArithmetic(const std::string &name, Value *x,
                                             Value *scale, Value *zp,
                                             ElementType type,
                                             const std::string &resultName) {
    COMPILER_ASSIGN_OR_RETURN(Value * q, rewriteOp(name, "Div", {x, scale}));
    COMPILER_ASSIGN_OR_RETURN(q, rewriteOp(name, "Round", {q}));
    if (zp) {
      COMPILER_ASSIGN_OR_RETURN(
          Value * zf, rewriteOp(name, "Cast", {zp}, {{"to", Attribute("f32")}}));
      COMPILER_ASSIGN_OR_RETURN(q, rewriteOp(name, "Add", {q, zf}));
    }
    COMPILER_ASSIGN_OR_RETURN(
        q, rewriteOp(name, "Clip",
                     {q,
                      constScalar(ElementType::F32,
                                  double(graph::integerTypeMin(type)), name),
                      constScalar(ElementType::F32,
                                  double(graph::integerTypeMax(type)), name)}));
    return rewriteOp(name, "Cast", {q},
                     {{"to", Attribute(graph::elementTypeName(type).str())}},
                     resultName);
  }

  // QuantizeLinear and DequantizeLinear whose scale or zero point is
  // computed at run time: the arithmetic of their definitions (per tensor,
  // or per channel along axis), no integer op for the QDQ fusion to use.
  absl::Status importRunTimeQuantize(const onnx::NodeProto &node, int index,
                                     const std::vector<Value *> &operands,
                                     const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    Value *x = operands[0];
    Value *scale = operands[1];
    Value *zp = operands.size() > 2 ? operands[2] : nullptr;
    if (!x || !x->type().hasRank() || !scale->type().hasStaticShape() ||
        scale->type().rank() > 1) {
      return nodeError(node, index,
                       "needs a ranked input and a scalar or 1-D scale");
    }
    if (scale->type().elementType() != ElementType::F32) {
      return unimplemented(node, index, "a scale that is not f32");
    }
    if (scale->type().rank() == 1) {
      // Per channel: the scale (and zero point) along |axis|.
      COMPILER_ASSIGN_OR_RETURN(double axisAttr,
                                numberAttr(node, index, attrs, "axis", 1));
      int64_t rank = x->type().rank(), axis = int64_t(axisAttr);
      if (axis < -rank || axis >= rank) {
        return nodeError(node, index, "axis is out of range");
      }
      axis = axis < 0 ? axis + rank : axis;
      std::vector<int64_t> shape(rank - axis, 1);
      shape[0] = scale->type().dims()[0];
      COMPILER_ASSIGN_OR_RETURN(
          scale, rewriteOp(name, "Reshape", {scale, constInts(shape, name)}));
      if (zp) {
        COMPILER_ASSIGN_OR_RETURN(
            zp, rewriteOp(name, "Reshape", {zp, constInts(shape, name)}));
      }
    }
    if (node.op_type() == "QuantizeLinear") {
      ElementType type = zp ? zp->type().elementType() : ElementType::U8;
      if (!graph::isQuantizedType(type)) {
        return unimplemented(node, index, "quantization to " +
                                              graph::elementTypeName(type).str());
      }
      COMPILER_ASSIGN_OR_RETURN(
          Value * y, quantizeArithmetic(name, x, scale, zp, type, node.output(0)));
      return defineOutput(node, index, y);
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * y, rewriteOp(name, "Cast", {x}, {{"to", Attribute("f32")}}));
    if (zp) {
      COMPILER_ASSIGN_OR_RETURN(
          Value * zf, rewriteOp(name, "Cast", {zp}, {{"to", Attribute("f32")}}));
      COMPILER_ASSIGN_OR_RETURN(y, rewriteOp(name, "Sub", {y, zf}));
    }
    COMPILER_ASSIGN_OR_RETURN(
        y, rewriteOp(name, "Mul", {y, scale}, {}, node.output(0)));
    return defineOutput(node, index, y);
  }

  // DynamicQuantizeLinear: uint8 with the scale (max(x, 0) - min(x, 0)) /
  // 255 and the zero point round(-min / scale) saturated, all computed at
  // run time; its three outputs y, y_scale, y_zero_point.
  absl::Status importDynamicQuantize(const onnx::NodeProto &node, int index,
                                     const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0] ||
        operands[0]->type().elementType() != ElementType::F32) {
      return nodeError(node, index, "expected one f32 operand");
    }
    Value *x = operands[0];
    Value *zero = constScalar(ElementType::F32, 0, name);
    COMPILER_ASSIGN_OR_RETURN(
        Value * lo, rewriteOp(name, "ReduceMin", {x},
                              {{"keepdims", Attribute(int64_t(0))}}));
    COMPILER_ASSIGN_OR_RETURN(lo, rewriteOp(name, "Min", {lo, zero}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * hi, rewriteOp(name, "ReduceMax", {x},
                              {{"keepdims", Attribute(int64_t(0))}}));
    COMPILER_ASSIGN_OR_RETURN(hi, rewriteOp(name, "Max", {hi, zero}));
    COMPILER_ASSIGN_OR_RETURN(Value * scale, rewriteOp(name, "Sub", {hi, lo}));
    COMPILER_ASSIGN_OR_RETURN(
        scale, rewriteOp(name, "Div",
                         {scale, constScalar(ElementType::F32, 255, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * negLo, rewriteOp(name, "Neg", {lo}));
    std::string zpName = node.output_size() > 2 ? node.output(2) : "";
    COMPILER_ASSIGN_OR_RETURN(
        Value * zp, quantizeArithmetic(name, negLo, scale, nullptr,
                                       ElementType::U8, zpName));
    COMPILER_ASSIGN_OR_RETURN(
        Value * y, quantizeArithmetic(name, x, scale, zp, ElementType::U8,
                                      node.output(0)));
    std::vector<Value *> results = {y, scale, zp};
    for (int k = 0; k < node.output_size() && k < 3; ++k) {
      if (node.output(k).empty()) {
        continue;
      }
      Value *v = results[k];
      if (k == 1) {
        COMPILER_ASSIGN_OR_RETURN(
            v, rewriteOp(name, "Identity", {v}, {}, node.output(k)));
      }
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, v, k));
    }
    return absl::OkStatus();
  }

  // Constant indices of a scatter or gather: int64 values, negatives
  // counted from the end of the axis they index (|extents|, cycled), each
  // checked to lie in range.
  absl::StatusOr<std::vector<int64_t>>
  constantIndices(const onnx::NodeProto &node, int index, Value *indices,
                  llvm::ArrayRef<int64_t> extents) {
    auto values = graph::getConstantInts(indices);
    if (!values) {
      return unimplemented(node, index,
                           "run-time indices (the indices must be constants)");
    }
    for (size_t i = 0; i < values->size(); ++i) {
      int64_t n = extents[i % extents.size()];
      int64_t &v = (*values)[i];
      if (v < -n || v >= n) {
        return nodeError(node, index,
                         "index " + std::to_string(v) +
                             " is out of range for an axis of extent " +
                             std::to_string(n));
      }
      v = v < 0 ? v + n : v;
    }
    return *values;
  }

  // Elements of |v| (static shape |dims|) picked by the constant flat
  // positions |picks| (shape |shape|): a Gather from the flattened tensor.
  absl::StatusOr<Value *> pickElements(const std::string &name, Value *v,
                                       const std::vector<int64_t> &picks,
                                       std::vector<int64_t> shape) {
    const int64_t count = v->type().numElements();
    COMPILER_ASSIGN_OR_RETURN(
        Value * flat, rewriteOp(name, "Reshape", {v, constInts({count}, name)}));
    return rewriteOp(name, "Gather",
                     {flat, constTensor(ElementType::I64, std::move(shape),
                                        picks, name)},
                     {{"axis", Attribute(int64_t(0))}});
  }

  // ScatterElements (and opset-10 Scatter) and ScatterND of constant
  // indices. The target of every update element is known at import, so the
  // output is the data with, in layer j, the element positions written by
  // a j-th update replaced by Where(mask_j, reduce(out, update), out): the
  // updates picked by a constant Gather (reduction none: the last writer
  // only; add, mul, max, min: every writer in order).
  absl::Status importScatter(const onnx::NodeProto &node, int index,
                             const std::vector<Value *> &operands,
                             const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 3 || !operands[0] || !operands[1] || !operands[2]) {
      return nodeError(node, index, "expected data, indices and updates");
    }
    Value *data = operands[0], *updates = operands[2];
    const TensorType &dt = data->type(), &it = operands[1]->type(),
                     &ut = updates->type();
    if (!dt.hasStaticShape() || !it.hasStaticShape() || !ut.hasStaticShape()) {
      return unimplemented(node, index, "operands of dynamic shape");
    }
    if (ut.elementType() != dt.elementType()) {
      return nodeError(node, index, "updates and data differ in element type");
    }
    std::string reduction = "none";
    if (auto r = attrs.find("reduction"); r != attrs.end()) {
      if (!r->second.isString()) {
        return nodeError(node, index, "attribute 'reduction' must be a string");
      }
      reduction = r->second.getString();
    }
    static const std::map<std::string, const char *> kReduce = {
        {"none", ""}, {"add", "Add"}, {"mul", "Mul"}, {"max", "Max"},
        {"min", "Min"}};
    if (!kReduce.count(reduction)) {
      return nodeError(node, index, "unknown reduction '" + reduction + "'");
    }
    const std::vector<int64_t> dims = dt.dims().vec();
    const int64_t rank = dt.rank();
    std::vector<int64_t> strides(rank, 1);
    for (int64_t a = rank - 2; a >= 0; --a) {
      strides[a] = strides[a + 1] * dims[a + 1];
    }
    std::vector<int64_t> target; // per update element, in order
    if (node.op_type() == "ScatterND") {
      const int64_t q = it.rank() ? it.dims().back() : 0;
      if (it.rank() < 1 || q < 1 || q > rank) {
        return nodeError(node, index,
                         "indices must end in a dim of 1 to the data's rank");
      }
      std::vector<int64_t> want(it.dims().begin(), it.dims().end() - 1);
      want.insert(want.end(), dims.begin() + q, dims.end());
      if (ut.dims().vec() != want) {
        return nodeError(node, index,
                         "updates must have the shape indices.shape[:-1] + "
                         "data.shape[indices.shape[-1]:]");
      }
      COMPILER_ASSIGN_OR_RETURN(
          std::vector<int64_t> idx,
          constantIndices(node, index, operands[1],
                          llvm::ArrayRef(dims).take_front(q)));
      const int64_t inner = q < rank ? strides[q - 1] : 1;
      for (size_t t = 0; t < idx.size(); t += q) {
        int64_t base = 0;
        for (int64_t k = 0; k < q; ++k) {
          base += idx[t + k] * strides[k];
        }
        for (int64_t r = 0; r < inner; ++r) {
          target.push_back(base + r);
        }
      }
    } else {
      COMPILER_ASSIGN_OR_RETURN(double axisAttr,
                                numberAttr(node, index, attrs, "axis", 0));
      int64_t axis = static_cast<int64_t>(axisAttr);
      if (axis < -rank || axis >= rank) {
        return nodeError(node, index, "axis is out of range");
      }
      axis = axis < 0 ? axis + rank : axis;
      if (it.dims() != ut.dims() || it.rank() != rank) {
        return nodeError(node, index,
                         "indices and updates must have one shape, of the "
                         "data's rank");
      }
      for (int64_t a = 0; a < rank; ++a) {
        if (a != axis && it.dims()[a] > dims[a]) {
          return nodeError(node, index,
                           "indices exceed the data along axis " +
                               std::to_string(a));
        }
      }
      COMPILER_ASSIGN_OR_RETURN(
          std::vector<int64_t> idx,
          constantIndices(node, index, operands[1], {dims[axis]}));
      std::vector<int64_t> pos(rank, 0);
      for (int64_t v : idx) {
        int64_t t = 0;
        for (int64_t a = 0; a < rank; ++a) {
          t += (a == axis ? v : pos[a]) * strides[a];
        }
        target.push_back(t);
        for (int64_t a = rank - 1; a >= 0 && ++pos[a] == it.dims()[a]; --a) {
          pos[a] = 0;
        }
      }
    }
    const int64_t count = dt.numElements();
    std::vector<std::vector<int64_t>> writers(count);
    for (size_t u = 0; u < target.size(); ++u) {
      if (reduction == "none") {
        writers[target[u]].assign(1, int64_t(u));
      } else {
        writers[target[u]].push_back(int64_t(u));
      }
    }
    size_t layers = 0;
    for (const auto &w : writers) {
      layers = std::max(layers, w.size());
    }
    Value *out = data;
    for (size_t j = 0; j < layers; ++j) {
      std::vector<int64_t> picks(count, 0), mask(count, 0);
      for (int64_t t = 0; t < count; ++t) {
        if (j < writers[t].size()) {
          picks[t] = writers[t][j];
          mask[t] = 1;
        }
      }
      COMPILER_ASSIGN_OR_RETURN(Value * picked,
                                pickElements(name, updates, picks, dims));
      if (reduction != "none") {
        COMPILER_ASSIGN_OR_RETURN(
            picked, rewriteOp(name, kReduce.at(reduction), {out, picked}));
      }
      Op *m = graph_->createConstant(TensorType::ranked(ElementType::Bool, dims),
                                     DenseData::fromInt64s(ElementType::Bool, mask));
      m->setNodeName(name);
      COMPILER_ASSIGN_OR_RETURN(
          out, rewriteOp(name, "Where", {m->result(), picked, out}, {},
                         j + 1 == layers ? node.output(0) : ""));
    }
    if (out == data) {
      COMPILER_ASSIGN_OR_RETURN(
          out, rewriteOp(name, "Identity", {data}, {}, node.output(0)));
    }
    return defineOutput(node, index, out);
  }

  // GridSample (bilinear or nearest, 2-D) as arithmetic on the grid and one
  // run-time Gather per tap: the normalized grid coordinates are mapped to
  // pixels (align_corners), clipped or reflected (padding_mode border,
  // reflection), and each tap reads the flattened input at
  // ((n C + c) H + y) W + x with its index clamped into the image; taps
  // outside it weigh 0 (zeros padding, and the far taps of clipped
  // coordinates). Nearest rounds half to even.
  absl::Status importGridSample(const onnx::NodeProto &node, int index,
                                const std::vector<Value *> &operands,
                                const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected X and grid");
    }
    const TensorType &xt = operands[0]->type(), &gt = operands[1]->type();
    if (!xt.hasStaticShape() || !gt.hasStaticShape() || xt.rank() != 4 ||
        gt.rank() != 4 || gt.dims()[3] != 2 || gt.dims()[0] != xt.dims()[0]) {
      return unimplemented(node, index,
                           "inputs other than X [N, C, H, W] and grid "
                           "[N, Ho, Wo, 2] of static shapes");
    }
    if (xt.elementType() != ElementType::F32 ||
        gt.elementType() != ElementType::F32) {
      return unimplemented(node, index, "element types other than f32");
    }
    auto stringAttr = [&](const char *attr, const char *fallback) {
      auto it = attrs.find(attr);
      return it != attrs.end() && it->second.isString() ? it->second.getString()
                                                        : std::string(fallback);
    };
    std::string mode = stringAttr("mode", "bilinear");
    mode = mode == "linear" ? "bilinear" : mode;
    const std::string padding = stringAttr("padding_mode", "zeros");
    if (mode == "cubic") {
      mode = "bicubic";
    }
    if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
      return nodeError(node, index, "unknown mode '" + mode + "'");
    }
    if (padding != "zeros" && padding != "border" && padding != "reflection") {
      return nodeError(node, index, "unknown padding_mode '" + padding + "'");
    }
    COMPILER_ASSIGN_OR_RETURN(double alignAttr,
                              numberAttr(node, index, attrs, "align_corners", 0));
    const bool align = alignAttr != 0;
    const int64_t N = xt.dims()[0], C = xt.dims()[1], H = xt.dims()[2],
                  W = xt.dims()[3];
    auto f = [&](double v) { return constScalar(ElementType::F32, v, name); };
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {}) {
      return rewriteOp(name, kind, std::move(in), std::move(a));
    };
    // Pixel coordinate along an axis of |size| from grid component |k|,
    // as [N, 1, Ho, Wo].
    auto unnormalized = [&](int64_t k, int64_t size) -> absl::StatusOr<Value *> {
      COMPILER_ASSIGN_OR_RETURN(
          Value * g, op("Gather", {operands[1], constScalar(ElementType::I64, double(k), name)},
                        {{"axis", Attribute(int64_t(3))}}));
      COMPILER_ASSIGN_OR_RETURN(g, op("Unsqueeze", {g, constInts({1}, name)}));
      // align: (g + 1) / 2 * (size - 1); else ((g + 1) * size - 1) / 2.
      COMPILER_ASSIGN_OR_RETURN(g, op("Add", {g, f(1)}));
      COMPILER_ASSIGN_OR_RETURN(
          g, op("Mul", {g, f(align ? (size - 1) / 2.0 : size / 2.0)}));
      if (!align) {
        COMPILER_ASSIGN_OR_RETURN(g, op("Sub", {g, f(0.5)}));
      }
      return g;
    };
    // A coordinate moved inside [0, size - 1] by the border and reflection
    // paddings (zeros padding leaves it; taps outside read 0). Bilinear and
    // nearest pad the sampling point, bicubic each of its taps.
    auto pad = [&](Value *g, int64_t size) -> absl::StatusOr<Value *> {
      if (padding == "border" || padding == "reflection") {
        if (padding == "reflection") {
          // Reflect about [lo, hi] (pixel edges, or centres when aligned):
          // a triangle wave of period 2 span.
          const double lo = align ? 0 : -0.5, span = align ? size - 1 : size;
          if (span <= 0) {
            COMPILER_ASSIGN_OR_RETURN(g, op("Mul", {g, f(0)}));
          } else {
            COMPILER_ASSIGN_OR_RETURN(Value * d, op("Sub", {g, f(lo)}));
            COMPILER_ASSIGN_OR_RETURN(d, op("Abs", {d}));
            COMPILER_ASSIGN_OR_RETURN(Value * flips, op("Div", {d, f(span)}));
            COMPILER_ASSIGN_OR_RETURN(flips, op("Floor", {flips}));
            COMPILER_ASSIGN_OR_RETURN(Value * whole, op("Mul", {flips, f(span)}));
            COMPILER_ASSIGN_OR_RETURN(Value * extra, op("Sub", {d, whole}));
            COMPILER_ASSIGN_OR_RETURN(Value * half, op("Mul", {flips, f(0.5)}));
            COMPILER_ASSIGN_OR_RETURN(Value * halfFloor, op("Floor", {half}));
            COMPILER_ASSIGN_OR_RETURN(Value * odd, op("Greater", {half, halfFloor}));
            COMPILER_ASSIGN_OR_RETURN(Value * back, op("Sub", {f(span), extra}));
            COMPILER_ASSIGN_OR_RETURN(Value * r, op("Where", {odd, back, extra}));
            COMPILER_ASSIGN_OR_RETURN(g, op("Add", {r, f(lo)}));
          }
        }
        COMPILER_ASSIGN_OR_RETURN(g, op("Clip", {g, f(0), f(double(size - 1))}));
      }
      return g;
    };
    COMPILER_ASSIGN_OR_RETURN(Value * x, unnormalized(0, W));
    COMPILER_ASSIGN_OR_RETURN(Value * y, unnormalized(1, H));
    if (mode != "bicubic") {
      COMPILER_ASSIGN_OR_RETURN(x, pad(x, W));
      COMPILER_ASSIGN_OR_RETURN(y, pad(y, H));
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * flat, op("Reshape", {operands[0], constInts({N * C * H * W}, name)}));
    std::vector<int64_t> bases(N * C);
    for (int64_t i = 0; i < N * C; ++i) {
      bases[i] = i * H * W;
    }
    Op *baseOp = graph_->createConstant(
        TensorType::ranked(ElementType::I64, {N, C, 1, 1}),
        DenseData::fromInt64s(ElementType::I64, bases));
    baseOp->setNodeName(name);
    // The input at integral pixel coordinates (px, py) (f32), 0 outside.
    auto tap = [&](Value *px, Value *py) -> absl::StatusOr<Value *> {
      COMPILER_ASSIGN_OR_RETURN(Value * inX, op("GreaterOrEqual", {px, f(0)}));
      COMPILER_ASSIGN_OR_RETURN(Value * belowW, op("LessOrEqual", {px, f(double(W - 1))}));
      COMPILER_ASSIGN_OR_RETURN(Value * inY, op("GreaterOrEqual", {py, f(0)}));
      COMPILER_ASSIGN_OR_RETURN(Value * belowH, op("LessOrEqual", {py, f(double(H - 1))}));
      COMPILER_ASSIGN_OR_RETURN(Value * ok, op("And", {inX, belowW}));
      COMPILER_ASSIGN_OR_RETURN(ok, op("And", {ok, inY}));
      COMPILER_ASSIGN_OR_RETURN(ok, op("And", {ok, belowH}));
      COMPILER_ASSIGN_OR_RETURN(Value * cx, op("Clip", {px, f(0), f(double(W - 1))}));
      COMPILER_ASSIGN_OR_RETURN(Value * cy, op("Clip", {py, f(0), f(double(H - 1))}));
      COMPILER_ASSIGN_OR_RETURN(cx, op("Cast", {cx}, {{"to", Attribute("i64")}}));
      COMPILER_ASSIGN_OR_RETURN(cy, op("Cast", {cy}, {{"to", Attribute("i64")}}));
      COMPILER_ASSIGN_OR_RETURN(Value * at, op("Mul", {cy, constScalar(ElementType::I64, double(W), name)}));
      COMPILER_ASSIGN_OR_RETURN(at, op("Add", {at, cx}));
      COMPILER_ASSIGN_OR_RETURN(at, op("Add", {at, baseOp->result()}));
      COMPILER_ASSIGN_OR_RETURN(Value * v, op("Gather", {flat, at}, {{"axis", Attribute(int64_t(0))}}));
      return op("Where", {ok, v, f(0)});
    };
    // acc + v, or v when acc is still empty.
    auto accumulate = [&](Value *&acc, Value *v) -> absl::Status {
      if (!acc) {
        acc = v;
        return absl::OkStatus();
      }
      COMPILER_ASSIGN_OR_RETURN(acc, op("Add", {acc, v}));
      return absl::OkStatus();
    };
    Value *out = nullptr;
    if (mode == "bicubic") {
      // Keys' cubic convolution (A = -0.75) over the 4 x 4 taps around the
      // point, rows first: weights of taps at distances 1 + t, t, 1 - t,
      // 2 - t.
      constexpr double A = -0.75;
      auto near = [&](Value *d) -> absl::StatusOr<Value *> { // |d| <= 1
        COMPILER_ASSIGN_OR_RETURN(Value * v, op("Mul", {d, f(A + 2)}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Sub", {v, f(A + 3)}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, d}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, d}));
        return op("Add", {v, f(1)});
      };
      auto far = [&](Value *d) -> absl::StatusOr<Value *> { // 1 < |d| < 2
        COMPILER_ASSIGN_OR_RETURN(Value * v, op("Mul", {d, f(A)}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Sub", {v, f(5 * A)}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, d}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Add", {v, f(8 * A)}));
        COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, d}));
        return op("Sub", {v, f(4 * A)});
      };
      auto weights = [&](Value *t) -> absl::StatusOr<std::array<Value *, 4>> {
        COMPILER_ASSIGN_OR_RETURN(Value * d0, op("Add", {t, f(1)}));
        COMPILER_ASSIGN_OR_RETURN(Value * d2, op("Sub", {f(1), t}));
        COMPILER_ASSIGN_OR_RETURN(Value * d3, op("Sub", {f(2), t}));
        std::array<Value *, 4> w;
        COMPILER_ASSIGN_OR_RETURN(w[0], far(d0));
        COMPILER_ASSIGN_OR_RETURN(w[1], near(t));
        COMPILER_ASSIGN_OR_RETURN(w[2], near(d2));
        COMPILER_ASSIGN_OR_RETURN(w[3], far(d3));
        return w;
      };
      COMPILER_ASSIGN_OR_RETURN(Value * x0, op("Floor", {x}));
      COMPILER_ASSIGN_OR_RETURN(Value * y0, op("Floor", {y}));
      COMPILER_ASSIGN_OR_RETURN(Value * tx, op("Sub", {x, x0}));
      COMPILER_ASSIGN_OR_RETURN(Value * ty, op("Sub", {y, y0}));
      COMPILER_ASSIGN_OR_RETURN(auto wx, weights(tx));
      COMPILER_ASSIGN_OR_RETURN(auto wy, weights(ty));
      std::array<Value *, 4> xs;
      for (int i = 0; i < 4; ++i) {
        COMPILER_ASSIGN_OR_RETURN(Value * xi, op("Add", {x0, f(i - 1)}));
        COMPILER_ASSIGN_OR_RETURN(xs[i], pad(xi, W));
      }
      for (int j = 0; j < 4; ++j) {
        COMPILER_ASSIGN_OR_RETURN(Value * yj, op("Add", {y0, f(j - 1)}));
        COMPILER_ASSIGN_OR_RETURN(yj, pad(yj, H));
        Value *row = nullptr;
        for (int i = 0; i < 4; ++i) {
          COMPILER_ASSIGN_OR_RETURN(Value * v, tap(xs[i], yj));
          COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, wx[i]}));
          COMPILER_RETURN_IF_ERROR(accumulate(row, v));
        }
        COMPILER_ASSIGN_OR_RETURN(row, op("Mul", {row, wy[j]}));
        COMPILER_RETURN_IF_ERROR(accumulate(out, row));
      }
    } else if (mode == "nearest") {
      COMPILER_ASSIGN_OR_RETURN(Value * rx, op("Round", {x}));
      COMPILER_ASSIGN_OR_RETURN(Value * ry, op("Round", {y}));
      COMPILER_ASSIGN_OR_RETURN(out, tap(rx, ry));
    } else {
      COMPILER_ASSIGN_OR_RETURN(Value * x0, op("Floor", {x}));
      COMPILER_ASSIGN_OR_RETURN(Value * y0, op("Floor", {y}));
      COMPILER_ASSIGN_OR_RETURN(Value * x1, op("Add", {x0, f(1)}));
      COMPILER_ASSIGN_OR_RETURN(Value * y1, op("Add", {y0, f(1)}));
      COMPILER_ASSIGN_OR_RETURN(Value * wx1, op("Sub", {x, x0}));
      COMPILER_ASSIGN_OR_RETURN(Value * wy1, op("Sub", {y, y0}));
      COMPILER_ASSIGN_OR_RETURN(Value * wx0, op("Sub", {f(1), wx1}));
      COMPILER_ASSIGN_OR_RETURN(Value * wy0, op("Sub", {f(1), wy1}));
      Value *xs[2] = {x0, x1}, *ys[2] = {y0, y1};
      Value *wxs[2] = {wx0, wx1}, *wys[2] = {wy0, wy1};
      for (int j = 0; j < 2; ++j) {
        for (int i = 0; i < 2; ++i) {
          COMPILER_ASSIGN_OR_RETURN(Value * v, tap(xs[i], ys[j]));
          COMPILER_ASSIGN_OR_RETURN(Value * w, op("Mul", {wxs[i], wys[j]}));
          COMPILER_ASSIGN_OR_RETURN(v, op("Mul", {v, w}));
          COMPILER_RETURN_IF_ERROR(accumulate(out, v));
        }
      }
    }
    COMPILER_ASSIGN_OR_RETURN(
        out, rewriteOp(name, "Identity", {out}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // TopK of a constant k by ranks: element i's rank along the axis is the
  // number of elements j that come first (larger, or smaller for
  // largest = 0; equal with j < i; NaN counts as the largest, so the ranks
  // are a permutation), and output position r takes the element of rank r
  // (a max over the axis of the element where its rank is r, else -inf)
  // and its index. Sorted in both cases (sorted = 0 allows any order).
  // Compares every pair along the axis: n^2 work per row.
  absl::Status importTopK(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands,
                          const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected X and K");
    }
    Value *x = operands[0];
    const TensorType &t = x->type();
    if (!t.hasStaticShape() || t.rank() < 1) {
      return unimplemented(node, index, "an input of dynamic shape");
    }
    if (!graph::isFloatType(t.elementType()) && !graph::isIntegerType(t.elementType())) {
      return nodeError(node, index, "X must be numeric");
    }
    auto kv = graph::getConstantInts(operands[1]);
    if (!kv) {
      return unimplemented(node, index, "a run-time K (it sets the output's shape)");
    }
    const int64_t rank = t.rank();
    COMPILER_ASSIGN_OR_RETURN(double axisAttr, numberAttr(node, index, attrs, "axis", -1));
    int64_t axis = int64_t(axisAttr);
    if (axis < -rank || axis >= rank) {
      return nodeError(node, index, "axis is out of range");
    }
    axis = axis < 0 ? axis + rank : axis;
    const int64_t n = t.dims()[axis];
    if (kv->size() != 1 || (*kv)[0] < 0 || (*kv)[0] > n) {
      return nodeError(node, index, "K must be one value in [0, " + std::to_string(n) + "]");
    }
    const int64_t k = (*kv)[0];
    COMPILER_ASSIGN_OR_RETURN(double largestAttr, numberAttr(node, index, attrs, "largest", 1));
    const bool largest = largestAttr != 0;
    const ElementType et = t.elementType();
    const bool fp = graph::isFloatType(et);
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {}) {
      return rewriteOp(name, kind, std::move(in), std::move(a));
    };
    // Constant of |shape| (n or k at given axes, 1 elsewhere) from |values|.
    auto positions = [&](ElementType type, std::vector<int64_t> shape,
                         const std::vector<int64_t> &values) {
      return constTensor(type, std::move(shape), values, name);
    };
    // xi: element i along axis (axis + 1 unsqueezed), xj: element j along
    // axis + 1.
    COMPILER_ASSIGN_OR_RETURN(Value * xi, op("Unsqueeze", {x, constInts({axis + 1}, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * xj, op("Unsqueeze", {x, constInts({axis}, name)}));
    COMPILER_ASSIGN_OR_RETURN(Value * before, op(largest ? "Greater" : "Less", {xj, xi}));
    COMPILER_ASSIGN_OR_RETURN(Value * same, op("Equal", {xj, xi}));
    if (fp) {
      // x != x: NaN.
      COMPILER_ASSIGN_OR_RETURN(Value * notNanJ, op("Equal", {xj, xj}));
      COMPILER_ASSIGN_OR_RETURN(Value * notNanI, op("Equal", {xi, xi}));
      COMPILER_ASSIGN_OR_RETURN(Value * nanJ, op("Not", {notNanJ}));
      COMPILER_ASSIGN_OR_RETURN(Value * nanI, op("Not", {notNanI}));
      // NaN is the largest: first when largest, else after every number.
      COMPILER_ASSIGN_OR_RETURN(
          Value * nanOrder,
          largest ? op("And", {nanJ, notNanI}) : op("And", {nanI, notNanJ}));
      COMPILER_ASSIGN_OR_RETURN(before, op("Or", {before, nanOrder}));
      COMPILER_ASSIGN_OR_RETURN(Value * bothNan, op("And", {nanJ, nanI}));
      COMPILER_ASSIGN_OR_RETURN(same, op("Or", {same, bothNan}));
    }
    std::vector<int64_t> pairShape(rank + 1, 1), lower(n * n);
    pairShape[axis] = pairShape[axis + 1] = n;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        lower[i * n + j] = j < i;
      }
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * tie, op("And", {same, positions(ElementType::Bool, pairShape, lower)}));
    COMPILER_ASSIGN_OR_RETURN(before, op("Or", {before, tie}));
    COMPILER_ASSIGN_OR_RETURN(before, op("Cast", {before}, {{"to", Attribute("i64")}}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * ranks, op("ReduceSum", {before, constInts({axis + 1}, name)},
                          {{"keepdims", Attribute(int64_t(1))}}));
    // ranks: [.., n, 1, ..]; compared with r = 0..k-1 at axis + 1.
    std::vector<int64_t> outShape(rank + 1, 1), rs(k), is(n);
    outShape[axis + 1] = k;
    for (int64_t r = 0; r < k; ++r) {
      rs[r] = r;
    }
    for (int64_t i = 0; i < n; ++i) {
      is[i] = i;
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * pick, op("Equal", {ranks, positions(ElementType::I64, outShape, rs)}));
    double lowest = fp ? -INFINITY : double(graph::integerTypeMin(et));
    COMPILER_ASSIGN_OR_RETURN(
        Value * values, op("Where", {pick, xi, constScalar(et, lowest, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        values, op("ReduceMax", {values, constInts({axis}, name)},
                   {{"keepdims", Attribute(int64_t(0))}}));
    std::vector<int64_t> idxShape(rank + 1, 1);
    idxShape[axis] = n;
    COMPILER_ASSIGN_OR_RETURN(
        Value * indices,
        op("Where", {pick, positions(ElementType::I64, idxShape, is),
                     constScalar(ElementType::I64, -1, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        indices, op("ReduceMax", {indices, constInts({axis}, name)},
                    {{"keepdims", Attribute(int64_t(0))}}));
    Value *results[2] = {values, indices};
    for (int r = 0; r < 2 && r < node.output_size(); ++r) {
      if (node.output(r).empty()) {
        continue;
      }
      COMPILER_ASSIGN_OR_RETURN(
          Value * v, rewriteOp(name, "Identity", {results[r]}, {}, node.output(r)));
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, v, r));
    }
    return absl::OkStatus();
  }

  // Compress of a constant condition: a Gather of the positions whose
  // condition is true (along axis, or of the flattened input without one);
  // a condition shorter than the axis leaves the rest out.
  absl::Status importCompress(const onnx::NodeProto &node, int index,
                              const std::vector<Value *> &operands,
                              const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected input and condition");
    }
    Value *x = operands[0];
    if (!x->type().hasStaticShape()) {
      return unimplemented(node, index, "an input of dynamic shape");
    }
    auto condition = graph::getConstantInts(operands[1]);
    if (!condition) {
      return unimplemented(node, index,
                           "a run-time condition (it sets the output's shape)");
    }
    int64_t axis = 0;
    if (attrs.count("axis")) {
      COMPILER_ASSIGN_OR_RETURN(double a, numberAttr(node, index, attrs, "axis", 0));
      const int64_t rank = x->type().rank();
      axis = int64_t(a);
      if (axis < -rank || axis >= rank) {
        return nodeError(node, index, "axis is out of range");
      }
      axis = axis < 0 ? axis + rank : axis;
    } else {
      COMPILER_ASSIGN_OR_RETURN(
          x, rewriteOp(name, "Reshape",
                       {x, constInts({x->type().numElements()}, name)}));
    }
    const int64_t extent = x->type().dims()[axis];
    if (int64_t(condition->size()) > extent) {
      return nodeError(node, index,
                       "the condition is longer than the axis (" +
                           std::to_string(extent) + ")");
    }
    std::vector<int64_t> kept;
    for (size_t i = 0; i < condition->size(); ++i) {
      if ((*condition)[i] != 0) {
        kept.push_back(int64_t(i));
      }
    }
    if (kept.empty()) {
      return unimplemented(node, index, "a condition that keeps nothing (an empty output)");
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * out, rewriteOp(name, "Gather", {x, constInts(kept, name)},
                               {{"axis", Attribute(axis)}}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // DFT (opset 17) along |axis| of a real ([.., 1]) or complex ([.., 2])
  // signal, as two MatMuls with constant cosine and sine matrices (the
  // signal truncated or zero-padded to dft_length), onesided keeping the
  // first L/2 + 1 frequencies, inverse conjugating and dividing by L.
  absl::Status importDft(const onnx::NodeProto &node, int index,
                         const std::vector<Value *> &operands,
                         const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.empty() || !operands[0]) {
      return nodeError(node, index, "expected an input signal");
    }
    Value *x = operands[0];
    const TensorType &t = x->type();
    const int64_t rank = t.rank();
    if (!t.hasStaticShape() || rank < 3 || t.elementType() != ElementType::F32 ||
        (t.dims()[rank - 1] != 1 && t.dims()[rank - 1] != 2)) {
      return unimplemented(node, index,
                           "inputs other than f32 [batch, .., signal, 1 or 2] "
                           "of static shape");
    }
    COMPILER_ASSIGN_OR_RETURN(double axisAttr, numberAttr(node, index, attrs, "axis", 1));
    int64_t axis = int64_t(axisAttr);
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 1 || axis > rank - 2) {
      return nodeError(node, index, "axis must name a signal dimension");
    }
    COMPILER_ASSIGN_OR_RETURN(double inv, numberAttr(node, index, attrs, "inverse", 0));
    COMPILER_ASSIGN_OR_RETURN(double one, numberAttr(node, index, attrs, "onesided", 0));
    const bool inverse = inv != 0, onesided = one != 0;
    const bool complex = t.dims()[rank - 1] == 2;
    int64_t length = t.dims()[axis];
    if (operands.size() > 1 && operands[1]) {
      auto l = graph::getConstantInts(operands[1]);
      if (!l || l->size() != 1) {
        return unimplemented(node, index, "a dft_length that is not a constant scalar");
      }
      length = (*l)[0];
      if (length < 1) {
        return nodeError(node, index, "dft_length must be positive");
      }
    }
    if (onesided && complex) {
      return nodeError(node, index, "onesided needs a real input");
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * out, dftAlong(name, x, axis, length, onesided, inverse, node.output(0)));
    return defineOutput(node, index, out);
  }

  // The DFT of |x| ([.., signal, 1 or 2], f32, static) along |axis|, |length|
  // points, named |resultName|.
  absl::StatusOr<Value *> dftAlong(const std::string &name, Value *x,
                                   int64_t axis, int64_t length, bool onesided,
                                   bool inverse, const std::string &resultName) {
    const TensorType &t = x->type();
    const int64_t rank = t.rank();
    const bool complex = t.dims()[rank - 1] == 2;
    const int64_t n = t.dims()[axis];
    const int64_t freqs = onesided ? length / 2 + 1 : length;
    std::vector<double> cosM(n * freqs, 0.0), sinM(n * freqs, 0.0);
    const double scale = inverse ? 1.0 / double(length) : 1.0;
    for (int64_t s = 0; s < std::min(n, length); ++s) {
      for (int64_t k = 0; k < freqs; ++k) {
        double angle = 2 * M_PI * double((k * s) % length) / double(length);
        cosM[s * freqs + k] = std::cos(angle) * scale;
        sinM[s * freqs + k] = std::sin(angle) * scale;
      }
    }
    auto matrix = [&](const std::vector<double> &v) {
      return constTensor(ElementType::F32, {n, freqs}, v, name);
    };
    Value *cosC = matrix(cosM), *sinC = matrix(sinM);
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {}) {
      return rewriteOp(name, kind, std::move(in), std::move(a));
    };
    // Component c with the signal axis moved last: [.., n].
    std::vector<int64_t> perm;
    for (int64_t a = 0; a < rank - 1; ++a) {
      if (a != axis) {
        perm.push_back(a);
      }
    }
    perm.push_back(axis);
    std::vector<int64_t> back(rank - 1);
    for (size_t a = 0; a < perm.size(); ++a) {
      back[perm[a]] = int64_t(a);
    }
    auto component = [&](int64_t c) -> absl::StatusOr<Value *> {
      COMPILER_ASSIGN_OR_RETURN(
          Value * v, op("Gather", {x, constScalar(ElementType::I64, double(c), name)},
                        {{"axis", Attribute(rank - 1)}}));
      return op("Transpose", {v}, {{"perm", Attribute(graph::IntList(perm))}});
    };
    COMPILER_ASSIGN_OR_RETURN(Value * xr, component(0));
    // Forward: re = xr C + xi S, im = xi C - xr S; inverse: the signs of
    // the S terms flip.
    COMPILER_ASSIGN_OR_RETURN(Value * re, op("MatMul", {xr, cosC}));
    COMPILER_ASSIGN_OR_RETURN(Value * im, op("MatMul", {xr, sinC}));
    COMPILER_ASSIGN_OR_RETURN(im, op(inverse ? "Identity" : "Neg", {im}));
    if (complex) {
      COMPILER_ASSIGN_OR_RETURN(Value * xi, component(1));
      COMPILER_ASSIGN_OR_RETURN(Value * iS, op("MatMul", {xi, sinC}));
      COMPILER_ASSIGN_OR_RETURN(Value * iC, op("MatMul", {xi, cosC}));
      COMPILER_ASSIGN_OR_RETURN(re, op(inverse ? "Sub" : "Add", {re, iS}));
      COMPILER_ASSIGN_OR_RETURN(im, op("Add", {im, iC}));
    }
    std::vector<Value *> parts;
    for (Value *v : {re, im}) {
      COMPILER_ASSIGN_OR_RETURN(v, op("Transpose", {v}, {{"perm", Attribute(graph::IntList(back))}}));
      COMPILER_ASSIGN_OR_RETURN(v, op("Unsqueeze", {v, constInts({rank - 1}, name)}));
      parts.push_back(v);
    }
    return rewriteOp(name, "Concat", parts, {{"axis", Attribute(rank - 1)}},
                     resultName);
  }

  // STFT (opset 17) of constant frame_step, window and frame_length: the
  // frames gathered by constant indices [frames, frame_length], times the
  // window, then the DFT of each frame (onesided by default).
  absl::Status importStft(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands,
                          const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    auto operand = [&](size_t i) {
      return i < operands.size() ? operands[i] : nullptr;
    };
    Value *signal = operand(0);
    if (!signal || !operand(1)) {
      return nodeError(node, index, "expected a signal and frame_step");
    }
    const TensorType &t = signal->type();
    if (!t.hasStaticShape() || t.rank() != 3 || t.elementType() != ElementType::F32 ||
        (t.dims()[2] != 1 && t.dims()[2] != 2)) {
      return unimplemented(node, index,
                           "signals other than f32 [batch, length, 1 or 2] of "
                           "static shape");
    }
    auto step = graph::getConstantInts(operand(1));
    std::optional<std::vector<double>> window;
    if (operand(2)) {
      window = graph::getConstantFloats(operand(2));
    }
    std::optional<std::vector<int64_t>> frameLength;
    if (operand(3)) {
      frameLength = graph::getConstantInts(operand(3));
    }
    if (!step || (operand(2) && !window) || (operand(3) && !frameLength)) {
      return unimplemented(node, index,
                           "frame_step, window and frame_length must be constants");
    }
    const int64_t samples = t.dims()[1];
    int64_t length = frameLength && frameLength->size() == 1 ? (*frameLength)[0]
                     : window ? int64_t(window->size()) : 0;
    if (step->size() != 1 || (*step)[0] < 1 || length < 1 || length > samples ||
        (window && int64_t(window->size()) != length)) {
      return nodeError(node, index,
                       "needs a positive frame_step and a frame length (from "
                       "frame_length or the window) up to the signal's");
    }
    COMPILER_ASSIGN_OR_RETURN(double one, numberAttr(node, index, attrs, "onesided", 1));
    const bool onesided = one != 0;
    if (onesided && t.dims()[2] == 2) {
      return nodeError(node, index, "onesided needs a real signal");
    }
    const int64_t frames = (samples - length) / (*step)[0] + 1;
    std::vector<int64_t> positions;
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t s = 0; s < length; ++s) {
        positions.push_back(f * (*step)[0] + s);
      }
    }
    Op *idx = graph_->createConstant(
        TensorType::ranked(ElementType::I64, {frames, length}),
        DenseData::fromInt64s(ElementType::I64, positions));
    idx->setNodeName(name);
    COMPILER_ASSIGN_OR_RETURN(
        Value * framed, rewriteOp(name, "Gather", {signal, idx->result()},
                                  {{"axis", Attribute(int64_t(1))}}));
    if (window) {
      Op *w = graph_->createConstant(
          TensorType::ranked(ElementType::F32, {length, 1}),
          DenseData::fromDoubles(ElementType::F32, *window));
      w->setNodeName(name);
      COMPILER_ASSIGN_OR_RETURN(framed, rewriteOp(name, "Mul", {framed, w->result()}));
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * out, dftAlong(name, framed, 2, length, onesided, false, node.output(0)));
    return defineOutput(node, index, out);
  }

  // ReverseSequence of constant sequence_lens: every element's source is
  // known at import (the first lens[b] steps of batch b reversed, the rest
  // in place), so it is one constant Gather of the flattened input.
  absl::Status importReverseSequence(const onnx::NodeProto &node, int index,
                                     const std::vector<Value *> &operands,
                                     const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected input and sequence_lens");
    }
    const TensorType &t = operands[0]->type();
    if (!t.hasStaticShape() || t.rank() < 2) {
      return unimplemented(node, index, "an input of dynamic shape or rank below 2");
    }
    COMPILER_ASSIGN_OR_RETURN(double b, numberAttr(node, index, attrs, "batch_axis", 1));
    COMPILER_ASSIGN_OR_RETURN(double s, numberAttr(node, index, attrs, "time_axis", 0));
    const int64_t batchAxis = int64_t(b), timeAxis = int64_t(s);
    if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) ||
        batchAxis == timeAxis) {
      return nodeError(node, index, "batch_axis and time_axis must be 0 and 1");
    }
    auto lens = graph::getConstantInts(operands[1]);
    if (!lens) {
      return unimplemented(node, index, "run-time sequence_lens");
    }
    const std::vector<int64_t> dims = t.dims().vec();
    if (int64_t(lens->size()) != dims[batchAxis]) {
      return nodeError(node, index, "sequence_lens must hold one length per batch element");
    }
    for (int64_t l : *lens) {
      if (l < 0 || l > dims[timeAxis]) {
        return nodeError(node, index, "sequence length " + std::to_string(l) +
                                          " is out of range for " +
                                          std::to_string(dims[timeAxis]) + " steps");
      }
    }
    const int64_t inner = t.numElements() / (dims[0] * dims[1]);
    std::vector<int64_t> picks(t.numElements());
    for (int64_t i = 0; i < dims[0]; ++i) {
      for (int64_t j = 0; j < dims[1]; ++j) {
        int64_t step = timeAxis == 0 ? i : j, batch = timeAxis == 0 ? j : i;
        int64_t len = (*lens)[batch];
        int64_t from = step < len ? len - 1 - step : step;
        int64_t si = timeAxis == 0 ? from : i, sj = timeAxis == 0 ? j : from;
        for (int64_t k = 0; k < inner; ++k) {
          picks[(i * dims[1] + j) * inner + k] = (si * dims[1] + sj) * inner + k;
        }
      }
    }
    COMPILER_ASSIGN_OR_RETURN(Value * out, pickElements(name, operands[0], picks, dims));
    COMPILER_ASSIGN_OR_RETURN(out, rewriteOp(name, "Identity", {out}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // GatherND of constant indices: a Gather of the flattened data at the
  // flat positions the index tuples (after batch_dims shared leading dims)
  // name.
  absl::Status importGatherND(const onnx::NodeProto &node, int index,
                              const std::vector<Value *> &operands,
                              const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 2 || !operands[0] || !operands[1]) {
      return nodeError(node, index, "expected data and indices");
    }
    const TensorType &dt = operands[0]->type(), &it = operands[1]->type();
    if (!dt.hasStaticShape() || !it.hasStaticShape()) {
      return unimplemented(node, index, "operands of dynamic shape");
    }
    COMPILER_ASSIGN_OR_RETURN(double batchAttr,
                              numberAttr(node, index, attrs, "batch_dims", 0));
    const int64_t b = static_cast<int64_t>(batchAttr), rank = dt.rank();
    const int64_t q = it.rank() ? it.dims().back() : 0;
    if (b < 0 || it.rank() < 1 || b >= std::min(rank, it.rank()) || q < 1 ||
        b + q > rank) {
      return nodeError(node, index,
                       "needs 0 <= batch_dims < both ranks and an index "
                       "tuple of 1 to rank - batch_dims entries");
    }
    for (int64_t a = 0; a < b; ++a) {
      if (dt.dims()[a] != it.dims()[a]) {
        return nodeError(node, index,
                         "data and indices differ in batch dim " +
                             std::to_string(a));
      }
    }
    const std::vector<int64_t> dims = dt.dims().vec();
    std::vector<int64_t> strides(rank, 1);
    for (int64_t a = rank - 2; a >= 0; --a) {
      strides[a] = strides[a + 1] * dims[a + 1];
    }
    COMPILER_ASSIGN_OR_RETURN(
        std::vector<int64_t> idx,
        constantIndices(node, index, operands[1],
                        llvm::ArrayRef(dims).slice(b, q)));
    // Tuples per batch position, elements per picked slice.
    const int64_t batches = b ? dims[0] * strides[0] / strides[b - 1] : 1;
    const int64_t tuples = int64_t(idx.size()) / q / batches;
    const int64_t inner = b + q < rank ? strides[b + q - 1] : 1;
    std::vector<int64_t> picks;
    for (int64_t n = 0; n < batches; ++n) {
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t base = b ? n * strides[b - 1] : 0;
        for (int64_t k = 0; k < q; ++k) {
          base += idx[(n * tuples + t) * q + k] * strides[b + k];
        }
        for (int64_t r = 0; r < inner; ++r) {
          picks.push_back(base + r);
        }
      }
    }
    std::vector<int64_t> shape(it.dims().begin(), it.dims().end() - 1);
    shape.insert(shape.end(), dims.begin() + b + q, dims.end());
    COMPILER_ASSIGN_OR_RETURN(
        Value * out, pickElements(name, operands[0], picks, shape));
    COMPILER_ASSIGN_OR_RETURN(
        out, rewriteOp(name, "Identity", {out}, {}, node.output(0)));
    return defineOutput(node, index, out);
  }

  // HannWindow, HammingWindow and BlackmanWindow of a constant size: the
  // constant a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), n = 0..size-1,
  // N = size (periodic, the default) or size - 1, of element type
  // output_datatype (default float).
  absl::Status importWindow(const onnx::NodeProto &node, int index,
                            const std::vector<Value *> &operands,
                            const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand (the size)");
    }
    auto size = graph::getConstantFloats(operands[0]);
    if (!size) {
      return unimplemented(node, index,
                           "the size must be a constant (it sets the "
                           "output's shape)");
    }
    if (size->size() != 1 || (*size)[0] < 0 ||
        (*size)[0] != std::floor((*size)[0])) {
      return nodeError(node, index,
                       "the size must be one non-negative integer");
    }
    if ((*size)[0] > double(1 << 24)) {
      return unimplemented(node, index, "a window of more than 2^24 samples");
    }
    ElementType et = ElementType::F32;
    if (auto it = attrs.find("output_datatype"); it != attrs.end()) {
      auto mapped = it->second.isInt()
                        ? mapElementType(static_cast<int32_t>(it->second.getInt()))
                        : std::nullopt;
      if (!mapped || *mapped == ElementType::Bool) {
        return nodeError(node, index, "unsupported output_datatype");
      }
      et = *mapped;
    }
    COMPILER_ASSIGN_OR_RETURN(double periodic,
                              numberAttr(node, index, attrs, "periodic", 1));
    double a0 = 0.5, a1 = 0.5, a2 = 0;
    if (node.op_type() == "HammingWindow") {
      a0 = 25.0 / 46;
      a1 = 1 - a0;
    } else if (node.op_type() == "BlackmanWindow") {
      a0 = 0.42;
      a2 = 0.08;
    }
    const int64_t n = static_cast<int64_t>((*size)[0]);
    const double period = periodic != 0 ? double(n) : double(n - 1);
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) {
      double angle = 2 * M_PI * double(i) / period;
      values[i] = a0 - a1 * std::cos(angle) + a2 * std::cos(2 * angle);
    }
    Op *c = graph_->createConstant(TensorType::ranked(et, {n}),
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

  // MaxPool with its Indices output. Values come from MaxPool itself. The
  // indices: every window's taps are gathered from the flattened input
  // planes (a tap in the padding reads the window's first real tap again,
  // so it never wins: ArgMax takes the first largest tap in scan order),
  // and a constant table turns (output position, tap) into the tap's flat
  // index in the plane, row major or column major (storage_order), plus the
  // plane's offset.
  absl::Status importMaxPoolIndices(const onnx::NodeProto &node, int index,
                                    const std::vector<Value *> &operands,
                                    const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    Value *x = operands[0];
    const TensorType &t = x->type();
    if (!t.hasStaticShape() || t.rank() < 3) {
      return unimplemented(node, index,
                           "the Indices output of an input other than [N, C, "
                           "spatial...] of static shape");
    }
    COMPILER_ASSIGN_OR_RETURN(double order,
                              numberAttr(node, index, attrs, "storage_order", 0));
    // Y: MaxPool itself, whose shape rule checks the geometry; its window
    // attributes, auto_pad resolved to pads, describe the taps.
    std::map<std::string, Attribute> poolAttrs = attrs;
    poolAttrs.erase("storage_order");
    COMPILER_ASSIGN_OR_RETURN(
        Value * y, rewriteOp(name, "MaxPool", {x}, poolAttrs, node.output(0)));
    const TensorType &yt = y->type();
    if (!yt.hasStaticShape()) {
      return unimplemented(node, index, "an output of dynamic shape");
    }
    Op &pool = *y->definingOp();
    graph::resolveAutoPad(pool);
    const int64_t spatial = t.rank() - 2;
    const std::vector<int64_t> ones(size_t(spatial), 1);
    const std::vector<int64_t> kernel = pool.getIntList("kernel_shape"),
                               strides = pool.getIntList("strides", ones),
                               dilations = pool.getIntList("dilations", ones),
                               pads = pool.getIntList(
                                   "pads", std::vector<int64_t>(size_t(2 * spatial), 0));
    std::vector<int64_t> in(t.dims().begin() + 2, t.dims().end()),
        out(yt.dims().begin() + 2, yt.dims().end());
    int64_t plane = 1, positions = 1, taps = 1;
    for (int64_t d = 0; d < spatial; ++d) {
      plane *= in[d];
      positions *= out[d];
      taps *= kernel[d];
    }
    const int64_t planes = t.dims()[0] * t.dims()[1];
    if (positions * taps > (int64_t(1) << 24)) {
      return unimplemented(node, index,
                           "the Indices output of more than 2^24 window taps");
    }
    // gatherAt: taps into the plane (real taps first, in scan order, then
    // the padding's as repeats of the first); flatAt: the flat index each
    // reports.
    std::vector<int64_t> gatherAt, flatAt;
    std::vector<int64_t> o(size_t(spatial), 0), k(size_t(spatial), 0);
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t q = p, d = spatial - 1; d >= 0; --d) {
        o[d] = q % out[d];
        q /= out[d];
      }
      const size_t first = gatherAt.size();
      for (int64_t tap = 0; tap < taps; ++tap) {
        for (int64_t q = tap, d = spatial - 1; d >= 0; --d) {
          k[d] = q % kernel[d];
          q /= kernel[d];
        }
        int64_t rowMajor = 0, colMajor = 0, colStride = 1;
        bool inside = true;
        for (int64_t d = 0; d < spatial; ++d) {
          int64_t c = o[d] * strides[d] - pads[d] + k[d] * dilations[d];
          inside &= c >= 0 && c < in[d];
          rowMajor = rowMajor * in[d] + c;
          colMajor += c * colStride;
          colStride *= in[d];
        }
        if (inside) {
          gatherAt.push_back(rowMajor);
          flatAt.push_back(order != 0 ? colMajor : rowMajor);
        }
      }
      if (gatherAt.size() == first) {
        return nodeError(node, index, "a window lies entirely in the padding");
      }
      gatherAt.resize(first + size_t(taps), gatherAt[first]);
      flatAt.resize(first + size_t(taps), flatAt[first]);
    }
    auto op = [&](llvm::StringRef kind, std::vector<Value *> inputs,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(inputs), std::move(a), result);
    };
    COMPILER_ASSIGN_OR_RETURN(Value * flat,
                              op("Reshape", {x, constInts({planes, plane}, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * windows,
        op("Gather",
           {flat, constTensor(ElementType::I64, {positions * taps}, gatherAt, name)},
           {{"axis", Attribute(int64_t(1))}}));
    COMPILER_ASSIGN_OR_RETURN(
        windows, op("Reshape", {windows, constInts({planes, positions, taps}, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * best, op("ArgMax", {windows}, {{"axis", Attribute(int64_t(2))},
                                              {"keepdims", Attribute(int64_t(0))}}));
    std::vector<int64_t> rowStart(static_cast<size_t>(positions));
    for (int64_t p = 0; p < positions; ++p) {
      rowStart[size_t(p)] = p * taps;
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * at,
        op("Add", {best, constTensor(ElementType::I64, {positions}, rowStart, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * within,
        op("Gather", {constTensor(ElementType::I64, {positions * taps}, flatAt, name), at},
           {{"axis", Attribute(int64_t(0))}}));
    std::vector<int64_t> offsets(static_cast<size_t>(planes));
    for (int64_t i = 0; i < planes; ++i) {
      offsets[size_t(i)] = i * plane;
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * indices,
        op("Add", {within, constTensor(ElementType::I64, {planes, 1}, offsets, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        indices, op("Reshape", {indices, constInts(yt.dims().vec(), name)}, {},
                    node.output(1)));
    COMPILER_RETURN_IF_ERROR(defineOutput(node, index, y, 0));
    return defineOutput(node, index, indices, 1);
  }

  // MelWeightMatrix of constant operands, as a constant [dft_length / 2 + 1,
  // num_mel_bins], computed as ONNX's reference does: num_mel_bins + 2
  // edges on the mel scale (2595 log10(1 + f / 700)) from lower_edge_hertz
  // in steps of (mel(upper) - mel(lower)) / (num_mel_bins + 2) (so the last
  // edge falls short of upper_edge_hertz), each mapped to the spectrogram
  // bin floor((dft_length + 1) * f / sample_rate); column i rises linearly
  // from edge i to edge i + 1 and falls to edge i + 2 (a column whose first
  // two edges coincide is 1 there).
  absl::Status importMelWeightMatrix(const onnx::NodeProto &node, int index,
                                     const std::vector<Value *> &operands,
                                     const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 5 ||
        std::count(operands.begin(), operands.end(), nullptr)) {
      return nodeError(node, index, "expected 5 operands");
    }
    std::vector<double> v;
    for (Value *operand : operands) {
      auto c = graph::getConstantFloats(operand);
      if (!c || c->size() != 1) {
        return unimplemented(node, index,
                             "operands that are not constant scalars (they "
                             "set the output's shape)");
      }
      v.push_back((*c)[0]);
    }
    const int64_t mels = int64_t(v[0]), dft = int64_t(v[1]);
    const double rate = v[2], lower = v[3], upper = v[4];
    if (mels < 1 || dft < 1 || !(rate > 0) || !(lower >= 0) ||
        !(upper > lower) || mels > (1 << 16) || dft > (1 << 24)) {
      return nodeError(node, index,
                       "needs num_mel_bins from 1 to 65536, dft_length from 1 "
                       "to 2^24, a positive sample_rate and 0 <= "
                       "lower_edge_hertz < upper_edge_hertz");
    }
    ElementType et = ElementType::F32;
    if (auto it = attrs.find("output_datatype"); it != attrs.end()) {
      auto mapped = it->second.isInt()
                        ? mapElementType(static_cast<int32_t>(it->second.getInt()))
                        : std::nullopt;
      if (!mapped) {
        return nodeError(node, index, "unsupported output_datatype");
      }
      et = *mapped;
    }
    const int64_t bins = dft / 2 + 1;
    auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low = mel(lower), step = (mel(upper) - low) / double(mels + 2);
    std::vector<int64_t> edge;
    for (int64_t i = 0; i < mels + 2; ++i) {
      double hz = 700.0 * (std::pow(10.0, (double(i) * step + low) / 2595.0) - 1.0);
      edge.push_back(int64_t(std::floor(double(dft + 1) * hz / rate)));
      if (edge.back() < 0 || edge.back() >= bins) {
        return nodeError(node, index,
                         "upper_edge_hertz " + std::to_string(upper) +
                             " maps past the last of the " + std::to_string(bins) +
                             " spectrogram bins (at most sample_rate / 2)");
      }
    }
    std::vector<double> out(size_t(bins * mels), 0.0);
    for (int64_t i = 0; i < mels; ++i) {
      const int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
      if (center == left) {
        out[size_t(center * mels + i)] = 1.0;
      } else {
        for (int64_t j = left; j <= center; ++j) {
          out[size_t(j * mels + i)] = double(j - left) / double(center - left);
        }
      }
      for (int64_t j = center; j < right; ++j) {
        out[size_t(j * mels + i)] = double(right - j) / double(right - center);
      }
    }
    Op *c = graph_->createConstant(TensorType::ranked(et, {bins, mels}),
                                   DenseData::fromDoubles(et, out));
    c->setNodeName(name);
    return defineOutput(node, index, c->result());
  }

  // If. A condition known at import (a constant, or folded from constants)
  // imports only the taken branch. A run-time condition imports both
  // branches, which ONNX ops cannot give side effects, and selects each
  // output with Where: both are computed on every call, so the outputs of
  // the two branches must have the same type. Branch values are local to
  // their branch; branches read outer values by name.
  absl::Status importIf(const onnx::NodeProto &node, int index,
                        const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected one condition");
    }
    Value *cond = operands[0];
    const TensorType &ct = cond->type();
    if (ct.elementType() != ElementType::Bool || !ct.hasStaticShape() ||
        ct.numElements() != 1) {
      return nodeError(node, index, "the condition must be a single bool");
    }
    const onnx::GraphProto *branches[2] = {nullptr, nullptr};
    for (const auto &a : node.attribute()) {
      if (a.type() != onnx::AttributeProto::GRAPH) {
        continue;
      }
      if (a.name() == "then_branch") {
        branches[0] = &a.g();
      } else if (a.name() == "else_branch") {
        branches[1] = &a.g();
      }
    }
    if (!branches[0] || !branches[1]) {
      return nodeError(node, index, "needs graphs then_branch and else_branch");
    }
    std::optional<bool> known;
    if (auto c = graph::getConstantFloats(cond)) {
      known = (*c)[0] != 0;
    }
    std::vector<Value *> results[2];
    for (int b = 0; b < 2; ++b) {
      if (known && *known != (b == 0)) {
        continue;
      }
      auto imported = importBranch(*branches[b], name + (b ? "/else" : "/then"));
      if (!imported.ok()) {
        // Both branches of a run-time condition are imported: the failing
        // one may be a branch the deployment never takes.
        return known ? imported.status()
                     : absl::Status(imported.status().code(),
                                    std::string(imported.status().message()) +
                                        " (in " + (b ? "else" : "then") +
                                        "_branch of If '" + name +
                                        "', whose condition is known only at "
                                        "run time" + inputsBehind(cond) + ")");
      }
      results[b] = std::move(*imported);
      if (results[b].size() != size_t(node.output_size())) {
        return nodeError(node, index,
                         std::string(b ? "else" : "then") + "_branch has " +
                             std::to_string(results[b].size()) + " outputs, the node " +
                             std::to_string(node.output_size()));
      }
    }
    Value *flag = cond;
    if (!known && ct.rank() > 0) {
      COMPILER_ASSIGN_OR_RETURN(
          flag, rewriteOp(name, "Reshape", {cond, constInts({}, name)}));
    }
    for (int k = 0; k < node.output_size(); ++k) {
      Value *out = nullptr;
      if (known) {
        COMPILER_ASSIGN_OR_RETURN(
            out, rewriteOp(name, "Identity", {results[*known ? 0 : 1][k]}, {},
                           node.output(k)));
      } else {
        Value *a = results[0][k], *b = results[1][k];
        if (!a->type().hasStaticShape() || a->type() != b->type()) {
          return unimplemented(
              node, index,
              "output " + std::to_string(k) + " is " + a->type().str() +
                  " in then_branch and " + b->type().str() +
                  " in else_branch; a condition known only at run time "
                  "selects between outputs of one static type" +
                  inputsBehind(cond));
        }
        COMPILER_ASSIGN_OR_RETURN(
            out, rewriteOp(name, "Where", {flag, a, b}, {}, node.output(k)));
      }
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, out, k));
    }
    return absl::OkStatus();
  }

  // Names the graph inputs |v| is computed from, for an error on a value
  // the compiler needs at compile time: the flags that fix them.
  std::string inputsBehind(Value *v, const std::string &what = "the condition") const {
    std::set<Value *> seen;
    std::vector<Value *> work = {v};
    std::string names;
    while (!work.empty()) {
      Value *x = work.back();
      work.pop_back();
      if (!x || !seen.insert(x).second) {
        continue;
      }
      if (llvm::is_contained(graph_->inputs(), x)) {
        names += (names.empty() ? "'" : ", '") + x->name() + "'";
      } else if (Op *op = x->definingOp()) {
        for (Value *operand : op->operands()) {
          work.push_back(operand);
        }
      }
    }
    if (names.empty()) {
      return "";
    }
    return "; " + what + " is computed from graph input " + names +
           ": osprey-compile --input-value=NAME=VALUE fixes an input's value "
           "at compile time (--input-shape=NAME:SHAPE its shape)";
  }

  // Imports the nodes of an If branch into the graph; returns its outputs.
  // Names the branch defines are visible only inside it.
  absl::StatusOr<std::vector<Value *>>
  importBranch(const onnx::GraphProto &g, const std::string &prefix,
               const std::vector<Value *> &inputs = {}) {
    const std::unordered_map<std::string, Value *> outer = values_;
    if (size_t(g.input_size()) != inputs.size()) {
      return absl::InvalidArgumentError(
          "'" + prefix + "' has " + std::to_string(g.input_size()) +
          " inputs, expected " + std::to_string(inputs.size()));
    }
    for (int i = 0; i < g.input_size(); ++i) {
      values_[g.input(i).name()] = inputs[i];
    }
    for (const auto &init : g.initializer()) {
      COMPILER_ASSIGN_OR_RETURN(DenseData data, readTensor(init));
      COMPILER_ASSIGN_OR_RETURN(TensorType type, tensorType(init));
      Op *c = graph_->createConstant(type, std::move(data), nullptr, init.name());
      c->setNodeName(prefix + "/" + init.name());
      values_[init.name()] = c->result();
    }
    for (int i = 0; i < g.node_size(); ++i) {
      // The node itself, not a copy: constants may keep referring to the
      // model's tensor data.
      COMPILER_RETURN_IF_ERROR(importNode(g.node(i), i));
    }
    std::vector<Value *> outputs;
    for (const auto &out : g.output()) {
      auto it = values_.find(out.name());
      if (it == values_.end()) {
        return absl::InvalidArgumentError("branch output '" + out.name() +
                                          "' of '" + prefix +
                                          "' is not produced by any node");
      }
      outputs.push_back(it->second);
    }
    values_ = outer;
    return outputs;
  }

  // A loop runs at most this many iterations when unrolled, and the
  // unrolled loops of a model (nested ones included) inline at most this
  // many body nodes in all.
  static constexpr int64_t kMaxUnrolledIterations = 4096;
  static constexpr int64_t kMaxUnrolledNodes = 65536;

  // Counts one more iteration (the |iterations|-th) of |body| against the
  // limits above.
  absl::Status checkUnrollSize(const onnx::NodeProto &node, int index,
                               const onnx::GraphProto &body,
                               int64_t iterations) {
    unrolledNodes_ += std::max(1, body.node_size());
    if (iterations > kMaxUnrolledIterations ||
        unrolledNodes_ > kMaxUnrolledNodes) {
      return unimplemented(
          node, index,
          "reaches " + std::to_string(iterations) + " iterations of a " +
              std::to_string(body.node_size()) + "-node body (" +
              std::to_string(unrolledNodes_) +
              " body nodes inlined in all); loops are unrolled at compile "
              "time, up to " + std::to_string(kMaxUnrolledIterations) +
              " iterations each and " + std::to_string(kMaxUnrolledNodes) +
              " body nodes in all");
    }
    return absl::OkStatus();
  }

  // The body graph attribute of a Loop or Scan.
  absl::StatusOr<const onnx::GraphProto *> bodyOf(const onnx::NodeProto &node,
                                                  int index) {
    for (const auto &a : node.attribute()) {
      if (a.name() == "body" && a.type() == onnx::AttributeProto::GRAPH) {
        return &a.g();
      }
    }
    return nodeError(node, index, "needs a graph attribute 'body'");
  }

  // |parts| (each of one type) stacked along a new axis |axis|.
  absl::StatusOr<Value *> stack(const std::string &name,
                                const std::vector<Value *> &parts, int64_t axis,
                                const std::string &resultName) {
    std::vector<Value *> expanded;
    for (Value *part : parts) {
      COMPILER_ASSIGN_OR_RETURN(
          Value * e, rewriteOp(name, "Unsqueeze", {part, constInts({axis}, name)}));
      expanded.push_back(e);
    }
    if (expanded.size() == 1) {
      return rewriteOp(name, "Identity", {expanded[0]}, {}, resultName);
    }
    return rewriteOp(name, "Concat", expanded, {{"axis", Attribute(axis)}},
                     resultName);
  }

  // Loop, unrolled: the trip count M must be a constant (or absent), and
  // the condition a constant in every iteration (the initial one, and each
  // body's cond output once folded), so the iterations are known at
  // compile time; each iteration inlines the body with the iteration
  // number as a constant. Outputs: the final loop-carried values, then
  // each scan output's per-iteration values stacked along a new axis 0.
  absl::Status importLoop(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    COMPILER_ASSIGN_OR_RETURN(const onnx::GraphProto *body, bodyOf(node, index));
    const size_t carried = operands.size() > 2 ? operands.size() - 2 : 0;
    if (body->input_size() != int(carried) + 2 ||
        body->output_size() < int(carried) + 1) {
      return nodeError(node, index,
                       "the body must take the iteration number, the "
                       "condition and the " + std::to_string(carried) +
                           " loop-carried values, and return the condition "
                           "and them before any scan outputs");
    }
    const size_t scans = body->output_size() - 1 - carried;
    if (size_t(node.output_size()) > carried + scans) {
      return nodeError(node, index,
                       "has more outputs than the body's loop-carried "
                       "values and scan outputs");
    }
    auto scalarConstant = [&](Value *v, const char *what)
        -> absl::StatusOr<std::optional<double>> {
      if (!v) {
        return std::optional<double>();
      }
      if (!v->type().hasStaticShape() || v->type().numElements() != 1) {
        return nodeError(node, index,
                         std::string(what) + " must hold a single element");
      }
      auto c = graph::getConstantFloats(v);
      if (!c) {
        return unimplemented(
            node, index,
            std::string(what) +
                " is known only at run time (loops are unrolled at compile "
                "time" + inputsBehind(v, "it") + ")");
      }
      return std::optional<double>((*c)[0]);
    };
    Value *tripOperand = operands.size() > 0 ? operands[0] : nullptr;
    Value *condOperand = operands.size() > 1 ? operands[1] : nullptr;
    COMPILER_ASSIGN_OR_RETURN(std::optional<double> trip,
                              scalarConstant(tripOperand, "the trip count M"));
    COMPILER_ASSIGN_OR_RETURN(std::optional<double> cond,
                              scalarConstant(condOperand, "the condition"));
    if (!trip && !condOperand) {
      return unimplemented(node, index,
                           "a loop without a trip count or a condition never ends");
    }
    const int64_t limit = trip ? std::max<int64_t>(0, int64_t(*trip))
                               : kMaxUnrolledIterations + 1;
    std::vector<Value *> state(operands.begin() + std::min<size_t>(2, operands.size()),
                               operands.end());
    std::vector<std::vector<Value *>> scanned(scans);
    bool running = !cond || *cond != 0;
    int64_t i = 0;
    for (; running && i < limit; ++i) {
      COMPILER_RETURN_IF_ERROR(checkUnrollSize(node, index, *body, i + 1));
      std::vector<Value *> inputs = {
          constScalar(ElementType::I64, double(i), name),
          constScalar(ElementType::Bool, 1.0, name)};
      inputs.insert(inputs.end(), state.begin(), state.end());
      COMPILER_ASSIGN_OR_RETURN(
          std::vector<Value *> out,
          importBranch(*body, name + "/iteration" + std::to_string(i), inputs));
      std::copy(out.begin() + 1, out.begin() + 1 + carried, state.begin());
      for (size_t k = 0; k < scans; ++k) {
        scanned[k].push_back(out[1 + carried + k]);
      }
      if (condOperand) {
        COMPILER_ASSIGN_OR_RETURN(std::optional<double> next,
                                  scalarConstant(out[0], "the body's condition"));
        running = *next != 0;
      }
    }
    return defineUnrolledOutputs(node, index, state, scanned,
                                 std::vector<int64_t>(scans, 0),
                                 std::vector<int64_t>(scans, 0));
  }

  // Defines the outputs of an unrolled Loop or Scan: the final |state|
  // values, then each scan output's values per iteration (|scanned|)
  // stacked along a new axis |axes[j]| (negative: from the end), last
  // iteration first where |reversed[j]| is 1.
  absl::Status defineUnrolledOutputs(
      const onnx::NodeProto &node, int index, const std::vector<Value *> &state,
      const std::vector<std::vector<Value *>> &scanned,
      const std::vector<int64_t> &axes, const std::vector<int64_t> &reversed) {
    const std::string name = nodeName(node, index);
    const size_t n = state.size();
    for (size_t j = 0; j < n && int(j) < node.output_size(); ++j) {
      COMPILER_ASSIGN_OR_RETURN(
          Value * out, rewriteOp(name, "Identity", {state[j]}, {}, node.output(j)));
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, out, j));
    }
    for (size_t j = 0; j < scanned.size() && int(n + j) < node.output_size(); ++j) {
      if (node.output(n + j).empty()) {
        continue;
      }
      if (scanned[j].empty()) {
        return unimplemented(node, index,
                             "a scan output of no iteration (its element "
                             "shape is unknown)");
      }
      const int64_t r = scanned[j][0]->type().rank() + 1;
      int64_t axis = axes[j];
      if (axis < -r || axis >= r) {
        return nodeError(node, index,
                         "scan_output_axes entry " + std::to_string(axis) +
                             " is out of range for rank " + std::to_string(r));
      }
      axis = axis < 0 ? axis + r : axis;
      std::vector<Value *> parts = scanned[j];
      if (reversed[j]) {
        std::reverse(parts.begin(), parts.end());
      }
      COMPILER_ASSIGN_OR_RETURN(Value * out,
                                stack(name, parts, axis, node.output(n + j)));
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, out, n + j));
    }
    return absl::OkStatus();
  }

  // Scan (opset 9 on), unrolled over the scan inputs' static length: the
  // body gets the state and each scan input's slice (along its
  // scan_input_axes entry, read backwards where scan_input_directions is
  // 1); outputs are the final state, then each scan output's slices
  // stacked along its scan_output_axes entry (in reverse iteration order
  // where scan_output_directions is 1).
  absl::Status importScan(const onnx::NodeProto &node, int index,
                          const std::vector<Value *> &operands,
                          const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    COMPILER_ASSIGN_OR_RETURN(const onnx::GraphProto *body, bodyOf(node, index));
    auto intAttr = [&](const char *key) -> std::optional<int64_t> {
      auto it = attrs.find(key);
      if (it == attrs.end() || !it->second.isInt()) {
        return std::nullopt;
      }
      return it->second.getInt();
    };
    auto listAttr = [&](const char *key, size_t n) -> absl::StatusOr<std::vector<int64_t>> {
      auto it = attrs.find(key);
      if (it == attrs.end()) {
        return std::vector<int64_t>(n, 0);
      }
      if (!it->second.isIntList() || it->second.getIntList().size() != n) {
        return nodeError(node, index,
                         "attribute '" + std::string(key) + "' must list " +
                             std::to_string(n) + " integers");
      }
      return it->second.getIntList();
    };
    std::optional<int64_t> numScanInputs = intAttr("num_scan_inputs");
    if (!numScanInputs || *numScanInputs < 1 ||
        size_t(*numScanInputs) > operands.size()) {
      return nodeError(node, index,
                       "needs num_scan_inputs between 1 and its input count");
    }
    if (std::count(operands.begin(), operands.end(), nullptr)) {
      return nodeError(node, index, "an input is omitted");
    }
    const size_t m = *numScanInputs, n = operands.size() - m;
    if (body->input_size() != int(n + m) || body->output_size() < int(n)) {
      return nodeError(node, index,
                       "the body must take the " + std::to_string(n) +
                           " state values and one slice of each of the " +
                           std::to_string(m) + " scan inputs, and return the "
                           "state values before the scan outputs");
    }
    const size_t k = body->output_size() - n;
    if (size_t(node.output_size()) > n + k) {
      return nodeError(node, index, "has more outputs than its body");
    }
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> inAxes,
                              listAttr("scan_input_axes", m));
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> inDirs,
                              listAttr("scan_input_directions", m));
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> outAxes,
                              listAttr("scan_output_axes", k));
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> outDirs,
                              listAttr("scan_output_directions", k));
    int64_t length = -1;
    for (size_t j = 0; j < m; ++j) {
      const TensorType &t = operands[n + j]->type();
      if (!t.hasStaticShape()) {
        return unimplemented(node, index,
                             "scan input " + std::to_string(j) +
                                 " has dynamic shape " + t.str() +
                                 " (pin it with --input-shape)");
      }
      const int64_t r = t.rank();
      if (inAxes[j] < -r || inAxes[j] >= r) {
        return nodeError(node, index,
                         "scan_input_axes entry " + std::to_string(inAxes[j]) +
                             " is out of range for " + t.str());
      }
      inAxes[j] = inAxes[j] < 0 ? inAxes[j] + r : inAxes[j];
      const int64_t len = t.dim(inAxes[j]);
      if (length >= 0 && len != length) {
        return nodeError(node, index,
                         "scan inputs have different lengths (" +
                             std::to_string(length) + " and " +
                             std::to_string(len) + ")");
      }
      length = len;
    }
    for (int64_t d : inDirs) {
      if (d != 0 && d != 1) {
        return nodeError(node, index, "scan directions must be 0 or 1");
      }
    }
    for (int64_t d : outDirs) {
      if (d != 0 && d != 1) {
        return nodeError(node, index, "scan directions must be 0 or 1");
      }
    }
    std::vector<Value *> state(operands.begin(), operands.begin() + n);
    std::vector<std::vector<Value *>> scanned(k);
    for (int64_t t = 0; t < length; ++t) {
      COMPILER_RETURN_IF_ERROR(checkUnrollSize(node, index, *body, t + 1));
      std::vector<Value *> inputs = state;
      for (size_t j = 0; j < m; ++j) {
        const int64_t at = inDirs[j] ? length - 1 - t : t;
        COMPILER_ASSIGN_OR_RETURN(
            Value * slice,
            rewriteOp(name, "Gather",
                      {operands[n + j], constScalar(ElementType::I64, double(at), name)},
                      {{"axis", Attribute(inAxes[j])}}));
        inputs.push_back(slice);
      }
      COMPILER_ASSIGN_OR_RETURN(
          std::vector<Value *> out,
          importBranch(*body, name + "/iteration" + std::to_string(t), inputs));
      std::copy(out.begin(), out.begin() + n, state.begin());
      for (size_t j = 0; j < k; ++j) {
        scanned[j].push_back(out[n + j]);
      }
    }
    return defineUnrolledOutputs(node, index, state, scanned, outAxes, outDirs);
  }

  // One step of the training domain's optimizers over n tensors, as their
  // definitions compute it (R the learning rate, T the step count; g the
  // gradient plus norm_coefficient * x):
  //   Adagrad:  h' = h + g^2, x' = x - R / (1 + T decay_factor) * g /
  //             (sqrt(h') + epsilon); outputs x'..., h'...
  //   Momentum: v' = alpha v + (T > 0 ? beta : 1) g, x' = x - R v'
  //             (standard) or x - R (g + alpha v') (nesterov); x'..., v'...
  //   Adam:     v' = alpha v + (1 - alpha) g, h' = beta h + (1 - beta) g^2,
  //             x' = (1 - norm_coefficient_post) (x - R' v' / (sqrt(h') +
  //             epsilon)) with R' = R sqrt(1 - beta^T) / (1 - alpha^T) when
  //             T > 0, else R; x'..., v'..., h'...
  absl::Status importOptimizer(const onnx::NodeProto &node, int index,
                               const std::vector<Value *> &in,
                               const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const std::string &kind = node.op_type();
    if (std::count(in.begin(), in.end(), nullptr)) {
      return nodeError(node, index, "an input is omitted");
    }
    const size_t states = kind == "Adam" ? 2 : 1; // V and/or H per tensor
    const size_t per = 2 + states;                // X, G, states
    if (in.size() < 2 + per || (in.size() - 2) % per != 0) {
      return nodeError(node, index,
                       "expected R, T and " + std::to_string(per) +
                           " inputs per optimized tensor");
    }
    const size_t n = (in.size() - 2) / per;
    if (size_t(node.output_size()) != n * (1 + states)) {
      return nodeError(node, index,
                       "expected " + std::to_string(n * (1 + states)) +
                           " outputs for " + std::to_string(n) + " tensors");
    }
    const TensorType &rt = in[0]->type(), &tt = in[1]->type();
    if (!rt.hasStaticShape() || rt.numElements() != 1 ||
        !graph::isFloatType(rt.elementType()) || !tt.hasStaticShape() ||
        tt.numElements() != 1 || tt.elementType() != ElementType::I64) {
      return nodeError(node, index,
                       "R must be a floating-point scalar and T an int64 scalar");
    }
    auto number = [&](const char *attr, std::optional<double> fallback)
        -> absl::StatusOr<double> {
      if (!attrs.count(attr) && !fallback) {
        return nodeError(node, index, std::string("needs attribute '") + attr + "'");
      }
      return numberAttr(node, index, attrs, attr, fallback.value_or(0.0));
    };
    auto op = [&](llvm::StringRef k, std::vector<Value *> operands,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, k, std::move(operands), std::move(a), result);
    };
    COMPILER_ASSIGN_OR_RETURN(double norm, number("norm_coefficient", 0.0));
    COMPILER_ASSIGN_OR_RETURN(
        Value * later, op("Greater", {in[1], constScalar(ElementType::I64, 0, name)}));
    // R and T in each tensor's own type (tensors may differ).
    for (size_t i = 0; i < n; ++i) {
      Value *x = in[2 + i], *g = in[2 + n + i];
      const ElementType et = x->type().elementType();
      if (!graph::isFloatType(et)) {
        return nodeError(node, index, "optimized tensors must be floating-point");
      }
      auto c = [&](double v) { return constScalar(et, v, name); };
      auto asType = [&](Value *v) -> absl::StatusOr<Value *> {
        if (v->type().elementType() == et) {
          return v;
        }
        return op("Cast", {v}, {{"to", Attribute(graph::elementTypeName(et).str())}});
      };
      COMPILER_ASSIGN_OR_RETURN(Value * r, asType(in[0]));
      COMPILER_ASSIGN_OR_RETURN(Value * t, asType(in[1]));
      COMPILER_ASSIGN_OR_RETURN(Value * normX, op("Mul", {c(norm), x}));
      COMPILER_ASSIGN_OR_RETURN(Value * grad, op("Add", {normX, g}));
      auto output = [&](size_t k) { return node.output(int(k * n + i)); };
      Value *xNew = nullptr;
      std::vector<Value *> stateOut;
      if (kind == "Adagrad") {
        COMPILER_ASSIGN_OR_RETURN(double decay, number("decay_factor", 0.0));
        COMPILER_ASSIGN_OR_RETURN(double eps, number("epsilon", 0.0));
        COMPILER_ASSIGN_OR_RETURN(Value * td, op("Mul", {t, c(decay)}));
        COMPILER_ASSIGN_OR_RETURN(Value * den, op("Add", {c(1.0), td}));
        COMPILER_ASSIGN_OR_RETURN(Value * rate, op("Div", {r, den}));
        COMPILER_ASSIGN_OR_RETURN(Value * g2, op("Mul", {grad, grad}));
        COMPILER_ASSIGN_OR_RETURN(Value * h, op("Add", {in[2 + 2 * n + i], g2}, {}, output(1)));
        COMPILER_ASSIGN_OR_RETURN(Value * root, op("Sqrt", {h}));
        COMPILER_ASSIGN_OR_RETURN(Value * scale, op("Add", {root, c(eps)}));
        COMPILER_ASSIGN_OR_RETURN(Value * step, op("Mul", {rate, grad}));
        COMPILER_ASSIGN_OR_RETURN(Value * scaled, op("Div", {step, scale}));
        COMPILER_ASSIGN_OR_RETURN(xNew, op("Sub", {x, scaled}, {}, output(0)));
        stateOut = {h};
      } else if (kind == "Momentum") {
        COMPILER_ASSIGN_OR_RETURN(double alpha, number("alpha", std::nullopt));
        COMPILER_ASSIGN_OR_RETURN(double beta, number("beta", std::nullopt));
        auto mode = attrs.find("mode");
        if (mode == attrs.end() || !mode->second.isString() ||
            (mode->second.getString() != "standard" &&
             mode->second.getString() != "nesterov")) {
          return nodeError(node, index,
                           "attribute 'mode' must be \"standard\" or \"nesterov\"");
        }
        COMPILER_ASSIGN_OR_RETURN(Value * b, op("Where", {later, c(beta), c(1.0)}));
        COMPILER_ASSIGN_OR_RETURN(Value * av, op("Mul", {c(alpha), in[2 + 2 * n + i]}));
        COMPILER_ASSIGN_OR_RETURN(Value * bg, op("Mul", {b, grad}));
        COMPILER_ASSIGN_OR_RETURN(Value * v, op("Add", {av, bg}, {}, output(1)));
        Value *dir = v;
        if (mode->second.getString() == "nesterov") {
          COMPILER_ASSIGN_OR_RETURN(Value * av2, op("Mul", {c(alpha), v}));
          COMPILER_ASSIGN_OR_RETURN(dir, op("Add", {grad, av2}));
        }
        COMPILER_ASSIGN_OR_RETURN(Value * step, op("Mul", {r, dir}));
        COMPILER_ASSIGN_OR_RETURN(xNew, op("Sub", {x, step}, {}, output(0)));
        stateOut = {v};
      } else {
        COMPILER_ASSIGN_OR_RETURN(double alpha, number("alpha", 0.9));
        COMPILER_ASSIGN_OR_RETURN(double beta, number("beta", 0.999));
        COMPILER_ASSIGN_OR_RETURN(double eps, number("epsilon", 1e-6));
        COMPILER_ASSIGN_OR_RETURN(double post, number("norm_coefficient_post", 0.0));
        COMPILER_ASSIGN_OR_RETURN(Value * av, op("Mul", {c(alpha), in[2 + 2 * n + i]}));
        COMPILER_ASSIGN_OR_RETURN(Value * ag, op("Mul", {c(1.0 - alpha), grad}));
        COMPILER_ASSIGN_OR_RETURN(Value * v, op("Add", {av, ag}, {}, output(1)));
        COMPILER_ASSIGN_OR_RETURN(Value * g2, op("Mul", {grad, grad}));
        COMPILER_ASSIGN_OR_RETURN(Value * bh, op("Mul", {c(beta), in[2 + 3 * n + i]}));
        COMPILER_ASSIGN_OR_RETURN(Value * bg, op("Mul", {c(1.0 - beta), g2}));
        COMPILER_ASSIGN_OR_RETURN(Value * h, op("Add", {bh, bg}, {}, output(2)));
        COMPILER_ASSIGN_OR_RETURN(Value * root, op("Sqrt", {h}));
        COMPILER_ASSIGN_OR_RETURN(Value * scale, op("Add", {root, c(eps)}));
        // R' (T > 0): R sqrt(1 - beta^T) / (1 - alpha^T).
        COMPILER_ASSIGN_OR_RETURN(Value * betaT, op("Pow", {c(beta), t}));
        COMPILER_ASSIGN_OR_RETURN(Value * alphaT, op("Pow", {c(alpha), t}));
        COMPILER_ASSIGN_OR_RETURN(Value * num, op("Sub", {c(1.0), betaT}));
        COMPILER_ASSIGN_OR_RETURN(Value * numRoot, op("Sqrt", {num}));
        COMPILER_ASSIGN_OR_RETURN(Value * den, op("Sub", {c(1.0), alphaT}));
        COMPILER_ASSIGN_OR_RETURN(Value * rn, op("Mul", {r, numRoot}));
        COMPILER_ASSIGN_OR_RETURN(Value * corrected, op("Div", {rn, den}));
        COMPILER_ASSIGN_OR_RETURN(Value * rate, op("Where", {later, corrected, r}));
        COMPILER_ASSIGN_OR_RETURN(Value * ratio, op("Div", {v, scale}));
        COMPILER_ASSIGN_OR_RETURN(Value * step, op("Mul", {rate, ratio}));
        COMPILER_ASSIGN_OR_RETURN(Value * moved, op("Sub", {x, step}));
        COMPILER_ASSIGN_OR_RETURN(xNew, op("Mul", {c(1.0 - post), moved}, {}, output(0)));
        stateOut = {v, h};
      }
      COMPILER_RETURN_IF_ERROR(defineOutput(node, index, xNew, int(i)));
      for (size_t k = 0; k < stateOut.size(); ++k) {
        COMPILER_RETURN_IF_ERROR(
            defineOutput(node, index, stateOut[k], int((k + 1) * n + i)));
      }
    }
    return absl::OkStatus();
  }

  // Det of [..., n, n] matrices with n <= 4, by the Leibniz formula: the
  // flattened matrices gathered at a constant index of every permutation's
  // entries, each permutation's product (ReduceProd) times its sign, and
  // the sum. For n <= 4 that is at most 24 products of 4, the closed forms
  // libraries use for small matrices; larger n is refused.
  absl::Status importDet(const onnx::NodeProto &node, int index,
                         const std::vector<Value *> &operands) {
    const std::string name = nodeName(node, index);
    if (operands.size() != 1 || !operands[0]) {
      return nodeError(node, index, "expected 1 operand");
    }
    const TensorType &t = operands[0]->type();
    if (!t.hasStaticShape() || t.rank() < 2 ||
        !graph::isFloatType(t.elementType()) ||
        t.dim(t.rank() - 1) != t.dim(t.rank() - 2)) {
      return nodeError(node, index,
                       "needs floating-point square matrices [..., n, n] of "
                       "static shape");
    }
    const int64_t n = t.dim(t.rank() - 1);
    if (n < 1 || n > 4) {
      return absl::UnimplementedError(
          "node '" + name + "' (Det): matrices of size " + std::to_string(n) +
          " (Det is implemented for sizes 1 to 4)");
    }
    std::vector<int64_t> perm(static_cast<size_t>(n)), entries;
    std::vector<double> signs;
    for (int64_t i = 0; i < n; ++i) {
      perm[size_t(i)] = i;
    }
    do {
      int64_t inversions = 0;
      for (int64_t i = 0; i < n; ++i) {
        entries.push_back(i * n + perm[size_t(i)]);
        for (int64_t j = i + 1; j < n; ++j) {
          inversions += perm[size_t(i)] > perm[size_t(j)];
        }
      }
      signs.push_back(inversions % 2 ? -1.0 : 1.0);
    } while (std::next_permutation(perm.begin(), perm.end()));
    const auto count = static_cast<int64_t>(signs.size());
    std::vector<int64_t> flat(t.dims().begin(), t.dims().end() - 2);
    std::vector<int64_t> products = flat;
    flat.push_back(n * n);
    products.push_back(count);
    products.push_back(n);
    const int64_t last = static_cast<int64_t>(flat.size()) - 1;
    auto op = [&](llvm::StringRef kind, std::vector<Value *> in,
                  std::map<std::string, Attribute> a = {},
                  const std::string &result = "") {
      return rewriteOp(name, kind, std::move(in), std::move(a), result);
    };
    const Attribute noKeep(int64_t(0));
    COMPILER_ASSIGN_OR_RETURN(Value * rows,
                              op("Reshape", {operands[0], constInts(flat, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * picked,
        op("Gather",
           {rows, constTensor(ElementType::I64, {count * n}, entries, name)},
           {{"axis", Attribute(last)}}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * terms, op("Reshape", {picked, constInts(products, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * prod, op("ReduceProd", {terms, constInts({last + 1}, name)},
                         {{"keepdims", noKeep}}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * signed_,
        op("Mul", {prod, constTensor(t.elementType(), {count}, signs, name)}));
    COMPILER_ASSIGN_OR_RETURN(
        Value * det, op("ReduceSum", {signed_, constInts({last}, name)},
                        {{"keepdims", noKeep}}, node.output(0)));
    return defineOutput(node, index, det);
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
  // then scale[c] and B[c]), BatchNormalization in training mode (per
  // channel over the batch and spatial axes, then scale and B; its
  // running_mean and running_var outputs are mean * momentum + batch
  // mean * (1 - momentum), and the same for the variance) and
  // MeanVarianceNormalization (over attribute axes, default 0, 2, 3):
  // d = x - mean(x), var = mean(d * d) (the centred form, which does not
  // cancel as E(x^2) - E(x)^2 does), then d / sqrt(var + epsilon) and
  // d / (sqrt(var) + 1e-9) respectively, as their definitions add epsilon.
  absl::Status importNormalization(const onnx::NodeProto &node, int index,
                                   const std::vector<Value *> &operands,
                                   const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    const bool batch = node.op_type() == "BatchNormalization";
    const bool instance = batch || node.op_type() == "InstanceNormalization";
    const size_t expected = batch ? 5u : instance ? 3u : 1u;
    if (operands.size() != expected ||
        std::count(operands.begin(), operands.end(), nullptr)) {
      return nodeError(node, index, "expected " + std::to_string(expected) +
                                        " operand" + (expected > 1 ? "s" : ""));
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
      if (batch) {
        axes.push_back(0);
      }
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
    static const char *const kVectors[] = {"", "scale", "B", "input_mean",
                                           "input_var"};
    for (size_t i = 1; i < operands.size(); ++i) {
      const TensorType &p = operands[i]->type();
      if (!p.hasRank() || p.rank() != 1 || p.elementType() != et ||
          (p.dim(0) != t.dim(1) && t.dim(1) != graph::kDynamic)) {
        return nodeError(node, index,
                         std::string(kVectors[i]) + " must be a vector of one " +
                             graph::elementTypeName(et).str() +
                             " per channel");
      }
    }
    if (batch) {
      // The running statistics, from the batch's.
      COMPILER_ASSIGN_OR_RETURN(double momentum,
                                numberAttr(node, index, attrs, "momentum", 0.9));
      for (int k = 1; k < 3 && k < node.output_size(); ++k) {
        if (node.output(k).empty()) {
          continue;
        }
        COMPILER_ASSIGN_OR_RETURN(
            Value * batchStat, op("Squeeze", {k == 1 ? m : var, constInts(axes, name)}));
        COMPILER_ASSIGN_OR_RETURN(
            Value * kept, op("Mul", {operands[k + 2], constScalar(et, momentum, name)}));
        COMPILER_ASSIGN_OR_RETURN(
            Value * added,
            op("Mul", {batchStat, constScalar(et, 1.0 - momentum, name)}));
        COMPILER_ASSIGN_OR_RETURN(Value * running,
                                  op("Add", {kept, added}, {}, node.output(k)));
        COMPILER_RETURN_IF_ERROR(defineOutput(node, index, running, k));
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

  // Resize with tf_crop_and_resize: the Resize, which the lowering
  // interpolates at every output position (clamped to the input), with
  // extrapolation_value selected by Where wherever an axis's coordinate
  // (graph::cropAndResizeCoordinate) falls outside the input. Needs a
  // constant roi and static shapes.
  absl::Status importCropAndResize(const onnx::NodeProto &node, int index,
                                   const std::vector<Value *> &operands,
                                   const std::map<std::string, Attribute> &attrs) {
    const std::string name = nodeName(node, index);
    if (operands.empty() || !operands[0]) {
      return nodeError(node, index, "expected an input X");
    }
    const TensorType &x = operands[0]->type();
    if (!x.hasStaticShape()) {
      return unimplemented(node, index,
                           "tf_crop_and_resize needs an input of static shape");
    }
    const int64_t n = x.rank();
    auto roi = operands.size() > 1 && operands[1]
                   ? graph::getConstantFloats(operands[1])
                   : std::nullopt;
    if (!roi || int64_t(roi->size()) != 2 * n) {
      return unimplemented(node, index,
                           "tf_crop_and_resize needs a constant roi of " +
                               std::to_string(2 * n) + " values");
    }
    double extrapolation = 0;
    if (auto it = attrs.find("extrapolation_value"); it != attrs.end()) {
      if (!it->second.isFloat()) {
        return nodeError(node, index,
                         "attribute 'extrapolation_value' must be a float");
      }
      extrapolation = it->second.getFloat();
    }
    COMPILER_ASSIGN_OR_RETURN(Value * resized,
                              rewriteOp(name, "Resize", operands, attrs));
    const TensorType &t = resized->type();
    if (!t.hasStaticShape()) {
      return unimplemented(node, index,
                           "tf_crop_and_resize needs constant sizes or scales");
    }
    std::optional<std::vector<double>> scales;
    if (operands.size() > 2 && operands[2] &&
        operands[2]->type().numElements() > 0) {
      scales = graph::getConstantFloats(operands[2]);
    }
    Value *outside = nullptr;
    for (int64_t a = 0; a < n; ++a) {
      // As the lowering's resizeTaps: scale * in, or the extent for sizes.
      const double outWidth =
          scales ? (*scales)[a] * double(x.dim(a)) : double(t.dim(a));
      std::vector<int64_t> mask(t.dim(a));
      bool any = false;
      for (int64_t o = 0; o < t.dim(a); ++o) {
        mask[o] = graph::outsideAxis(
            graph::cropAndResizeCoordinate(x.dim(a), outWidth, (*roi)[a],
                                           (*roi)[n + a], o),
            x.dim(a));
        any |= mask[o] != 0;
      }
      if (!any) {
        continue;
      }
      std::vector<int64_t> shape(n, 1);
      shape[a] = t.dim(a);
      Op *m = graph_->createConstant(TensorType::ranked(ElementType::Bool, shape),
                                     DenseData::fromInt64s(ElementType::Bool, mask));
      m->setNodeName(name);
      if (outside) {
        COMPILER_ASSIGN_OR_RETURN(outside,
                                  rewriteOp(name, "Or", {outside, m->result()}));
      } else {
        outside = m->result();
      }
    }
    Value *out = nullptr;
    if (outside) {
      COMPILER_ASSIGN_OR_RETURN(
          out, rewriteOp(name, "Where",
                         {outside, constScalar(t.elementType(), extrapolation, name),
                          resized},
                         {}, node.output(0)));
    } else {
      COMPILER_ASSIGN_OR_RETURN(
          out, rewriteOp(name, "Identity", {resized}, {}, node.output(0)));
    }
    return defineOutput(node, index, out);
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
    // but kRewrittenOps and the training domain's (which have no kind).
    const graph::OpInfo *info = graph::lookupOp(opType);
    if (!isSupported(opType) && !isTrainingOp(node)) {
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
      if (a.type() == onnx::AttributeProto::STRINGS && isRecurrent(opType)) {
        continue; // activations: importRecurrent reads them from the node
      }
      if (a.type() == onnx::AttributeProto::GRAPH) {
        continue; // If's branches, a Loop's or Scan's body: read from the node
      }
      auto attr = convertAttr(a);
      if (!attr.ok()) {
        return nodeError(node, index, std::string(attr.status().message()));
      }
      attrs[a.name()] = *attr;
    }
    if (isTrainingOp(node)) {
      return importOptimizer(node, index, operands, attrs);
    }
    if (opType == "If") {
      return importIf(node, index, operands);
    }
    if (opType == "Loop") {
      return importLoop(node, index, operands);
    }
    if (opType == "Scan") {
      return importScan(node, index, operands, attrs);
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
      bool runTime =
          operands.size() > 1 && operands[1] &&
          (!graph::isConstant(operands[1]) ||
           (operands.size() > 2 && operands[2] &&
            !graph::isConstant(operands[2])));
      if (runTime) {
        return importRunTimeQuantize(node, index, operands, attrs);
      }
    } else if (opType == "DynamicQuantizeLinear") {
      return importDynamicQuantize(node, index, operands);
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
    } else if (opType == "HannWindow" || opType == "HammingWindow" ||
               opType == "BlackmanWindow") {
      return importWindow(node, index, operands, attrs);
    } else if (opType == "Scatter" || opType == "ScatterElements" ||
               opType == "ScatterND") {
      return importScatter(node, index, operands, attrs);
    } else if (isRecurrent(opType)) {
      return importRecurrent(node, index, operands, attrs);
    } else if (opType == "STFT") {
      return importStft(node, index, operands, attrs);
    } else if (opType == "DFT") {
      return importDft(node, index, operands, attrs);
    } else if (opType == "Compress") {
      return importCompress(node, index, operands, attrs);
    } else if (opType == "TopK") {
      return importTopK(node, index, operands, attrs);
    } else if (opType == "GridSample") {
      return importGridSample(node, index, operands, attrs);
    } else if (opType == "ReverseSequence") {
      return importReverseSequence(node, index, operands, attrs);
    } else if (opType == "GatherND") {
      return importGatherND(node, index, operands, attrs);
    } else if (opType == "Einsum") {
      return importEinsum(node, index, operands, attrs);
    } else if (opType == "EyeLike") {
      return importEyeLike(node, index, operands, attrs);
    } else if (opType == "Tile") {
      return importTile(node, index, operands);
    } else if (opType == "MelWeightMatrix") {
      return importMelWeightMatrix(node, index, operands, attrs);
    } else if (kind == OpKind::MaxPool && node.output_size() > 1 &&
               !node.output(1).empty()) {
      return importMaxPoolIndices(node, index, operands, attrs);
    } else if (opType == "Det") {
      return importDet(node, index, operands);
    } else if (opType == "InstanceNormalization" ||
               opType == "MeanVarianceNormalization" ||
               (kind == OpKind::BatchNormalization &&
                attrs.count("training_mode") &&
                attrs.at("training_mode").isInt() &&
                attrs.at("training_mode").getInt() != 0)) {
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
      auto mode = attrs.find("coordinate_transformation_mode");
      if (mode != attrs.end() && mode->second.isString() &&
          mode->second.getString() == "tf_crop_and_resize") {
        return importCropAndResize(node, index, operands, attrs);
      }
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
    }
    std::vector<Value *> defined(op->results().begin(), op->results().end());
    COMPILER_ASSIGN_OR_RETURN(std::vector<Op *> folded, foldAtImport(op));
    for (size_t i = 0; i < folded.size(); ++i) {
      defined[i] = folded[i]->result();
    }
    for (size_t i = 0; i < results; ++i) {
      if (names[i].empty()) {
        continue;
      }
      if (values_.count(names[i])) {
        return nodeError(node, index,
                         "output '" + names[i] + "' is already defined");
      }
      values_[names[i]] = defined[i];
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
      // libonnx 1.12 infers STFT's bins without onesided (frame_length
      // where the spec gives frame_length / 2 + 1): the graph's own shape
      // rules have checked the model, so it goes on without refinement.
      if (llvm::StringRef(e.what()).contains("(op_type:STFT)")) {
        return absl::OkStatus();
      }
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
  // Whether the model imports the default ONNX domain (a model of the
  // training domain alone need not).
  bool defaultDomain_ = true;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Value *> values_;
  // Body nodes inlined by unrolled loops so far.
  int64_t unrolledNodes_ = 0;
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
// Whether |g| or one of its subgraphs has a node of |opType|.
bool hasNode(const onnx::GraphProto &g, const std::string &opType) {
  for (const auto &node : g.node()) {
    if (node.op_type() == opType) {
      return true;
    }
    for (const auto &a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH && hasNode(a.g(), opType)) {
        return true;
      }
    }
  }
  return false;
}

absl::StatusOr<int64_t> upgradeOldOpset(onnx::ModelProto &model) {
  int64_t opset = defaultOpset(model);
  if (opset <= 0 || opset >= kMinOpset) {
    return opset;
  }
  // The converter gives opset 8's batched Scan the graph inputs of opset
  // 9's, without the batch axis the caller passes.
  if (opset < 9 && hasNode(model.graph(), "Scan")) {
    return absl::UnimplementedError(
        "model uses ONNX opset " + std::to_string(opset) +
        " with a Scan, whose opset-8 form (a batch axis and sequence_lens) "
        "is not supported; opset 9 on is");
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
  if (!graph.ok() && opset > 0 && opset < kMinOpset) {
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
