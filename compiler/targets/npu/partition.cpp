#include "compiler/targets/npu/partition.h"

#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/targets/npu/graph_layers.h"
#include "compiler/targets/npu/tiling.h"

namespace osprey::compiler::npu {
namespace {

using graph::Op;

bool isLayoutOnly(const std::string &k) {
  return k == "Reshape" || k == "Flatten" || k == "Squeeze" ||
         k == "Unsqueeze" || k == "Transpose" || k == "Identity";
}

// Multiply-accumulates of convolutions and matrix products (float or
// quantized), from the result type and the weight shape; 0 for other ops.
int64_t opMacs(const Op &op) {
  const std::string &k = op.kind();
  const graph::TensorType &out = op.result()->type();
  if (!out.hasStaticShape() || op.numOperands() < 2 ||
      !op.operand(1)->type().hasStaticShape()) {
    return 0;
  }
  llvm::ArrayRef<int64_t> w = op.operand(1)->type().dims();
  if ((k == "QConv" || k == "Conv") && w.size() >= 3) {
    int64_t taps = 1;
    for (size_t i = 1; i < w.size(); ++i) {
      taps *= w[i];
    }
    return out.numElements() * taps;
  }
  if (k == "QMatMul" || k == "MatMul" || k == "Gemm") {
    const graph::TensorType &a = op.operand(0)->type();
    if (!a.hasStaticShape() || a.rank() < 1) {
      return 0;
    }
    int64_t reduction = a.dim(a.rank() - 1);
    if (k == "Gemm" && op.getInt("transA", 0) && a.rank() == 2) {
      reduction = a.dim(0);
    }
    return out.numElements() * reduction;
  }
  return 0;
}

// Bindings of one npu-v1 export, less the weights and the scratch.
constexpr unsigned kMaxChainBindings = 32 - 2;

int64_t elementsOf(const graph::Value *v) {
  return v->type().hasStaticShape() ? v->type().numElements() : 0;
}

std::string cycleText(uint64_t cycles) { return std::to_string(cycles); }

} // namespace

absl::StatusOr<OffloadMode> parseOffloadMode(llvm::StringRef text) {
  if (text == "auto") {
    return OffloadMode::Auto;
  }
  if (text == "none") {
    return OffloadMode::None;
  }
  if (text == "all") {
    return OffloadMode::All;
  }
  return absl::InvalidArgumentError("--offload=" + text.str() +
                                    " is not auto, none or all");
}

bool formsChain(const graph::Graph &graph, llvm::ArrayRef<const Op *> ops) {
  std::set<const Op *> inChain(ops.begin(), ops.end());
  std::set<const graph::Value *> fromOutside;
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op &op = *ops[k];
    for (const graph::Value *v : op.operands()) {
      const Op *producer = v ? v->definingOp() : nullptr;
      if (v && !inChain.count(producer) &&
          (!producer || producer->kind() != "Constant")) {
        fromOutside.insert(v);
      }
    }
    if (k + 1 == ops.size()) {
      break; // The chain's result: read anywhere.
    }
    for (const graph::Value *out : graph.outputs()) {
      if (out == op.result()) {
        return false;
      }
    }
    for (const Op *user : graph.users(op.result())) {
      if (!inChain.count(user)) {
        return false;
      }
    }
  }
  // Each value from outside is a binding, and so is the result.
  return fromOutside.size() + 1 <= kMaxChainBindings;
}

