// Command buffer state machine and the validation every driver shares.
#include "hal/command_buffer.h"

#include <cstring>

namespace osprey::hal {

namespace {

const char* StateName(CommandBuffer::State state) {
  switch (state) {
    case CommandBuffer::State::kInitial: return "initial";
    case CommandBuffer::State::kRecording: return "recording";
    case CommandBuffer::State::kExecutable: return "executable";
  }
  return "unknown";
}

using ull = unsigned long long;

// Checks |ref| against the buffer's flags and resolves it to an absolute
// range of the allocated buffer. |what| names the operand in messages.
Status ResolveRef(const BufferRef& ref, BufferUsage required_usage, MemoryAccess required_access,
                  const char* what, BufferRef* out_ref) {
  if (!ref.buffer) return InvalidArgumentError("%s buffer is null", what);
  Buffer* buffer = ref.buffer;
  if (!AnyBitSet(buffer->memory_type(), MemoryType::kDeviceVisible)) {
    return PermissionDeniedError(
        "%s buffer of %llu bytes is not device-visible (memory type 0x%x)", what,
        (ull)buffer->byte_length(), unsigned(buffer->memory_type()));
  }
  if (!AnyBitSet(buffer->allowed_usage(), required_usage)) {
    return PermissionDeniedError(
        "%s buffer of %llu bytes lacks the required usage 0x%x (it allows usage 0x%x)", what,
        (ull)buffer->byte_length(), unsigned(required_usage), unsigned(buffer->allowed_usage()));
  }
  if (!AllBitsSet(buffer->allowed_access(), required_access)) {
    return PermissionDeniedError(
        "%s buffer of %llu bytes is %s but the command %s it", what, (ull)buffer->byte_length(),
        AnyBitSet(buffer->allowed_access(), MemoryAccess::kWrite) ? "write-only" : "read-only",
        AnyBitSet(required_access, MemoryAccess::kWrite) ? "writes" : "reads");
  }
  DeviceSize offset = 0, length = 0;
  OSPREY_RETURN_IF_ERROR(buffer->CalculateRange(ref.offset, ref.length, &offset, &length),
                         "%s range", what);
  out_ref->buffer = buffer->allocated_buffer();
  out_ref->offset = offset;
  out_ref->length = length;
  return OkStatus();
}

}  // namespace

// Retained resources, in arena-allocated blocks released on destruction.
struct CommandBuffer::RetainedBlock {
  static constexpr size_t kCapacity = 30;
  RetainedBlock* next;
  size_t count;
  Resource* items[kCapacity];
};

CommandBuffer::CommandBuffer(CommandBufferMode mode, osprey::Allocator* host_allocator)
    : mode_(mode), arena_(host_allocator) {}

CommandBuffer::~CommandBuffer() {
  for (RetainedBlock* block = retained_; block; block = block->next) {
    for (size_t i = 0; i < block->count; ++i) block->items[i]->Release();
  }
}

Status CommandBuffer::Retain(Resource* resource) {
  if (!resource) return OkStatus();
  if (!retained_ || retained_->count == RetainedBlock::kCapacity) {
    OSPREY_ASSIGN_OR_RETURN(RetainedBlock * block, arena_.New<RetainedBlock>(),
                            "retaining a command resource");
    block->next = retained_;
    block->count = 0;
    retained_ = block;
  }
  resource->Retain();
  retained_->items[retained_->count++] = resource;
  return OkStatus();
}

Status CommandBuffer::Begin() {
  if (state_ != State::kInitial) {
    return FailedPreconditionError("Begin() on a command buffer in the %s state (must be initial)",
                                   StateName(state_));
  }
  OSPREY_RETURN_IF_ERROR(BeginImpl());
  state_ = State::kRecording;
  return OkStatus();
}

Status CommandBuffer::End() {
  if (state_ != State::kRecording) {
    return FailedPreconditionError("End() on a command buffer in the %s state (must be recording)",
                                   StateName(state_));
  }
  OSPREY_RETURN_IF_ERROR(EndImpl());
  state_ = State::kExecutable;
  return OkStatus();
}

#define OSPREY_REQUIRE_RECORDING_(command)                                                \
  if (state_ != State::kRecording) {                                                      \
    return FailedPreconditionError("%s on a command buffer in the %s state (call Begin() " \
                                   "first)",                                              \
                                   command, StateName(state_));                           \
  }

Status CommandBuffer::ExecutionBarrier() {
  OSPREY_REQUIRE_RECORDING_("ExecutionBarrier()");
  return ExecutionBarrierImpl();
}

Status CommandBuffer::FillBuffer(BufferRef target, const void* pattern, size_t pattern_length) {
  OSPREY_REQUIRE_RECORDING_("FillBuffer()");
  if (!pattern) return InvalidArgumentError("fill pattern is null");
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError("fill pattern length %zu is not 1, 2 or 4 bytes", pattern_length);
  }
  BufferRef resolved;
  OSPREY_RETURN_IF_ERROR(
      ResolveRef(target, BufferUsage::kTransferTarget, MemoryAccess::kWrite, "fill target",
                 &resolved));
  if (resolved.offset % pattern_length != 0 || resolved.length % pattern_length != 0) {
    return InvalidArgumentError(
        "fill of [%llu, +%llu) (offset in the allocated buffer) is not aligned to its %zu-byte "
        "pattern",
        (ull)resolved.offset, (ull)resolved.length, pattern_length);
  }
  uint32_t value = 0;
  memcpy(&value, pattern, pattern_length);
  OSPREY_RETURN_IF_ERROR(Retain(target.buffer));
  return FillBufferImpl(resolved, value, pattern_length);
}

