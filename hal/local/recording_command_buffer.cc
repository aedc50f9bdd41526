// Recording command buffer: commands as an arena-allocated list.
#include "hal/local/recording_command_buffer.h"

#include <cstring>

#include "hal/local/local_executable.h"

namespace osprey::hal::local {

const char* CommandTypeName(CommandType type) {
  switch (type) {
    case CommandType::kBarrier: return "barrier";
    case CommandType::kFill: return "fill";
    case CommandType::kUpdate: return "update";
    case CommandType::kCopy: return "copy";
    case CommandType::kDispatch: return "dispatch";
  }
  return "unknown";
}

StatusOr<ref_ptr<RecordingCommandBuffer>> RecordingCommandBuffer::Create(
    CommandBufferMode mode, osprey::Allocator* host_allocator, RecordingOptions options) {
  return MakeRef<RecordingCommandBuffer>(host_allocator, mode, host_allocator, options);
}

const char RecordingCommandBuffer::kKind = 0;

Status RecordingCommandBuffer::BeginSubmission() {
  if (state() != State::kExecutable) {
    return FailedPreconditionError(
        "command buffer submitted before End() (it is still %s)",
        state() == State::kInitial ? "initial" : "recording");
  }
  if (AnyBitSet(mode(), CommandBufferMode::kOneShot) && submitted_.exchange(true)) {
    return FailedPreconditionError("one-shot command buffer submitted a second time");
  }
  return OkStatus();
}

void RecordingCommandBuffer::Append(Command* command) {
  if (last_) {
    last_->next = command;
  } else {
    first_ = command;
  }
  last_ = command;
  ++count_;
}

Status RecordingCommandBuffer::ExecutionBarrierImpl() {
  OSPREY_ASSIGN_OR_RETURN(auto* command, arena().New<BarrierCommand>());
  Append(command);
  return OkStatus();
}

Status RecordingCommandBuffer::FillBufferImpl(BufferRef target, uint32_t pattern,
                                              size_t pattern_length) {
  OSPREY_ASSIGN_OR_RETURN(auto* command, arena().New<FillCommand>());
  command->target = target;
  command->pattern = pattern;
  command->pattern_length = uint32_t(pattern_length);
  Append(command);
  return OkStatus();
}

Status RecordingCommandBuffer::UpdateBufferImpl(const void* source_data, BufferRef target) {
  OSPREY_ASSIGN_OR_RETURN(auto* command, arena().New<UpdateCommand>());
  void* copy = nullptr;
  OSPREY_RETURN_IF_ERROR(arena().Allocate(size_t(target.length) ? size_t(target.length) : 1,
                                          alignof(uint64_t), &copy),
                         "copying %llu bytes of update data", (unsigned long long)target.length);
  if (target.length) memcpy(copy, source_data, size_t(target.length));
  command->target = target;
  command->data = static_cast<const uint8_t*>(copy);
  Append(command);
  return OkStatus();
}

Status RecordingCommandBuffer::CopyBufferImpl(BufferRef source, BufferRef target) {
  OSPREY_ASSIGN_OR_RETURN(auto* command, arena().New<CopyCommand>());
  command->source = source;
  command->target = target;
  Append(command);
  return OkStatus();
}

Status RecordingCommandBuffer::DispatchImpl(Executable* executable, uint32_t ordinal,
                                            WorkgroupCount workgroup_count,
                                            std::span<const uint32_t> constants,
                                            std::span<const BufferRef> bindings) {
  if (options_.local_executables_only) {
    const LocalExecutable* local = LocalExecutable::Cast(executable);
    const ExportInfo& info = executable->export_info(ordinal);
    if (!local) {
      return InvalidArgumentError(
          "dispatch of export '%s': the executable is not a CPU executable (was it prepared by "
          "another device?)",
          info.name);
    }
    if (info.local_memory_size > options_.max_local_memory_size) {
      return ResourceExhaustedError(
          "dispatch of export '%s' needs %u bytes of local memory; this device provides %u",
          info.name, info.local_memory_size, options_.max_local_memory_size);
    }
  }
  OSPREY_ASSIGN_OR_RETURN(auto* command, arena().New<DispatchCommand>());
  uint32_t* constants_copy = nullptr;
  if (!constants.empty()) {
    OSPREY_ASSIGN_OR_RETURN(constants_copy, arena().NewArray<uint32_t>(constants.size()));
    memcpy(constants_copy, constants.data(), constants.size_bytes());
  }
  BufferRef* bindings_copy = nullptr;
  if (!bindings.empty()) {
    OSPREY_ASSIGN_OR_RETURN(bindings_copy, arena().NewArray<BufferRef>(bindings.size()));
    for (size_t i = 0; i < bindings.size(); ++i) bindings_copy[i] = bindings[i];
  }
  command->executable = executable;
  command->ordinal = ordinal;
  command->workgroup_count = workgroup_count;
  command->constants = {constants_copy, constants.size()};
  command->bindings = {bindings_copy, bindings.size()};
  Append(command);
  ++dispatch_count_;
  if (bindings.size() > max_binding_count_) max_binding_count_ = bindings.size();
  return OkStatus();
}

Status RecordingCommandBuffer::Replay(CommandHandler& handler) const {
  if (state() != State::kExecutable) {
    return FailedPreconditionError("replaying a command buffer that has not ended recording");
  }
  size_t index = 0;
  for (const Command* command = first_; command; command = command->next, ++index) {
    Status status;
    switch (command->type) {
      case CommandType::kBarrier:
        status = handler.OnBarrier(*static_cast<const BarrierCommand*>(command));
        break;
      case CommandType::kFill:
        status = handler.OnFill(*static_cast<const FillCommand*>(command));
        break;
      case CommandType::kUpdate:
        status = handler.OnUpdate(*static_cast<const UpdateCommand*>(command));
        break;
      case CommandType::kCopy:
        status = handler.OnCopy(*static_cast<const CopyCommand*>(command));
        break;
      case CommandType::kDispatch:
        status = handler.OnDispatch(*static_cast<const DispatchCommand*>(command));
        break;
    }
    if (OSPREY_UNLIKELY(!status.ok())) {
      return std::move(status).Annotate("executing command %zu (%s)", index,
                                        CommandTypeName(command->type));
    }
  }
  return OkStatus();
}

}  // namespace osprey::hal::local