absl::StatusOr<Partition> partitionGraph(const graph::Graph &graph,
                                         const NpuConfig &config,
                                         OffloadMode mode,
                                         const CostModel &cost) {
  Partition p;
  std::map<const Op *, size_t> indexOf;
  // Pass 1: what the NPU can run, and the estimates.
  for (const auto &owned : graph.ops()) {
    const Op &op = *owned;
    if (op.kind() == "Constant") {
      continue;
    }
    OpPlacement placement;
    placement.op = &op;
    placement.macs = opMacs(op);
    p.totalMacs += placement.macs;
    const bool windowless = placement.macs == 0;
    placement.cpuCycles = static_cast<uint64_t>(
        double(placement.macs) / cost.cpuMacsPerCycle +
        (windowless ? double(elementsOf(op.result())) * cost.cpuCyclesPerElement
                    : 0.0));
    if (isLayoutOnly(op.kind())) {
      placement.reason = "layout only (no computation)";
    } else if (mode == OffloadMode::None) {
      placement.reason = "--offload=none";
    } else if (auto layer = layerFromOp(op); !layer.ok()) {
      placement.reason = std::string(layer.status().message());
    } else if (auto estimate = estimateLayer(*layer, config); !estimate.ok()) {
      placement.reason = std::string(estimate.status().message());
    } else {
      placement.npuCycles = estimate->totalCycles;
      placement.onNpu = true;
    }
    indexOf[&op] = p.ops.size();
    p.ops.push_back(std::move(placement));
  }

  auto neighbourOnNpu = [&](const OpPlacement &o) {
    for (const graph::Value *v : o.op->operands()) {
      if (!v || !v->definingOp()) {
        continue;
      }
      auto it = indexOf.find(v->definingOp());
      if (it != indexOf.end() && p.ops[it->second].onNpu) {
        return true;
      }
    }
    for (const Op *user : graph.users(o.op->result())) {
      auto it = indexOf.find(user);
      if (it != indexOf.end() && p.ops[it->second].onNpu) {
        return true;
      }
    }
    return false;
  };

  // Pass 2 (auto): keep an op on the NPU only when it wins there, counting
  // the layout changes an op without NPU neighbours needs on both sides.
  if (mode == OffloadMode::Auto) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (OpPlacement &o : p.ops) {
        if (!o.onNpu) {
          continue;
        }
        uint64_t npu = o.npuCycles;
        std::string extra;
        if (!neighbourOnNpu(o)) {
          uint64_t boundary = static_cast<uint64_t>(
              double(elementsOf(o.op->operand(0)) + elementsOf(o.op->result())) *
              cost.cpuCyclesPerElement);
          npu += boundary;
          extra = " + " + cycleText(boundary) + " for the layout changes of a lone op";
        }
        if (npu >= o.cpuCycles) {
          o.onNpu = false;
          o.reason = "faster on the CPU: about " + cycleText(o.cpuCycles) +
                     " cycles there, " + cycleText(o.npuCycles) + " on the NPU" +
                     extra;
          o.npuCycles = 0;
          changed = true;
        }
      }
    }
  }

  if (mode == OffloadMode::All) {
    std::string refused;
    int count = 0;
    for (const OpPlacement &o : p.ops) {
      const std::string &k = o.op->kind();
      const bool boundaryConversion =
          k == "QuantizeLinear" || k == "DequantizeLinear";
      if (o.onNpu || isLayoutOnly(k) || boundaryConversion) {
        continue;
      }
      ++count;
      absl::StrAppend(&refused, "\n  node '", o.op->nodeName(), "' (", k,
                      "): ", o.reason);
    }
    if (count) {
      return absl::UnimplementedError(absl::StrCat(
          "--offload=all: ", count, " node", count == 1 ? "" : "s",
          " cannot run on the NPU:", refused));
    }
  }

  // Chains. NPU ops are grouped in graph order: an op joins the open group
  // when it reads a value an op of the group produced. Each group is then
  // cut into chains, each the longest run from its first op that
  // formsChain accepts (a single op always does).
  std::vector<std::vector<size_t>> groups;
  std::set<const Op *> open;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    OpPlacement &o = p.ops[i];
    if (!o.onNpu) {
      continue;
    }
    p.npuMacs += o.macs;
    bool joins = false;
    for (const graph::Value *v : o.op->operands()) {
      joins |= v && v->definingOp() && open.count(v->definingOp());
    }
    if (!joins) {
      groups.emplace_back();
      open.clear();
    }
    groups.back().push_back(i);
    open.insert(o.op);
  }
  for (const std::vector<size_t> &group : groups) {
    std::vector<const Op *> ops;
    for (size_t i : group) {
      ops.push_back(p.ops[i].op);
    }
    for (size_t first = 0; first < ops.size();) {
      size_t last = ops.size() - 1;
      while (last > first &&
             !formsChain(graph, llvm::ArrayRef(ops).slice(first, last - first + 1))) {
        --last;
      }
      p.chains.emplace_back(group.begin() + first, group.begin() + last + 1);
      for (size_t k = first; k <= last; ++k) {
        p.ops[group[k]].chain = static_cast<int>(p.chains.size()) - 1;
      }
      first = last + 1;
    }
  }
  return p;
}

std::string formatPartition(const Partition &partition) {
  std::string out;
  char line[512];
  for (const OpPlacement &o : partition.ops) {
    if (o.onNpu) {
      std::snprintf(line, sizeof(line),
                    "npu  chain %-3d %-28s %-14s %10lld MACs  npu %8llu cycles  "
                    "cpu %9llu\n",
                    o.chain, o.op->nodeName().c_str(), o.op->kind().c_str(),
                    (long long)o.macs, (unsigned long long)o.npuCycles,
                    (unsigned long long)o.cpuCycles);
    } else {
      std::snprintf(line, sizeof(line), "cpu            %-28s %-14s %10lld MACs  %s\n",
                    o.op->nodeName().c_str(), o.op->kind().c_str(),
                    (long long)o.macs, o.reason.c_str());
    }
    out += line;
  }
  const double share = partition.totalMacs
                           ? 100.0 * double(partition.npuMacs) /
                                 double(partition.totalMacs)
                           : 0.0;
  std::snprintf(line, sizeof(line),
                "%zu NPU chain%s; %lld of %lld MACs on the NPU (%.1f %%)\n",
                partition.chains.size(), partition.chains.size() == 1 ? "" : "s",
                (long long)partition.npuMacs, (long long)partition.totalMacs,
                share);
  out += line;
  return out;
}

} // namespace osprey::compiler::npu
