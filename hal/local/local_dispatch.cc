// Preparing and running CPU dispatches; host transfer commands.
#include "hal/local/local_dispatch.h"

#include <cstring>


namespace osprey::hal::local {

using ull = unsigned long long;

Status LocalDispatch::Prepare(Executable* executable, uint32_t ordinal,
                              WorkgroupCount workgroup_count,
                              std::span<const uint32_t> constants,
                              std::span<const BufferRef> bindings, uint32_t max_concurrency,
                              Arena* scratch) {
  executable_ = LocalExecutable::Cast(executable);
  if (!executable_) {
    return InvalidArgumentError(
        "dispatch of an executable that is not a CPU executable (prepared by another device?)");
  }
  if (ordinal >= executable_->export_count()) {
    return InvalidArgumentError("dispatch of export ordinal %u; the executable has %u exports",
                                ordinal, executable_->export_count());
  }
  const ExportInfo& info = executable_->export_info(ordinal);
  ordinal_ = ordinal;
  function_ = executable_->function(ordinal);
  environment_ = executable_->environment();
  local_memory_size_ = info.local_memory_size;
  workgroup_total_ = workgroup_count.x * workgroup_count.y * workgroup_count.z;

  void** ptrs = inline_ptrs_;
  size_t* lengths = inline_lengths_;
  if (bindings.size() > kInlineBindings) {
    if (!scratch) {
      return ResourceExhaustedError(
          "dispatch of export '%s' has %zu bindings; more than %zu need scratch memory",
          info.name, bindings.size(), kInlineBindings);
    }
    OSPREY_ASSIGN_OR_RETURN(ptrs, scratch->NewArray<void*>(bindings.size()));
    OSPREY_ASSIGN_OR_RETURN(lengths, scratch->NewArray<size_t>(bindings.size()));
  }
  for (size_t i = 0; i < bindings.size(); ++i) {
    const BufferRef& ref = bindings[i];
    // The same access the command buffer validated: written bindings need
    // write access only (a write-only output buffer is legal).
    const MemoryAccess access =
        info.binding_is_written(uint32_t(i)) ? MemoryAccess::kWrite : MemoryAccess::kRead;
    uint8_t* data = nullptr;
    OSPREY_RETURN_IF_ERROR(ref.buffer->MapForDevice(access, ref.offset, ref.length, &data),
                           "binding %zu of export '%s'", i, info.name);
    ptrs[i] = data;
    lengths[i] = size_t(ref.length);
  }

  state_ = {};
  state_.workgroup_size_x = info.workgroup_size[0];
  state_.workgroup_size_y = info.workgroup_size[1];
  state_.workgroup_size_z = info.workgroup_size[2];
  state_.workgroup_count_x = workgroup_count.x;
  state_.workgroup_count_y = workgroup_count.y;
  state_.workgroup_count_z = workgroup_count.z;
  state_.max_concurrency = max_concurrency ? max_concurrency : 1;
  state_.constant_count = uint32_t(constants.size());
  state_.constants = constants.data();
  state_.binding_count = uint32_t(bindings.size());
  state_.binding_ptrs = ptrs;
  state_.binding_lengths = lengths;
  return OkStatus();
}

OSPREY_ATTRIBUTE_NOINLINE OSPREY_ATTRIBUTE_COLD Status
LocalDispatch::WorkgroupFailed(uint32_t x, uint32_t y, uint32_t z, int result) const {
  const char* library = executable_->library_name();
  const char* meaning = result == OSPREY_DISPATCH_INDEX_OUT_OF_RANGE
                            ? " (index out of range in the input data)"
                        : result == OSPREY_DISPATCH_DIVISION_BY_ZERO
                            ? " (integer division by zero in the input data)"
                            : "";
  return InternalError(
      "dispatch function of export '%s' (ordinal %u) in library '%s' returned %d%s at "
      "workgroup (%u, %u, %u) of (%u, %u, %u)",
      executable_->export_info(ordinal_).name, ordinal_, library, result, meaning, x, y, z,
      state_.workgroup_count_x, state_.workgroup_count_y, state_.workgroup_count_z);
}

Status LocalDispatch::RunWorkgroups(uint32_t begin, uint32_t end, uint32_t processor_id,
                                    void* local_memory, uint32_t local_memory_size) const {
  if (local_memory_size < local_memory_size_) {
    return ResourceExhaustedError(
        "export '%s' needs %u bytes of local memory per workgroup; the worker has %u",
        executable_->export_info(ordinal_).name, local_memory_size_, local_memory_size);
  }
  if (end > workgroup_total_) end = workgroup_total_;
  if (begin >= end) return OkStatus();
  const uint32_t count_x = state_.workgroup_count_x;
  const uint32_t count_y = state_.workgroup_count_y;
  osprey_workgroup_state_v1_t workgroup;
  workgroup.processor_id = processor_id;
  workgroup.local_memory = local_memory;
  workgroup.local_memory_size = local_memory_size_;
  // Decompose once, then step: no division in the loop.
  uint32_t x = begin % count_x;
  uint32_t y = (begin / count_x) % count_y;
  uint32_t z = begin / (count_x * count_y);
  const osprey_dispatch_fn_t function = function_;
  const osprey_executable_environment_v1_t* environment = environment_;
  for (uint32_t id = begin; id < end; ++id) {
    workgroup.workgroup_id_x = x;
    workgroup.workgroup_id_y = y;
    workgroup.workgroup_id_z = z;
    const int result = function(environment, &state_, &workgroup);
    if (OSPREY_UNLIKELY(result != 0)) return WorkgroupFailed(x, y, z, result);
    if (++x == count_x) {
      x = 0;
      if (++y == count_y) {
        y = 0;
        ++z;
      }
    }
  }
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

Status ExecuteFill(const FillCommand& command) {
  uint8_t* data = nullptr;
  OSPREY_RETURN_IF_ERROR(command.target.buffer->MapForDevice(
      MemoryAccess::kWrite, command.target.offset, command.target.length, &data));
  const size_t length = size_t(command.target.length);
  switch (command.pattern_length) {
    case 1:
      memset(data, int(command.pattern & 0xFF), length);
      break;
    case 2: {
      uint16_t value;
      memcpy(&value, &command.pattern, 2);
      for (size_t i = 0; i < length; i += 2) memcpy(data + i, &value, 2);
      break;
    }
    case 4:
      for (size_t i = 0; i < length; i += 4) memcpy(data + i, &command.pattern, 4);
      break;
    default:
      return InternalError("fill pattern length %u", command.pattern_length);
  }
  return OkStatus();
}

Status ExecuteUpdate(const UpdateCommand& command) {
  uint8_t* data = nullptr;
  OSPREY_RETURN_IF_ERROR(command.target.buffer->MapForDevice(
      MemoryAccess::kWrite, command.target.offset, command.target.length, &data));
  if (command.target.length) memcpy(data, command.data, size_t(command.target.length));
  return OkStatus();
}

Status ExecuteCopy(const CopyCommand& command) {
  uint8_t* source = nullptr;
  uint8_t* target = nullptr;
  OSPREY_RETURN_IF_ERROR(command.source.buffer->MapForDevice(
      MemoryAccess::kRead, command.source.offset, command.source.length, &source));
  OSPREY_RETURN_IF_ERROR(command.target.buffer->MapForDevice(
      MemoryAccess::kWrite, command.target.offset, command.target.length, &target));
  if (command.target.length) memmove(target, source, size_t(command.target.length));
  return OkStatus();
}

}  // namespace osprey::hal::local
