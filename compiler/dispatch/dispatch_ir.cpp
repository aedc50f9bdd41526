// Printing of dispatch programs.
#include "compiler/dispatch/dispatch_ir.h"

namespace osprey::compiler::dispatch {

llvm::StringRef bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input: return "input";
  case BufferKind::Output: return "output";
  case BufferKind::Constant: return "constant";
  case BufferKind::Transient: return "transient";
  case BufferKind::View: return "view";
  case BufferKind::Internal: return "internal";
  }
  return "?";
}

namespace {
std::string listStr(llvm::ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]";
}
} // namespace

void printDispatchProgram(const DispatchProgram &d, llvm::raw_ostream &os) {
  const structured::StructuredProgram &p = d.program;
  auto name = [&](unsigned t) { return "%" + p.tensors[t].name; };
  os << "dispatch @" << p.name << " {\n";
  for (const Buffer &b : d.buffers) {
    os << "  buffer " << name(b.tensor) << " " << bufferKindName(b.kind);
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output) {
      os << " " << b.ioIndex;
    }
    if (b.kind == BufferKind::View) {
      os << " of " << name(b.aliasOf);
    }
    os << " : " << p.tensors[b.tensor].type.str() << " " << b.byteSize
       << " bytes";
    if (b.offset >= 0) {
      os << " offset " << b.offset << " live [" << b.firstUse << ", "
         << b.lastUse << "]";
    }
    os << "\n";
  }
  for (const DispatchRegion &r : d.regions) {
    os << "  region @" << r.name << " loc(\"" << r.loc << "\") ops [";
    for (size_t i = 0; i < r.ops.size(); ++i) {
      os << (i ? ", " : "") << name(p.ops[r.ops[i]].output.tensor);
    }
    os << "]\n";
    if (!r.prologue.empty()) {
      os << "    prologue [";
      for (size_t i = 0; i < r.prologue.size(); ++i) {
        os << (i ? ", " : "") << name(p.ops[r.prologue[i]].output.tensor);
      }
      os << "]\n";
    }
    os << "    bindings [";
    for (size_t i = 0; i < r.bindings.size(); ++i) {
      os << (i ? ", " : "") << name(r.bindings[i].tensor)
         << (r.bindings[i].write ? " write" : " read");
    }
    os << "]\n";
    if (!r.constants.empty()) {
      os << "    constants [";
      for (size_t i = 0; i < r.constants.size(); ++i) {
        os << (i ? ", " : "") << name(r.constants[i]);
      }
      os << "]\n";
    }
    os << "    workgroups " << listStr(r.workgroupCount) << " tiles "
       << listStr(r.tileSizes) << (r.microkernel ? " microkernel" : "")
       << "\n";
  }
  os << "  commands\n";
  for (const HostCommand &c : d.commands) {
    if (c.kind == HostCommand::Kind::Barrier) {
      os << "    barrier\n";
    } else {
      os << "    dispatch @" << d.regions[c.region].name << "\n";
    }
  }
  if (d.arenaSize >= 0) {
    os << "  arena " << d.arenaSize << " bytes\n";
  }
  os << "}\n";
}

} // namespace osprey::compiler::dispatch
