// ElfLoader: ELF images wrapped as LibraryExecutables.
#include "hal/local/loaders/elf/elf_loader.h"

#include <cstring>
#include <utility>

#include "hal/local/library_executable.h"
#include "hal/local/loaders/elf/elf_status.h"

namespace osprey::hal::local::loaders::elf {

namespace {

template <typename T>
bool Aligned(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) % alignof(T)) == 0;
}

// [p, p + count * sizeof(T)) inside the image and aligned for T.
template <typename T>
bool ArrayInImage(const ElfImage& image, const T* p, uint32_t count) {
  if (!p || !Aligned<T>(p)) return false;
  if (count == 0) return true;
  return image.ContainsHostRange(p, sizeof(T) * static_cast<size_t>(count));
}

constexpr size_t kMaxName = LibraryExecutable::kMaxNameLength;

}  // namespace

Status ValidateLibraryInImage(const ElfImage& image,
                              const osprey_executable_library_header_t* const* library) {
  if (!library) return OSPREY_ELF_ERROR(kInvalidArgument, "the library query returned NULL");
  if (!ArrayInImage(image, library, 1)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "library description pointer %p is outside the image",
                            static_cast<const void*>(library));
  }
  const osprey_executable_library_header_t* header = *library;
  if (!ArrayInImage(image, header, 1)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "library header pointer %p is outside the image",
                            static_cast<const void*>(header));
  }
  if (header->name && !image.ContainsHostString(header->name, kMaxName)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "library name is not a string inside the image");
  }
  if (header->version != OSPREY_EXECUTABLE_LIBRARY_VERSION_1) {
    return OkStatus();  // LibraryExecutable reports the unknown version.
  }
  const auto* v1 = reinterpret_cast<const osprey_executable_library_v1_t*>(library);
  if (!ArrayInImage(image, v1, 1)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "library description is outside the image");
  }
  if (v1->imports.count > LibraryExecutable::kMaxImports ||
      v1->exports.count > LibraryExecutable::kMaxExports) {
    return OkStatus();  // LibraryExecutable reports the counts.
  }
  if (v1->imports.count > 0) {
    if (!ArrayInImage(image, v1->imports.symbols, v1->imports.count)) {
      return OSPREY_ELF_ERROR(kInvalidArgument, "import name array is outside the image");
    }
    for (uint32_t i = 0; i < v1->imports.count; ++i) {
      const char* s = v1->imports.symbols[i];
      if (s && !image.ContainsHostString(s, kMaxName)) {
        return OSPREY_ELF_ERROR(kInvalidArgument,
                                "import %u: name is not a string inside the image", i);
      }
    }
  }
  const uint32_t n = v1->exports.count;
  if (n == 0) return OkStatus();
  if (!ArrayInImage(image, v1->exports.ptrs, n)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "export function array is outside the image");
  }
  for (uint32_t i = 0; i < n; ++i) {
    osprey_dispatch_fn_t fn = v1->exports.ptrs[i];
    if (fn && !image.ContainsHostCode(reinterpret_cast<const void*>(fn))) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "export %u: function %p is outside the image's code", i,
                              reinterpret_cast<const void*>(fn));
    }
  }
  if (v1->exports.attrs && !ArrayInImage(image, v1->exports.attrs, n)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "export attribute array is outside the image");
  }
  if (v1->exports.names) {
    if (!ArrayInImage(image, v1->exports.names, n)) {
      return OSPREY_ELF_ERROR(kInvalidArgument, "export name array is outside the image");
    }
    for (uint32_t i = 0; i < n; ++i) {
      const char* s = v1->exports.names[i];
      if (s && !image.ContainsHostString(s, kMaxName)) {
        return OSPREY_ELF_ERROR(kInvalidArgument,
                                "export %u: name is not a string inside the image", i);
      }
    }
  }
  return OkStatus();
}

bool ElfLoader::CanLoad(const char* format) const {
  ElfMachine machine, host;
  return ElfMachineFromFormat(format, &machine) && ElfHostMachine(&host) && machine == host;
}

StatusOr<ref_ptr<LocalExecutable>> ElfLoader::Load(const ExecutableParams& params,
                                                   const ImportTable& imports,
                                                   osprey::Allocator* host_allocator) {
  ElfMachine machine;
  if (!ElfMachineFromFormat(params.format, &machine)) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "format '%s' is not an ELF executable format",
                            params.format ? params.format : "(null)");
  }
  OSPREY_ASSIGN_OR_RETURN(ElfMachine file_machine, IdentifyElfMachine(params.data),
                          "reading %s executable", params.format);
  if (file_machine != machine) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "executable of format '%s' contains %s code",
                            params.format, ElfMachineName(file_machine));
  }
  ElfMachine host;
  if (!ElfHostMachine(&host) || host != machine) {
    return OSPREY_ELF_ERROR(kUnavailable, "%s executables cannot run on this host",
                            ElfMachineName(machine));
  }

  ElfImageOptions options;
  options.machine = machine;
  options.executable = true;
  options.max_image_size = max_image_size_;
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<ElfImage> image,
                          ElfImage::Load(params.data, options, host_allocator));
  osprey_executable_library_query_fn_t query = image->query_function();

  // A first query with an environment that resolves nothing, so the answer
  // can be checked against the image before anything dereferences it.
  osprey_executable_environment_v1_t probe = {};
  probe.import_thunk = &DirectImportThunk;
  const osprey_executable_library_header_t* const* library =
      query(OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST, &probe);
  if (!library) {
    return OSPREY_ELF_ERROR(
        kUnavailable,
        "executable library query returned NULL: the library cannot serve ABI version %u",
        OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  OSPREY_RETURN_IF_ERROR(ValidateLibraryInImage(*image, library), "checking %s executable",
                         params.format);

  LibraryExecutableOptions library_options;
  library_options.imports = &imports;
  library_options.keep_alive = ref_ptr<RefObject>(std::move(image));
  OSPREY_ASSIGN_OR_RETURN(
      ref_ptr<LibraryExecutable> executable,
      LibraryExecutable::CreateFromQuery(query, std::move(library_options), host_allocator));
  return ref_ptr<LocalExecutable>(std::move(executable));
}

Status CreateElfLoader(osprey::Allocator* allocator, ExecutableLoader** out_loader) {
  *out_loader = nullptr;
  OSPREY_ASSIGN_OR_RETURN(ElfLoader * loader, allocator->New<ElfLoader>());
  *out_loader = loader;
  return OkStatus();
}

}  // namespace osprey::hal::local::loaders::elf
