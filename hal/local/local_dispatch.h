// Running dispatches of LocalExecutables on the host: shared by every CPU
// driver. A LocalDispatch is prepared once per dispatch (bindings mapped,
// dispatch state built); workers then run ranges of linearized workgroup
// ids with their own local memory, so a multi-threaded driver can shard one
// dispatch without preparing it again.
#ifndef OSPREY_HAL_LOCAL_LOCAL_DISPATCH_H_
#define OSPREY_HAL_LOCAL_LOCAL_DISPATCH_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "hal/buffer.h"
#include "hal/executable.h"
#include "hal/local/local_executable.h"
#include "hal/local/recording_command_buffer.h"
#include "runtime/base/arena.h"

namespace osprey::hal::local {

// One prepared dispatch. Not copyable: the dispatch state points into it.
// Read-only once prepared, so any number of workers may run ranges of it
// at once.
class LocalDispatch {
 public:
  // Bindings held inline; more need the |scratch| arena of Prepare().
  static constexpr size_t kInlineBindings = 16;

  LocalDispatch() = default;
  LocalDispatch(const LocalDispatch&) = delete;
  LocalDispatch& operator=(const LocalDispatch&) = delete;

  // Prepares export |ordinal| of |executable| with resolved |bindings|
  // (absolute ranges of allocated buffers, as the recording command buffer
  // stores them) and |constants|. Everything passed is borrowed until the
  // last RunWorkgroups() call. |scratch| (may be null) supplies binding
  // tables larger than kInlineBindings. |max_concurrency| is the number of
  // workers that may run it at once. Errors: INVALID_ARGUMENT if the
  // executable is not a LocalExecutable or the ordinal is out of range;
  // what Buffer::MapForDevice returns for a binding (annotated).
  Status Prepare(Executable* executable, uint32_t ordinal, WorkgroupCount workgroup_count,
                 std::span<const uint32_t> constants, std::span<const BufferRef> bindings,
                 uint32_t max_concurrency, Arena* scratch);
  // Same, from a recorded command.
  Status Prepare(const DispatchCommand& command, uint32_t max_concurrency, Arena* scratch) {
    return Prepare(command.executable, command.ordinal, command.workgroup_count,
                   command.constants, command.bindings, max_concurrency, scratch);
  }

  // Total number of workgroups (x * y * z).
  uint32_t workgroup_total() const { return workgroup_total_; }
  // Local memory each worker must pass to RunWorkgroups().
  uint32_t local_memory_size() const { return local_memory_size_; }
  const osprey_dispatch_state_v1_t& state() const { return state_; }

  // Runs workgroups with linear ids [begin, end) (x fastest, then y, then
  // z) on the calling thread. |local_memory| must hold local_memory_size()
  // bytes (RESOURCE_EXHAUSTED otherwise). No allocation. A workgroup that
  // returns non-zero stops the range with INTERNAL naming the library,
  // export, workgroup id and return code.
  Status RunWorkgroups(uint32_t begin, uint32_t end, uint32_t processor_id, void* local_memory,
                       uint32_t local_memory_size) const;

 private:
  Status WorkgroupFailed(uint32_t x, uint32_t y, uint32_t z, int result) const;

  const LocalExecutable* executable_ = nullptr;
  uint32_t ordinal_ = 0;
  uint32_t workgroup_total_ = 0;
  uint32_t local_memory_size_ = 0;
  osprey_dispatch_fn_t function_ = nullptr;
  const osprey_executable_environment_v1_t* environment_ = nullptr;
  osprey_dispatch_state_v1_t state_ = {};
  // Entries [0, binding count) are written by Prepare; the rest are never
  // read (left uninitialized: a dispatch on cpu-sync constructs one).
  void* inline_ptrs_[kInlineBindings];
  size_t inline_lengths_[kInlineBindings];
};

// Host implementations of the transfer commands over memory the host can
// address (Buffer::MapForDevice); shared by CPU drivers.
Status ExecuteFill(const FillCommand& command);
Status ExecuteUpdate(const UpdateCommand& command);
Status ExecuteCopy(const CopyCommand& command);

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_LOCAL_DISPATCH_H_
