// Graph IR verifier.
#include "compiler/graph/verifier.h"

#include <unordered_set>

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph {
namespace {

enum class AttrKind { Int, Float, String, IntList };

// Kinds of the ONNX attributes the graph ops read. A name means the same kind
// on every op that has it. Ops read attributes through typed getters that
// fall back to the default on a kind mismatch, so a mismatch must be caught
// here rather than silently change the op.
struct AttrKindEntry {
  const char *name;
  AttrKind kind;
};
constexpr AttrKindEntry kAttrKinds[] = {
    {"group", AttrKind::Int},
    {"axis", AttrKind::Int},
    {"keepdims", AttrKind::Int},
    {"ceil_mode", AttrKind::Int},
    {"count_include_pad", AttrKind::Int},
    {"transA", AttrKind::Int},
    {"transB", AttrKind::Int},
    {"allowzero", AttrKind::Int},
    {"noop_with_empty_axes", AttrKind::Int},
    {"num_outputs", AttrKind::Int},
    {"start", AttrKind::Int},
    {"end", AttrKind::Int},
    {"exclude_outside", AttrKind::Int},
    {"antialias", AttrKind::Int},
    {"training_mode", AttrKind::Int},
    {"strides", AttrKind::IntList},
    {"pads", AttrKind::IntList},
    {"dilations", AttrKind::IntList},
    {"kernel_shape", AttrKind::IntList},
    {"perm", AttrKind::IntList},
    {"output_padding", AttrKind::IntList},
    {"output_shape", AttrKind::IntList},
    {"axes", AttrKind::IntList},
    {"split", AttrKind::IntList},
    {"epsilon", AttrKind::Float},
    {"alpha", AttrKind::Float},
    {"beta", AttrKind::Float},
    {"momentum", AttrKind::Float},
    {"cubic_coeff_a", AttrKind::Float},
    {"extrapolation_value", AttrKind::Float},
    {"mode", AttrKind::String},
    {"auto_pad", AttrKind::String},
    {"to", AttrKind::String},
    {"approximate", AttrKind::String},
    {"coordinate_transformation_mode", AttrKind::String},
    {"nearest_mode", AttrKind::String},
    {"keep_aspect_ratio_policy", AttrKind::String},
    // Canonical quantized ops (fuse_qdq.cpp) and their notes.
    {"x_zero_point", AttrKind::Int},
    {"a_zero_point", AttrKind::Int},
    {"b_zero_point", AttrKind::Int},
    {"y_zero_point", AttrKind::Int},
    {"act_min", AttrKind::Int},
    {"act_max", AttrKind::Int},
    {"multiplier", AttrKind::Int},
    {"shift", AttrKind::Int},
    {"a_multiplier", AttrKind::Int},
    {"a_shift", AttrKind::Int},
    {"b_multiplier", AttrKind::Int},
    {"b_shift", AttrKind::Int},
    {"left_shift", AttrKind::Int},
    {"output_dtype", AttrKind::String},
    {"note", AttrKind::String},
};

const char *kindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int: return "an integer";
  case AttrKind::Float: return "a number";
  case AttrKind::String: return "a string";
  case AttrKind::IntList: return "a list of integers";
  }
  return "?";
}

absl::Status verifyAttributeKinds(const Op &op) {
  for (const auto &[name, attr] : op.attributes()) {
    for (const AttrKindEntry &entry : kAttrKinds) {
      if (name != entry.name) {
        continue;
      }
      bool ok = false;
      switch (entry.kind) {
      case AttrKind::Int: ok = attr.isInt(); break;
      case AttrKind::Float: ok = attr.isFloat() || attr.isInt(); break;
      case AttrKind::String: ok = attr.isString(); break;
      // An empty list parses as either list kind.
      case AttrKind::IntList:
        ok = attr.isIntList() ||
             (attr.isFloatList() && attr.getFloatList().empty());
        break;
      }
      if (!ok) {
        return op.emitError("attribute '" + name + "' must be " +
                            kindName(entry.kind));
      }
    }
  }
  return absl::OkStatus();
}

} // namespace

absl::Status verifyGraph(const Graph &graph) {
  std::unordered_set<const Value *> defined(graph.inputs().begin(),
                                            graph.inputs().end());
  for (const auto &opPtr : graph.ops()) {
    const Op &op = *opPtr;
    const OpInfo *info = op.info();
    if (!info) {
      return op.emitError("unknown op kind");
    }
    int results = static_cast<int>(op.numResults());
    if (results < info->minResults ||
        (info->maxResults >= 0 && results > info->maxResults)) {
      return op.emitError("unexpected number of results: " +
                          std::to_string(results));
    }
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Value *v = op.operand(i);
      if (v && !defined.count(v)) {
        return op.emitError("operand #" + std::to_string(i) +
                            " is used before it is defined");
      }
    }
    if (op.numOperands() > 0 && op.operand(0)) {
      ElementType et = op.operand(0)->type().elementType();
      bool ok = info->constraint == TypeConstraint::Any ||
                (info->constraint == TypeConstraint::Float && isFloatType(et)) ||
                (info->constraint == TypeConstraint::Numeric &&
                 et != ElementType::Bool) ||
                (info->constraint == TypeConstraint::Bool &&
                 et == ElementType::Bool);
      if (!ok) {
        return op.emitError("element type " + elementTypeName(et).str() +
                            " is not supported");
      }
    }
    if (absl::Status s = verifyAttributeKinds(op); !s.ok()) {
      return s;
    }
    std::vector<TensorType> inferred;
    if (absl::Status s = inferResultTypes(op, inferred); !s.ok()) {
      return s;
    }
    if (inferred.size() != op.numResults()) {
      return op.emitError("shape rule produced " +
                          std::to_string(inferred.size()) + " types for " +
                          std::to_string(op.numResults()) + " results");
    }
    for (unsigned i = 0; i < op.numResults(); ++i) {
      if (!refineType(inferred[i], op.result(i)->type())) {
        return op.emitError("result #" + std::to_string(i) + " has type " +
                            op.result(i)->type().str() + " but the op yields " +
                            inferred[i].str());
      }
      if (!defined.insert(op.result(i)).second) {
        return op.emitError("result defined twice");
      }
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (!graph.outputs()[i] || !defined.count(graph.outputs()[i])) {
      return absl::InvalidArgumentError("graph output #" + std::to_string(i) +
                                        " is not defined");
    }
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
