// A LocalExecutable made from a queried CPU executable library (the
// structure returned by osprey_executable_library_query). Every loader in
// hal/local/loaders/ ends here: it finds the query function in its format
// (ELF image, static registry, dlopen handle) and hands it over, tying its
// own resources (the mapped image, the dlopen handle) to the executable's
// lifetime with a keep-alive reference or a release callback.
#ifndef OSPREY_HAL_LOCAL_LIBRARY_EXECUTABLE_H_
#define OSPREY_HAL_LOCAL_LIBRARY_EXECUTABLE_H_

#include <cstdint>

#include "hal/executable.h"
#include "hal/local/executable_library.h"
#include "hal/local/executable_loader.h"
#include "hal/local/local_executable.h"
#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::hal::local {

// Called once when a LibraryExecutable is destroyed, after the library is
// no longer used (e.g. unmaps an image or closes a dlopen handle).
struct LibraryReleaseCallback {
  void (*fn)(void* user_data) = nullptr;
  void* user_data = nullptr;
};

// What a loader passes besides the library itself.
struct LibraryExecutableOptions {
  // Host functions offered to the library; borrowed for the duration of
  // Create(). Null: no imports offered (any required import is NOT_FOUND).
  const ImportTable* imports = nullptr;
  // Retained until the executable is destroyed (e.g. the loaded image).
  ref_ptr<RefObject> keep_alive;
  // Runs when the executable is destroyed, after |keep_alive| is released.
  LibraryReleaseCallback release;
  // Processor feature bits passed in the environment.
  uint64_t processor_features[2] = {0, 0};
};

class LibraryExecutable final : public LocalExecutable {
 public:
  // Longest library, export or import name accepted (without terminator).
  // A name that is not terminated within this many bytes is rejected, so a
  // corrupt string table cannot make validation read without bound.
  static constexpr size_t kMaxNameLength = 255;
  // Most exports one library may declare.
  static constexpr uint32_t kMaxExports = 4096;
  // Most imports one library may declare.
  static constexpr uint32_t kMaxImports = 256;

  // Queries |query| for ABI version OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST
  // with the executable's own environment (which the library may keep), then
  // validates and wraps the answer as Create() does. UNAVAILABLE if the
  // library answers NULL (it cannot serve this ABI version).
  static StatusOr<ref_ptr<LibraryExecutable>> CreateFromQuery(
      osprey_executable_library_query_fn_t query, LibraryExecutableOptions options,
      osprey::Allocator* host_allocator);

  // Validates |library| (what a query function returned; borrowed, must stay
  // valid while the executable lives, which |options.keep_alive| / release
  // can guarantee) and resolves its imports through |options.imports|.
  // Errors: INVALID_ARGUMENT for a malformed description (null header or
  // pointers, unknown version, null function, zero workgroup size, name not
  // terminated within kMaxNameLength, duplicate export names, too many
  // exports/imports); NOT_FOUND naming the first required import the table
  // lacks. Optional imports ('?' prefix) the table lacks resolve to null.
  // On error, |options.keep_alive| is released and |options.release| runs
  // before returning. |host_allocator| is borrowed for the executable's
  // lifetime.
  static StatusOr<ref_ptr<LibraryExecutable>> Create(
      const osprey_executable_library_header_t* const* library,
      LibraryExecutableOptions options, osprey::Allocator* host_allocator);

  ~LibraryExecutable() override;

  // Library name ("unnamed" if the library gave none). Borrowed.
  const char* library_name() const override { return library_name_; }

  uint32_t export_count() const override { return export_count_; }
  const ExportInfo& export_info(uint32_t ordinal) const override {
    OSPREY_DCHECK(ordinal < export_count_);
    return exports_[ordinal];
  }
  const osprey_executable_environment_v1_t* environment() const override {
    return &environment_;
  }
  osprey_dispatch_fn_t function(uint32_t ordinal) const override {
    OSPREY_DCHECK(ordinal < export_count_);
    return functions_[ordinal];
  }

  // Number of imports the library declared and how each resolved (null for
  // a missing optional import).
  uint32_t import_count() const { return import_count_; }

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.

  explicit LibraryExecutable(LibraryExecutableOptions options);
  static StatusOr<ref_ptr<LibraryExecutable>> Make(LibraryExecutableOptions options,
                                                   osprey::Allocator* host_allocator);

  Status Initialize(const osprey_executable_library_header_t* const* library,
                    const ImportTable* imports);

  LibraryExecutableOptions options_;
  const char* library_name_ = "unnamed";
  osprey_executable_environment_v1_t environment_ = {};
  uint32_t export_count_ = 0;
  uint32_t import_count_ = 0;
  // One host allocation holding exports_, functions_, import arrays and
  // synthesized export names; freed in the destructor.
  void* storage_ = nullptr;
  ExportInfo* exports_ = nullptr;
  const osprey_dispatch_fn_t* functions_ = nullptr;
  osprey_import_fn_t* import_funcs_ = nullptr;
  void** import_contexts_ = nullptr;
};

// The default import thunk: calls |fn| directly.
int DirectImportThunk(osprey_import_fn_t fn, void* params, void* context, void* reserved);

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_LIBRARY_EXECUTABLE_H_
