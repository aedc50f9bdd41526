// "npu-v1" executables and their cache.
#include "drivers/npu/npu_executable.h"

#include <cstring>

#include "drivers/npu/schema/npu_isa.h"

namespace osprey::drivers::npu {

const char NpuExecutable::kKind = 0;

StatusOr<ref_ptr<NpuExecutable>> NpuExecutable::Create(const hal::ExecutableParams& params,
                                                       osprey::Allocator* host_allocator) {
  if (!params.format || std::strcmp(params.format, NPU_EXECUTABLE_FORMAT) != 0) {
    return UnimplementedError("npu runs executables of format '%s', not '%s'",
                              NPU_EXECUTABLE_FORMAT, params.format ? params.format : "(null)");
  }
  OSPREY_ASSIGN_OR_RETURN(auto executable, MakeRef<NpuExecutable>(host_allocator, host_allocator));
  std::span<const uint8_t> data = params.data;
  const bool aligned = reinterpret_cast<uintptr_t>(data.data()) % alignof(uint32_t) == 0;
  const bool alias =
      aligned && (uint32_t(params.caching_mode) & uint32_t(hal::ExecutableCachingMode::kAliasData));
  if (!alias && !data.empty()) {
    OSPREY_RETURN_IF_ERROR(host_allocator->Allocate(data.size(), 16, &executable->copy_),
                           "copying a %zu-byte npu executable", data.size());
    std::memcpy(executable->copy_, data.data(), data.size());
    data = {static_cast<const uint8_t*>(executable->copy_), data.size()};
  }
  OSPREY_RETURN_IF_ERROR(sim::BlobView::Parse(data, &executable->view_),
                         "loading an npu-v1 executable");
  const uint32_t count = executable->view_.export_count();
  void* infos = nullptr;
  OSPREY_RETURN_IF_ERROR(
      host_allocator->Allocate(sizeof(hal::ExportInfo) * count, alignof(hal::ExportInfo), &infos));
  executable->infos_ = static_cast<hal::ExportInfo*>(infos);
  for (uint32_t i = 0; i < count; ++i) {
    const sim::ExportView view = executable->view_.export_view(i);
    hal::ExportInfo* info = new (&executable->infos_[i]) hal::ExportInfo();
    info->name = view.name;
    info->binding_count = view.binding_count;
    info->constant_count = 0;
    info->binding_write_mask = view.binding_write_mask;
  }
  return executable;
}

NpuExecutable::~NpuExecutable() {
  host_allocator_->Free(infos_);
  host_allocator_->Free(copy_);
}

StatusOr<ref_ptr<NpuExecutableCache>> NpuExecutableCache::Create(
    osprey::Allocator* host_allocator) {
  return MakeRef<NpuExecutableCache>(host_allocator, host_allocator);
}

bool NpuExecutableCache::CanPrepareFormat(const char* format) const {
  return format && std::strcmp(format, NPU_EXECUTABLE_FORMAT) == 0;
}

StatusOr<ref_ptr<hal::Executable>> NpuExecutableCache::PrepareExecutable(
    const hal::ExecutableParams& params) {
  OSPREY_ASSIGN_OR_RETURN(auto executable, NpuExecutable::Create(params, host_allocator_));
  return ref_ptr<hal::Executable>(std::move(executable));
}

}  // namespace osprey::drivers::npu
