// Dispatch programs: fused groups as dispatch regions with a 3-D workgroup
// grid, the buffers they touch, host commands and the static memory plan.
#ifndef OSPREY_COMPILER_DISPATCH_DISPATCH_IR_H_
#define OSPREY_COMPILER_DISPATCH_DISPATCH_IR_H_

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/structured/structured_ir.h"
#include "llvm/Support/raw_ostream.h"

namespace osprey::compiler::dispatch {

// Where a tensor's bytes live at run time.
enum class BufferKind : uint8_t {
  Input,     // caller-provided graph input
  Output,    // graph output (or the value a reshaped graph output views),
             // allocated by the host code and returned
  Constant,  // read-only module data: bound as a read-only rodata segment
             // of the module (zero-copy), or embedded in the executable
             // when small (see kMaxEmbeddedConstantBytes)
  Transient, // intermediate value placed in the arena by memory planning
  View,      // alias of another buffer (reshape); no storage of its own
  Internal,  // passed element by element inside one region; never stored
};

struct Buffer {
  unsigned tensor = 0;
  BufferKind kind = BufferKind::Transient;
  unsigned ioIndex = 0; // position among graph inputs/outputs
  int aliasOf = -1;     // View: tensor whose storage this aliases
  int64_t byteSize = 0;
  // Memory planning (Transient only): arena offset and the live range as
  // command indices [firstUse, lastUse].
  int64_t offset = -1;
  int firstUse = -1, lastUse = -1;
};

struct Binding {
  unsigned tensor = 0; // as bound: the tensor the region reads or writes
  bool write = false;
};

// One fusion group as a dispatch function.
struct DispatchRegion {
  std::string name;
  std::string loc;        // node name of the root, for diagnostics
  std::vector<unsigned> ops; // structured op indices; ops[0] is the root
  // Reads first, then the writes: values read outside the region (or graph
  // outputs) in op order, the last op's value (the region's result) last.
  std::vector<Binding> bindings;
  // Constant tensors the region reads. Memory planning binds the large ones
  // (they then also appear in |bindings|, as reads before the write); the
  // target embeds the others as read-only data of the executable.
  std::vector<unsigned> constants;
  std::array<int64_t, 3> workgroupCount = {1, 1, 1};
  std::vector<int64_t> tileSizes; // per root loop; 0 = whole loop
  std::vector<unsigned> tiledLoops; // see structured::FusionGroup
  bool microkernel = false;
  // Ops the root's code generator computes while reading their last value
  // (structured::FusionGroup::prologue); their values are Internal.
  std::vector<unsigned> prologue;
};

struct HostCommand {
  enum class Kind : uint8_t { Dispatch, Barrier } kind = Kind::Dispatch;
  unsigned region = 0;
};

// Constants of at most this many bytes stay embedded in the executable
// (scalars and short vectors the target can fold into code); larger ones are
// bound read-only so the weights exist once, in the module file.
constexpr int64_t kMaxEmbeddedConstantBytes = 256;
// Most bindings of one dispatch (the hal module's limit); constants that
// would exceed it stay embedded.
constexpr unsigned kMaxRegionBindings = structured::kMaxDispatchBindings;

// What memory planning may do with constants. Tools override
// maxEmbeddedConstantBytes with --osprey-max-embedded-constant-bytes.
struct PlanOptions {
  // Constants larger than this are bound instead of embedded.
  int64_t maxEmbeddedConstantBytes = kMaxEmbeddedConstantBytes;
  // Constants are bound while a region has fewer bindings than this.
  unsigned maxBindings = kMaxRegionBindings;
};

struct DispatchProgram {
  structured::StructuredProgram program;
  std::vector<Buffer> buffers; // indexed by tensor
  std::vector<DispatchRegion> regions; // in execution order
  std::vector<HostCommand> commands;   // dispatches (and later barriers)
  int64_t arenaSize = -1;              // set by planMemory
  int64_t arenaAlignment = 64;

  // The tensor whose storage |tensor| uses (follows views).
  unsigned storageOf(unsigned tensor) const;
};

// Turns each fusion group of |program| (fuseAndTile must have run) into a
// dispatch region, orders the regions by their data dependencies, classifies
// every tensor's storage and records one dispatch command per region.
// Returns INVALID_ARGUMENT naming the node when a group reads a value of its
// own group other than element by element, and UNIMPLEMENTED for graph
// outputs that are (reshapes of) constants or inputs.
absl::StatusOr<DispatchProgram>
formDispatchRegions(structured::StructuredProgram program);

// Liveness-based static memory planning: every Transient buffer gets an
// offset in one arena such that buffers whose live ranges overlap never
// overlap in memory (first fit, largest buffer first), then barriers are
// inserted between dispatches whose byte ranges conflict (read after write,
// write after read through reuse, write after write). Sets arenaSize.
// Constants larger than options.maxEmbeddedConstantBytes become read
// bindings of the regions reading them (inserted before the write, while the
// region has fewer than options.maxBindings); they take no arena space.
absl::Status planMemory(DispatchProgram &program,
                        const PlanOptions &options = {});

void printDispatchProgram(const DispatchProgram &program,
                          llvm::raw_ostream &os);
llvm::StringRef bufferKindName(BufferKind kind);

} // namespace osprey::compiler::dispatch

#endif // OSPREY_COMPILER_DISPATCH_DISPATCH_IR_H_
