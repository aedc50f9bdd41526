// LibraryExecutable: validation of a queried library and import resolution.
#include "hal/local/library_executable.h"

#include <stdio.h>

#include <cstring>
#include <new>
#include <utility>

namespace osprey::hal::local {

namespace {

constexpr size_t kSynthesizedNameSize = 16;  // "export_4095" + NUL fits.

size_t AlignUp(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

// Length of |name| if it is terminated within kMaxNameLength bytes, else
// kMaxNameLength + 1.
size_t BoundedLength(const char* name) {
  size_t n = 0;
  while (n <= LibraryExecutable::kMaxNameLength && name[n] != '\0') ++n;
  return n;
}

}  // namespace

// Runs the release steps of |options| when the executable could not even
// be allocated (afterwards its destructor does it).
StatusOr<ref_ptr<LibraryExecutable>> LibraryExecutable::Make(
    LibraryExecutableOptions options, osprey::Allocator* host_allocator) {
  auto made = MakeRef<LibraryExecutable>(host_allocator, std::move(options));
  if (!made.ok()) {
    // The constructor never ran, so |options| still holds everything.
    options.keep_alive.reset();
    if (options.release.fn) options.release.fn(options.release.user_data);
  }
  return made;
}

int DirectImportThunk(osprey_import_fn_t fn, void* params, void* context, void* reserved) {
  return fn(params, context, reserved);
}

LibraryExecutable::LibraryExecutable(LibraryExecutableOptions options)
    : options_(std::move(options)) {
  environment_.import_thunk = &DirectImportThunk;
  environment_.processor_features[0] = options_.processor_features[0];
  environment_.processor_features[1] = options_.processor_features[1];
}

LibraryExecutable::~LibraryExecutable() {
  if (storage_) host_allocator()->Free(storage_);
  options_.keep_alive.reset();
  if (options_.release.fn) options_.release.fn(options_.release.user_data);
}

StatusOr<ref_ptr<LibraryExecutable>> LibraryExecutable::CreateFromQuery(
    osprey_executable_library_query_fn_t query, LibraryExecutableOptions options,
    osprey::Allocator* host_allocator) {
  const ImportTable* imports = options.imports;
  if (!query) {
    LibraryReleaseCallback release = options.release;
    options.keep_alive.reset();
    if (release.fn) release.fn(release.user_data);
    return InvalidArgumentError("library query function is null");
  }
  OSPREY_ASSIGN_OR_RETURN(auto executable, Make(std::move(options), host_allocator));
  // The library sees the executable's own environment so it may keep the
  // pointer; imports are filled in once the library has listed them.
  const osprey_executable_library_header_t* const* library =
      query(OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST, &executable->environment_);
  if (!library) {
    return UnavailableError(
        "executable library query returned NULL: the library cannot serve ABI version %u",
        OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  OSPREY_RETURN_IF_ERROR(executable->Initialize(library, imports));
  return executable;
}

StatusOr<ref_ptr<LibraryExecutable>> LibraryExecutable::Create(
    const osprey_executable_library_header_t* const* library, LibraryExecutableOptions options,
    osprey::Allocator* host_allocator) {
  const ImportTable* imports = options.imports;
  OSPREY_ASSIGN_OR_RETURN(auto executable, Make(std::move(options), host_allocator));
  // On failure |executable| is released here, which runs the keep-alive
  // release and the release callback.
  OSPREY_RETURN_IF_ERROR(executable->Initialize(library, imports));
  return executable;
}

Status LibraryExecutable::Initialize(const osprey_executable_library_header_t* const* library,
                                     const ImportTable* imports) {
  if (!library) return InvalidArgumentError("executable library pointer is null");
  const osprey_executable_library_header_t* header = *library;
  if (!header) return InvalidArgumentError("executable library has no header");
  if (header->name) {
    if (BoundedLength(header->name) > kMaxNameLength) {
      return InvalidArgumentError("executable library name is longer than %zu bytes",
                                  kMaxNameLength);
    }
    if (header->name[0] != '\0') library_name_ = header->name;
  }
  if (header->version == 0 || header->version > OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST) {
    return InvalidArgumentError(
        "executable library '%s' has ABI version %u; this runtime supports 1..%u",
        library_name_, header->version, OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  // The header pointer is the first member of the v1 structure.
  const auto* v1 = reinterpret_cast<const osprey_executable_library_v1_t*>(library);
  const uint32_t export_count = v1->exports.count;
  const uint32_t import_count = v1->imports.count;
  if (export_count > kMaxExports) {
    return InvalidArgumentError("executable library '%s' declares %u exports (at most %u)",
                                library_name_, export_count, kMaxExports);
  }
  if (import_count > kMaxImports) {
    return InvalidArgumentError("executable library '%s' declares %u imports (at most %u)",
                                library_name_, import_count, kMaxImports);
  }
  if (export_count > 0 && !v1->exports.ptrs) {
    return InvalidArgumentError("executable library '%s' declares %u exports but no functions",
                                library_name_, export_count);
  }
  if (import_count > 0 && !v1->imports.symbols) {
    return InvalidArgumentError("executable library '%s' declares %u imports but no names",
                                library_name_, import_count);
  }

  // Validate export names first so the storage size is known.
  uint32_t unnamed_count = 0;
  for (uint32_t i = 0; i < export_count; ++i) {
    const char* name = v1->exports.names ? v1->exports.names[i] : nullptr;
    if (!name || name[0] == '\0') {
      ++unnamed_count;
      continue;
    }
    if (BoundedLength(name) > kMaxNameLength) {
      return InvalidArgumentError(
          "export %u of executable library '%s': name is longer than %zu bytes", i,
          library_name_, kMaxNameLength);
    }
  }

  size_t exports_offset = 0;
  size_t funcs_offset = AlignUp(exports_offset + sizeof(ExportInfo) * export_count,
                                alignof(osprey_import_fn_t));
  size_t contexts_offset =
      AlignUp(funcs_offset + sizeof(osprey_import_fn_t) * import_count, alignof(void*));
  size_t names_offset = contexts_offset + sizeof(void*) * import_count;
  size_t total = names_offset + kSynthesizedNameSize * unnamed_count;
  if (total > 0) {
    OSPREY_RETURN_IF_ERROR(host_allocator()->Allocate(total, kDefaultAlignment, &storage_),
                           "allocating export tables of executable library '%s'",
                           library_name_);
  }
  auto* base = static_cast<uint8_t*>(storage_);
  exports_ = reinterpret_cast<ExportInfo*>(base + exports_offset);
  import_funcs_ = reinterpret_cast<osprey_import_fn_t*>(base + funcs_offset);
  import_contexts_ = reinterpret_cast<void**>(base + contexts_offset);
  char* synthesized = reinterpret_cast<char*>(base + names_offset);

  for (uint32_t i = 0; i < export_count; ++i) {
    ExportInfo* info = new (&exports_[i]) ExportInfo();
    const char* name = v1->exports.names ? v1->exports.names[i] : nullptr;
    if (!name || name[0] == '\0') {
      snprintf(synthesized, kSynthesizedNameSize, "export_%u", unsigned(i));
      name = synthesized;
      synthesized += kSynthesizedNameSize;
    }
    info->name = name;
    if (!v1->exports.ptrs[i]) {
      return InvalidArgumentError("export %u ('%s') of executable library '%s' has no function",
                                  i, name, library_name_);
    }
    if (v1->exports.attrs) {
      const osprey_dispatch_attrs_v1_t& attrs = v1->exports.attrs[i];
      info->binding_count = attrs.binding_count;
      info->constant_count = attrs.constant_count;
      info->binding_write_mask = attrs.binding_write_mask;
      info->local_memory_size = attrs.local_memory_size;
      for (int d = 0; d < 3; ++d) {
        if (attrs.workgroup_size[d] == 0) {
          return InvalidArgumentError(
              "export %u ('%s') of executable library '%s' has workgroup size %u x %u x %u "
              "(each dimension must be at least 1)",
              i, name, library_name_, attrs.workgroup_size[0], attrs.workgroup_size[1],
              attrs.workgroup_size[2]);
        }
        info->workgroup_size[d] = attrs.workgroup_size[d];
      }
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (strcmp(exports_[j].name, name) == 0) {
        return InvalidArgumentError(
            "exports %u and %u of executable library '%s' are both named '%s'", j, i,
            library_name_, name);
      }
    }
  }
  export_count_ = export_count;
  functions_ = v1->exports.ptrs;

  for (uint32_t i = 0; i < import_count; ++i) {
    const char* symbol = v1->imports.symbols[i];
    if (!symbol || symbol[0] == '\0') {
      return InvalidArgumentError("import %u of executable library '%s' has no name", i,
                                  library_name_);
    }
    if (BoundedLength(symbol) > kMaxNameLength) {
      return InvalidArgumentError(
          "import %u of executable library '%s': name is longer than %zu bytes", i,
          library_name_, kMaxNameLength);
    }
    const bool optional = symbol[0] == '?';
    const char* name = optional ? symbol + 1 : symbol;
    const HostImport* found = imports ? imports->Find(name) : nullptr;
    if (!found && !optional) {
      return NotFoundError(
          "executable library '%s' requires import '%s', which the host does not provide",
          library_name_, name);
    }
    import_funcs_[i] = found ? found->fn : nullptr;
    import_contexts_[i] = found ? found->context : nullptr;
  }
  import_count_ = import_count;
  environment_.import_funcs = import_funcs_;
  environment_.import_contexts = import_contexts_;
  return OkStatus();
}

}  // namespace osprey::hal::local
