// Executables of format "npu-v1": verified command-stream blobs.
#ifndef OSPREY_DRIVERS_NPU_NPU_EXECUTABLE_H_
#define OSPREY_DRIVERS_NPU_NPU_EXECUTABLE_H_

#include <cstdint>

#include "drivers/npu/sim/command_stream.h"
#include "hal/executable.h"

namespace osprey::drivers::npu {

// Immutable once prepared; thread-safe.
class NpuExecutable final : public hal::Executable {
 public:
  static const char kKind;
  const void* kind() const override { return &kKind; }
  // |executable| as an NpuExecutable, or null if it is another kind.
  static NpuExecutable* Cast(hal::Executable* executable) {
    return executable && executable->kind() == &kKind ? static_cast<NpuExecutable*>(executable)
                                                      : nullptr;
  }

  // Copies |params.data| (unless kAliasData and 4-byte aligned) and
  // verifies it (sim::BlobView::Parse). UNIMPLEMENTED for another format;
  // INVALID_ARGUMENT/DATA_LOSS for a bad blob.
  static StatusOr<ref_ptr<NpuExecutable>> Create(const hal::ExecutableParams& params,
                                                 osprey::Allocator* host_allocator);
  ~NpuExecutable() override;

  uint32_t export_count() const override { return view_.export_count(); }
  const hal::ExportInfo& export_info(uint32_t ordinal) const override { return infos_[ordinal]; }
  // The command stream of export |ordinal| (< export_count()).
  sim::ExportView export_view(uint32_t ordinal) const { return view_.export_view(ordinal); }

 private:
  friend class osprey::Allocator;
  explicit NpuExecutable(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}

  osprey::Allocator* host_allocator_;
  void* copy_ = nullptr;  // Owned copy of the blob (null when aliased).
  sim::BlobView view_;
  hal::ExportInfo* infos_ = nullptr;  // export_count() entries.
};

// Prepares "npu-v1" executables. Thread-safe.
class NpuExecutableCache final : public hal::ExecutableCache {
 public:
  static StatusOr<ref_ptr<NpuExecutableCache>> Create(osprey::Allocator* host_allocator);
  bool CanPrepareFormat(const char* format) const override;
  StatusOr<ref_ptr<hal::Executable>> PrepareExecutable(
      const hal::ExecutableParams& params) override;

 private:
  friend class osprey::Allocator;
  explicit NpuExecutableCache(osprey::Allocator* host_allocator)
      : host_allocator_(host_allocator) {}
  osprey::Allocator* host_allocator_;
};

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_NPU_EXECUTABLE_H_