Status CommandBuffer::UpdateBuffer(const void* source_data, BufferRef target) {
  OSPREY_REQUIRE_RECORDING_("UpdateBuffer()");
  BufferRef resolved;
  OSPREY_RETURN_IF_ERROR(
      ResolveRef(target, BufferUsage::kTransferTarget, MemoryAccess::kWrite, "update target",
                 &resolved));
  if (resolved.length > kMaxUpdateLength) {
    return InvalidArgumentError("update of %llu bytes exceeds the maximum of %llu bytes",
                                (ull)resolved.length, (ull)kMaxUpdateLength);
  }
  if (!source_data && resolved.length > 0) {
    return InvalidArgumentError("update source data is null");
  }
  OSPREY_RETURN_IF_ERROR(Retain(target.buffer));
  return UpdateBufferImpl(source_data, resolved);
}

Status CommandBuffer::CopyBuffer(BufferRef source, BufferRef target) {
  OSPREY_REQUIRE_RECORDING_("CopyBuffer()");
  BufferRef resolved_source, resolved_target;
  OSPREY_RETURN_IF_ERROR(ResolveRef(source, BufferUsage::kTransferSource, MemoryAccess::kRead,
                                    "copy source", &resolved_source));
  if (target.length == kWholeBuffer && target.buffer) {
    // "As long as the source": the target must have room for it.
    target.length = resolved_source.length;
  }
  OSPREY_RETURN_IF_ERROR(ResolveRef(target, BufferUsage::kTransferTarget, MemoryAccess::kWrite,
                                    "copy target", &resolved_target));
  if (resolved_source.length != resolved_target.length) {
    return InvalidArgumentError("copy source has %llu bytes but the target range has %llu",
                                (ull)resolved_source.length, (ull)resolved_target.length);
  }
  if (resolved_source.buffer == resolved_target.buffer &&
      resolved_source.offset < resolved_target.offset + resolved_target.length &&
      resolved_target.offset < resolved_source.offset + resolved_source.length) {
    return InvalidArgumentError(
        "copy ranges [%llu, +%llu) and [%llu, +%llu) overlap in the same buffer",
        (ull)resolved_source.offset, (ull)resolved_source.length, (ull)resolved_target.offset,
        (ull)resolved_target.length);
  }
  OSPREY_RETURN_IF_ERROR(Retain(source.buffer));
  OSPREY_RETURN_IF_ERROR(Retain(target.buffer));
  return CopyBufferImpl(resolved_source, resolved_target);
}

