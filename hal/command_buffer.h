// Command buffers: recorded transfer and dispatch work, submitted to a
// device queue with Device::QueueExecute.
//
// The base class validates every command before the driver sees it, so all
// drivers enforce the same rules: ranges in bounds (OUT_OF_RANGE), usage
// bits present and memory device-visible (PERMISSION_DENIED), access
// allowed (PERMISSION_DENIED for writing a read-only buffer), dispatch
// bindings and constants matching what the export declares
// (INVALID_ARGUMENT). Resources used by commands are retained until the
// command buffer is destroyed. Thread-compatible: record from one thread.
#ifndef OSPREY_HAL_COMMAND_BUFFER_H_
#define OSPREY_HAL_COMMAND_BUFFER_H_

#include <cstdint>
#include <span>

#include "hal/buffer.h"
#include "hal/executable.h"
#include "hal/resource.h"
#include "hal/types.h"
#include "runtime/base/arena.h"

namespace osprey::hal {

enum class CommandBufferMode : uint32_t {
  kDefault = 0,
  // Submitted at most once; lets drivers free recorded state on completion.
  kOneShot = 1u << 0,
};
OSPREY_HAL_BITFLAGS(CommandBufferMode)

class CommandBuffer : public Resource {
 public:
  enum class State : uint8_t { kInitial, kRecording, kExecutable };

  CommandBufferMode mode() const { return mode_; }
  State state() const { return state_; }

  // Starts recording. FAILED_PRECONDITION unless in the initial state.
  Status Begin();
  // Ends recording; afterwards the command buffer can be submitted.
  Status End();

  // Orders everything recorded before it before everything after it.
  // Without barriers, consecutive commands may run concurrently.
  Status ExecutionBarrier();

  // Fills |target| with a 1-, 2- or 4-byte |pattern|. Offset and length
  // must be multiples of the pattern length.
  Status FillBuffer(BufferRef target, const void* pattern, size_t pattern_length);

  // Copies |source_data| (|target.length| bytes, copied at record time, at
  // most 64 KiB) into |target|.
  Status UpdateBuffer(const void* source_data, BufferRef target);

  // Copies |length| bytes between buffers; ranges in one buffer must not
  // overlap. |target.length| must equal |source.length| (or be kWholeBuffer).
  Status CopyBuffer(BufferRef source, BufferRef target);

  // Runs export |ordinal| of |executable| over |workgroup_count|
  // workgroups with the given push constants and bindings (retained).
  Status Dispatch(Executable* executable, uint32_t ordinal, WorkgroupCount workgroup_count,
                  std::span<const uint32_t> constants, std::span<const BufferRef> bindings);

  static constexpr DeviceSize kMaxUpdateLength = 64 * 1024;

  // Identifies the implementation so a device can check, without RTTI,
  // that a submitted command buffer is one it can execute (e.g.
  // &hal::local::RecordingCommandBuffer::kKind). Null by default.
  virtual const void* kind() const { return nullptr; }

 protected:
  CommandBuffer(CommandBufferMode mode, osprey::Allocator* host_allocator);
  ~CommandBuffer() override;

  // Driver hooks, called after validation with resolved absolute ranges
  // (BufferRef::buffer is the allocated buffer, offset/length absolute).
  virtual Status BeginImpl() { return OkStatus(); }
  virtual Status EndImpl() { return OkStatus(); }
  virtual Status ExecutionBarrierImpl() = 0;
  virtual Status FillBufferImpl(BufferRef target, uint32_t pattern, size_t pattern_length) = 0;
  virtual Status UpdateBufferImpl(const void* source_data, BufferRef target) = 0;
  virtual Status CopyBufferImpl(BufferRef source, BufferRef target) = 0;
  virtual Status DispatchImpl(Executable* executable, uint32_t ordinal,
                              WorkgroupCount workgroup_count,
                              std::span<const uint32_t> constants,
                              std::span<const BufferRef> bindings) = 0;

  // Scratch that lives as long as the recording (cleared on destruction).
  Arena& arena() { return arena_; }

  // Keeps |resource| alive until this command buffer is destroyed.
  Status Retain(Resource* resource);

 private:
  struct RetainedBlock;

  CommandBufferMode mode_;
  State state_ = State::kInitial;
  Arena arena_;
  RetainedBlock* retained_ = nullptr;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_COMMAND_BUFFER_H_
