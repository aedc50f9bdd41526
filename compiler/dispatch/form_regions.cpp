// Forms dispatch regions from fusion groups and classifies buffer storage.
#include "compiler/dispatch/dispatch_ir.h"

#include <algorithm>
#include <set>

#include "compiler/graph/status.h"

namespace osprey::compiler::dispatch {

using structured::FusionGroup;
using structured::StructuredOp;
using structured::StructuredProgram;

unsigned DispatchProgram::storageOf(unsigned tensor) const {
  while (buffers[tensor].kind == BufferKind::View) {
    tensor = static_cast<unsigned>(buffers[tensor].aliasOf);
  }
  return tensor;
}

namespace {

std::string describe(const StructuredOp &op) {
  return "node '" + op.nodeName + "'";
}

absl::Status classifyBuffers(DispatchProgram &d) {
  const StructuredProgram &p = d.program;
  d.buffers.resize(p.tensors.size());
  for (unsigned t = 0; t < p.tensors.size(); ++t) {
    const structured::TensorInfo &info = p.tensors[t];
    Buffer &b = d.buffers[t];
    b.tensor = t;
    b.byteSize = info.type.numElements() *
                 static_cast<int64_t>(graph::elementByteSize(
                     info.type.elementType()));
    if (info.constant) {
      b.kind = BufferKind::Constant;
    } else if (info.isInput) {
      b.kind = BufferKind::Input;
    } else if (info.isOutput) {
      b.kind = BufferKind::Output;
    } else {
      b.kind = BufferKind::Transient;
    }
  }
  for (unsigned i = 0; i < p.inputs.size(); ++i) {
    d.buffers[p.inputs[i]].ioIndex = i;
  }
  for (unsigned i = 0; i < p.outputs.size(); ++i) {
    unsigned t = p.outputs[i];
    if (p.tensors[t].isInput || p.tensors[t].constant) {
      return absl::UnimplementedError(
          "graph output '" + p.tensors[t].name +
          "' is a graph input or a constant; returning it without a "
          "dispatch is not implemented yet");
    }
    d.buffers[t].ioIndex = i;
  }
  for (const StructuredOp &op : p.ops) {
    if (!op.isView) {
      continue;
    }
    Buffer &b = d.buffers[op.output.tensor];
    bool isOutput = b.kind == BufferKind::Output;
    b.kind = BufferKind::View;
    b.aliasOf = static_cast<int>(op.inputs[0].tensor);
    if (!isOutput) {
      continue;
    }
    // A graph output that reshapes a computed value: that value is written
    // straight into the output's buffer.
    Buffer &source = d.buffers[d.storageOf(op.output.tensor)];
    if (source.kind == BufferKind::Input ||
        source.kind == BufferKind::Constant) {
      return absl::UnimplementedError(
          describe(op) + ": a graph output that is a reshape of a graph "
                         "input or constant is not implemented yet");
    }
    source.kind = BufferKind::Output;
  }
  return absl::OkStatus();
}

// Builds the region for |group| and marks the values it keeps internal.
// |readers| lists the ops reading each tensor (p.consumers of each).
absl::StatusOr<DispatchRegion>
buildRegion(DispatchProgram &d, const FusionGroup &group, unsigned groupIndex,
            const std::vector<std::vector<unsigned>> &readers) {
  const StructuredProgram &p = d.program;
  DispatchRegion r;
  r.ops = group.ops;
  r.loc = p.ops[group.root].nodeName;
  r.workgroupCount = {group.workgroups[0], group.workgroups[1],
                      group.workgroups[2]};
  r.tileSizes = group.tileSizes;
  r.tiledLoops = group.tiledLoops;
  r.microkernel = group.microkernel;
  r.prologue = group.prologue;
  std::set<unsigned> produced;
  std::vector<Binding> writes;
  // A value the region reads from outside: a constant or a read binding,
  // each listed once.
  auto addRead = [&](unsigned tensor) {
    if (d.buffers[d.storageOf(tensor)].kind == BufferKind::Constant) {
      if (std::find(r.constants.begin(), r.constants.end(), tensor) ==
          r.constants.end()) {
        r.constants.push_back(tensor);
      }
      return;
    }
    for (const Binding &b : r.bindings) {
      if (b.tensor == tensor) {
        return;
      }
    }
    r.bindings.push_back({tensor, false});
  };
  // Prologue ops run inside the root's reads: their operands are the
  // region's, their values (read by nothing else) are never stored.
  std::set<unsigned> prologueValues;
  for (unsigned pi : group.prologue) {
    const StructuredOp &op = p.ops[pi];
    for (const structured::OperandAccess &in : op.inputs) {
      if (prologueValues.count(in.tensor)) {
        continue;
      }
      addRead(in.tensor);
    }
    prologueValues.insert(op.output.tensor);
    if (d.buffers[op.output.tensor].kind != BufferKind::Transient) {
      return absl::InvalidArgumentError(
          describe(op) + ": a prologue value must be an intermediate value");
    }
    d.buffers[op.output.tensor].kind = BufferKind::Internal;
  }
  for (size_t i = 0; i < group.ops.size(); ++i) {
    const StructuredOp &op = p.ops[group.ops[i]];
    for (const structured::OperandAccess &in : op.inputs) {
      if (prologueValues.count(d.storageOf(in.tensor))) {
        continue;
      }
      if (produced.count(in.tensor)) {
        if (!in.map.isIdentity()) {
          return absl::InvalidArgumentError(
              describe(op) + ": reads a value of its own dispatch region "
                             "through a non-identity map");
        }
        continue;
      }
      addRead(in.tensor);
    }
    produced.insert(op.output.tensor);
    // The last value is the region's result. Another value stays inside
    // the region unless it is also read outside it (by another region or a
    // view) or is a graph output: then the region stores it as well.
    bool stored = i + 1 == group.ops.size() ||
                  d.buffers[op.output.tensor].kind != BufferKind::Transient;
    for (unsigned user : readers[op.output.tensor]) {
      stored |= p.ops[user].fusion.group != static_cast<int>(groupIndex);
    }
    if (stored) {
      writes.push_back({op.output.tensor, true});
    } else {
      d.buffers[op.output.tensor].kind = BufferKind::Internal;
    }
  }
  // Reads first, then the writes in op order (the result last).
  r.bindings.insert(r.bindings.end(), writes.begin(), writes.end());
  return r;
}

} // namespace

absl::StatusOr<DispatchProgram>
formDispatchRegions(structured::StructuredProgram program) {
  DispatchProgram d;
  d.program = std::move(program);
  const StructuredProgram &p = d.program;
  for (const StructuredOp &op : p.ops) {
    if (!op.isView && op.fusion.group < 0) {
      return absl::FailedPreconditionError(
          describe(op) + ": fusion decisions must be made before forming "
                         "dispatch regions");
    }
  }
  COMPILER_RETURN_IF_ERROR(classifyBuffers(d));
  std::vector<std::vector<unsigned>> readers(p.tensors.size());
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    for (const auto &in : p.ops[i].inputs) {
      if (readers[in.tensor].empty() || readers[in.tensor].back() != i) {
        readers[in.tensor].push_back(i);
      }
    }
  }
  std::vector<DispatchRegion> regions;
  for (unsigned g = 0; g < p.groups.size(); ++g) {
    COMPILER_ASSIGN_OR_RETURN(DispatchRegion r,
                              buildRegion(d, p.groups[g], g, readers));
    regions.push_back(std::move(r));
  }
  // Order regions by data dependencies: a fused op may read a value whose
  // group was formed after its own. Ties keep formation order.
  std::vector<int> writer(p.tensors.size(), -1);
  for (unsigned g = 0; g < regions.size(); ++g) {
    for (const Binding &b : regions[g].bindings) {
      if (b.write) {
        writer[b.tensor] = static_cast<int>(g);
      }
    }
  }
  std::vector<bool> done(regions.size(), false);
  for (size_t emitted = 0; emitted < regions.size();) {
    bool progress = false;
    for (unsigned g = 0; g < regions.size(); ++g) {
      if (done[g]) {
        continue;
      }
      bool ready = true;
      for (const Binding &b : regions[g].bindings) {
        int w = b.write ? -1 : writer[d.storageOf(b.tensor)];
        ready &= w < 0 || done[w];
      }
      if (!ready) {
        continue;
      }
      done[g] = true;
      d.regions.push_back(std::move(regions[g]));
      ++emitted;
      progress = true;
      break;
    }
    if (!progress) {
      return absl::InvalidArgumentError(
          "dispatch regions form a dependency cycle");
    }
  }
  for (unsigned i = 0; i < d.regions.size(); ++i) {
    d.regions[i].name = p.name + "_dispatch_" + std::to_string(i);
    d.commands.push_back({HostCommand::Kind::Dispatch, i});
  }
  return d;
}

} // namespace osprey::compiler::dispatch