Status CommandBuffer::Dispatch(Executable* executable, uint32_t ordinal,
                               WorkgroupCount workgroup_count, std::span<const uint32_t> constants,
                               std::span<const BufferRef> bindings) {
  OSPREY_REQUIRE_RECORDING_("Dispatch()");
  if (!executable) return InvalidArgumentError("dispatch of a null executable");
  if (ordinal >= executable->export_count()) {
    return InvalidArgumentError("dispatch of export ordinal %u; the executable has %u exports",
                                ordinal, executable->export_count());
  }
  const ExportInfo& info = executable->export_info(ordinal);
  if (constants.size() != info.constant_count) {
    return InvalidArgumentError("dispatch of export '%s' passes %zu constants; it declares %u",
                                info.name, constants.size(), info.constant_count);
  }
  if (bindings.size() != info.binding_count) {
    return InvalidArgumentError("dispatch of export '%s' passes %zu bindings; it declares %u",
                                info.name, bindings.size(), info.binding_count);
  }
  if (uint64_t(workgroup_count.x) * workgroup_count.y * workgroup_count.z > UINT32_MAX) {
    return InvalidArgumentError("dispatch of export '%s' over %u x %u x %u workgroups exceeds "
                                "2^32 - 1 workgroups",
                                info.name, workgroup_count.x, workgroup_count.y,
                                workgroup_count.z);
  }

  // Resolved refs are handed to the driver; small dispatches stay on the stack.
  constexpr size_t kInlineBindings = 16;
  BufferRef inline_refs[kInlineBindings];
  BufferRef* resolved = inline_refs;
  if (bindings.size() > kInlineBindings) {
    OSPREY_ASSIGN_OR_RETURN(resolved, arena_.NewArray<BufferRef>(bindings.size()));
  }
  for (uint32_t i = 0; i < bindings.size(); ++i) {
    const BufferRef& ref = bindings[i];
    const bool written = info.binding_is_written(i);
    if (!ref.buffer) {
      return InvalidArgumentError("dispatch binding %u of export '%s' is null", i, info.name);
    }
    const DeviceSize size = ref.buffer->byte_length();
    if (!AnyBitSet(ref.buffer->memory_type(), MemoryType::kDeviceVisible)) {
      return PermissionDeniedError(
          "dispatch binding %u of export '%s' (buffer of %llu bytes) is not device-visible", i,
          info.name, (ull)size);
    }
    if (written) {
      if (!AnyBitSet(ref.buffer->allowed_access(), MemoryAccess::kWrite)) {
        return PermissionDeniedError(
            "dispatch binding %u of export '%s' (buffer of %llu bytes) is read-only but the "
            "export writes it",
            i, info.name, (ull)size);
      }
      if (!AnyBitSet(ref.buffer->allowed_usage(), BufferUsage::kDispatchStorageWrite)) {
        return PermissionDeniedError(
            "dispatch binding %u of export '%s' (buffer of %llu bytes) lacks dispatch-storage-"
            "write usage but the export writes it",
            i, info.name, (ull)size);
      }
    } else {
      if (!AnyBitSet(ref.buffer->allowed_access(), MemoryAccess::kRead)) {
        return PermissionDeniedError(
            "dispatch binding %u of export '%s' (buffer of %llu bytes) is write-only but the "
            "export reads it",
            i, info.name, (ull)size);
      }
      if (!AnyBitSet(ref.buffer->allowed_usage(),
                     BufferUsage::kDispatchStorageRead | BufferUsage::kDispatchUniformRead)) {
        return PermissionDeniedError(
            "dispatch binding %u of export '%s' (buffer of %llu bytes) lacks dispatch-read usage",
            i, info.name, (ull)size);
      }
    }
    DeviceSize offset = 0, length = 0;
    OSPREY_RETURN_IF_ERROR(ref.buffer->CalculateRange(ref.offset, ref.length, &offset, &length),
                           "dispatch binding %u of export '%s'", unsigned(i), info.name);
    resolved[i] = {ref.buffer->allocated_buffer(), offset, length};
  }
  OSPREY_RETURN_IF_ERROR(Retain(executable));
  for (const BufferRef& ref : bindings) OSPREY_RETURN_IF_ERROR(Retain(ref.buffer));
  return DispatchImpl(executable, ordinal, workgroup_count, constants,
                      std::span<const BufferRef>(resolved, bindings.size()));
}

#undef OSPREY_REQUIRE_RECORDING_

}  // namespace osprey::hal
