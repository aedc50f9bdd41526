// Liveness-based static memory planning of transient buffers, and barriers.
#include "compiler/dispatch/dispatch_ir.h"

#include <algorithm>

namespace osprey::compiler::dispatch {
namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Binds the large constants each region reads as read-only bindings placed
// before the region's write, so they are read from module rodata instead of
// being copied into the executable. An external op's region binds all of
// its constants (its code generator embeds none). Idempotent.
void bindConstants(DispatchProgram &d, const PlanOptions &options) {
  for (DispatchRegion &r : d.regions) {
    const bool external = d.program.ops[r.ops[0]].external != nullptr;
    for (unsigned c : r.constants) {
      const Buffer &buf = d.buffers[d.storageOf(c)];
      if (!external && (buf.byteSize <= options.maxEmbeddedConstantBytes ||
                        r.bindings.size() >= options.maxBindings)) {
        continue;
      }
      bool bound = false;
      for (const Binding &b : r.bindings) {
        bound |= b.tensor == c;
      }
      if (bound) {
        continue;
      }
      auto write = std::find_if(r.bindings.begin(), r.bindings.end(),
                                [](const Binding &b) { return b.write; });
      r.bindings.insert(write, Binding{c, false});
    }
  }
}

// Live ranges in region indices: from the region writing a transient to the
// last region reading it directly or through a view.
void computeLiveness(DispatchProgram &d) {
  for (unsigned r = 0; r < d.regions.size(); ++r) {
    for (const Binding &b : d.regions[r].bindings) {
      Buffer &buf = d.buffers[d.storageOf(b.tensor)];
      if (buf.kind != BufferKind::Transient) {
        continue;
      }
      int ri = static_cast<int>(r);
      buf.firstUse = buf.firstUse < 0 ? ri : std::min(buf.firstUse, ri);
      buf.lastUse = std::max(buf.lastUse, ri);
    }
  }
}

void assignOffsets(DispatchProgram &d) {
  std::vector<unsigned> order;
  for (const Buffer &b : d.buffers) {
    if (b.kind == BufferKind::Transient && b.firstUse >= 0) {
      order.push_back(b.tensor);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return d.buffers[a].byteSize > d.buffers[b].byteSize;
  });
  std::vector<unsigned> placed;
  int64_t arena = 0;
  for (unsigned t : order) {
    Buffer &buf = d.buffers[t];
    // Busy intervals of placed buffers alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (unsigned o : placed) {
      const Buffer &other = d.buffers[o];
      if (other.firstUse <= buf.lastUse && buf.firstUse <= other.lastUse) {
        busy.push_back({other.offset, other.offset + other.byteSize});
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto &[begin, end] : busy) {
      if (offset + buf.byteSize <= begin) {
        break;
      }
      offset = std::max(offset, alignUp(end, d.arenaAlignment));
    }
    buf.offset = offset;
    arena = std::max(arena, offset + buf.byteSize);
    placed.push_back(t);
  }
  d.arenaSize = alignUp(arena, d.arenaAlignment);
}

struct Access {
  int storage; // -1: the arena; otherwise the storage tensor
  int64_t begin, end;
  bool write;
};

Access accessOf(const DispatchProgram &d, const Binding &b) {
  const Buffer &buf = d.buffers[d.storageOf(b.tensor)];
  if (buf.kind == BufferKind::Transient) {
    return {-1, buf.offset, buf.offset + buf.byteSize, b.write};
  }
  return {static_cast<int>(buf.tensor), 0, buf.byteSize, b.write};
}

void insertBarriers(DispatchProgram &d) {
  std::vector<HostCommand> commands;
  std::vector<Access> pending;
  for (unsigned r = 0; r < d.regions.size(); ++r) {
    std::vector<Access> accesses;
    for (const Binding &b : d.regions[r].bindings) {
      accesses.push_back(accessOf(d, b));
    }
    bool conflict = false;
    for (const Access &a : accesses) {
      for (const Access &p : pending) {
        conflict |= a.storage == p.storage && a.begin < p.end &&
                    p.begin < a.end && (a.write || p.write);
      }
    }
    if (conflict) {
      commands.push_back({HostCommand::Kind::Barrier, 0});
      pending.clear();
    }
    commands.push_back({HostCommand::Kind::Dispatch, r});
    pending.insert(pending.end(), accesses.begin(), accesses.end());
  }
  d.commands = std::move(commands);
}

} // namespace

absl::Status planMemory(DispatchProgram &d, const PlanOptions &options) {
  for (Buffer &b : d.buffers) {
    b.offset = -1;
    b.firstUse = b.lastUse = -1;
  }
  bindConstants(d, options);
  computeLiveness(d);
  assignOffsets(d);
  insertBarriers(d);
  return absl::OkStatus();
}

} // namespace osprey::compiler::dispatch
