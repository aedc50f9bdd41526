// A command buffer that records validated commands into its arena as a
// list, to be replayed later by whichever executor the driver has: cpu-sync
// replays inline, cpu-task turns the list into a task graph, the NPU driver
// walks it too.
#ifndef OSPREY_HAL_LOCAL_RECORDING_COMMAND_BUFFER_H_
#define OSPREY_HAL_LOCAL_RECORDING_COMMAND_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "hal/command_buffer.h"

namespace osprey::hal::local {

enum class CommandType : uint8_t { kBarrier, kFill, kUpdate, kCopy, kDispatch };

// "barrier", "fill", ...
const char* CommandTypeName(CommandType type);

// Recorded commands live in the command buffer's arena until it is
// destroyed. Buffer refs are resolved (allocated buffer, absolute range)
// and already validated; the buffers and executables are retained.
struct Command {
  CommandType type;
  const Command* next = nullptr;
  explicit Command(CommandType type) : type(type) {}
};

struct BarrierCommand : Command {
  BarrierCommand() : Command(CommandType::kBarrier) {}
};

struct FillCommand : Command {
  FillCommand() : Command(CommandType::kFill) {}
  BufferRef target;
  uint32_t pattern = 0;  // Low |pattern_length| bytes, in memory order.
  uint32_t pattern_length = 0;
};

struct UpdateCommand : Command {
  UpdateCommand() : Command(CommandType::kUpdate) {}
  BufferRef target;
  const uint8_t* data = nullptr;  // target.length bytes, copied at record time.
};

struct CopyCommand : Command {
  CopyCommand() : Command(CommandType::kCopy) {}
  BufferRef source;
  BufferRef target;
};

struct DispatchCommand : Command {
  DispatchCommand() : Command(CommandType::kDispatch) {}
  Executable* executable = nullptr;
  uint32_t ordinal = 0;
  WorkgroupCount workgroup_count;
  std::span<const uint32_t> constants;
  std::span<const BufferRef> bindings;
};

// Receives commands from RecordingCommandBuffer::Replay in recorded order.
// A non-OK return stops the replay.
class CommandHandler {
 public:
  virtual ~CommandHandler() = default;
  virtual Status OnBarrier(const BarrierCommand& command) = 0;
  virtual Status OnFill(const FillCommand& command) = 0;
  virtual Status OnUpdate(const UpdateCommand& command) = 0;
  virtual Status OnCopy(const CopyCommand& command) = 0;
  virtual Status OnDispatch(const DispatchCommand& command) = 0;
};

// Record-time limits a driver imposes on dispatches, so that recording (not
// execution) reports what the driver cannot run.
struct RecordingOptions {
  // Dispatches must use LocalExecutables (INVALID_ARGUMENT otherwise).
  bool local_executables_only = false;
  // Most local memory an export may declare (RESOURCE_EXHAUSTED otherwise).
  uint32_t max_local_memory_size = UINT32_MAX;
};

// Record from one thread; once ended, Replay() and first_command() may be
// used from any number of threads at once (the list is immutable).
class RecordingCommandBuffer : public CommandBuffer {
 public:
  // |host_allocator| is borrowed for the command buffer's lifetime and
  // holds the object and its arena.
  static StatusOr<ref_ptr<RecordingCommandBuffer>> Create(CommandBufferMode mode,
                                                          osprey::Allocator* host_allocator,
                                                          RecordingOptions options = {});

  // Value of kind() for every RecordingCommandBuffer (compare addresses).
  static const char kKind;
  const void* kind() const override { return &kKind; }
  // |command_buffer| as a RecordingCommandBuffer, or null if it is another
  // kind.
  static RecordingCommandBuffer* Cast(CommandBuffer* command_buffer) {
    return command_buffer && command_buffer->kind() == &kKind
               ? static_cast<RecordingCommandBuffer*>(command_buffer)
               : nullptr;
  }

  // Checks that the command buffer can be submitted now: FAILED_PRECONDITION
  // if it has not ended, or if it is one-shot and was submitted before.
  // Marks a one-shot command buffer as submitted. Thread-safe.
  Status BeginSubmission();

  // The first recorded command (null if none); follow Command::next.
  const Command* first_command() const { return first_; }
  size_t command_count() const { return count_; }
  // Dispatch commands recorded, and the most bindings any of them takes.
  size_t dispatch_count() const { return dispatch_count_; }
  size_t max_binding_count() const { return max_binding_count_; }

  // Hands every command to |handler| in order. FAILED_PRECONDITION unless
  // the command buffer has ended; otherwise the first handler error,
  // annotated with the command index and type.
  Status Replay(CommandHandler& handler) const;

 protected:
  RecordingCommandBuffer(CommandBufferMode mode, osprey::Allocator* host_allocator,
                         RecordingOptions options)
      : CommandBuffer(mode, host_allocator), options_(options) {}

  Status ExecutionBarrierImpl() override;
  Status FillBufferImpl(BufferRef target, uint32_t pattern, size_t pattern_length) override;
  Status UpdateBufferImpl(const void* source_data, BufferRef target) override;
  Status CopyBufferImpl(BufferRef source, BufferRef target) override;
  Status DispatchImpl(Executable* executable, uint32_t ordinal, WorkgroupCount workgroup_count,
                      std::span<const uint32_t> constants,
                      std::span<const BufferRef> bindings) override;

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.

  void Append(Command* command);

  RecordingOptions options_;
  std::atomic<bool> submitted_{false};
  const Command* first_ = nullptr;
  Command* last_ = nullptr;
  size_t count_ = 0;
  size_t dispatch_count_ = 0;
  size_t max_binding_count_ = 0;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_RECORDING_COMMAND_BUFFER_H_
