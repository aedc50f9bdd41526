// SystemLoader: temporary file + dlopen.
#include "hal/local/loaders/system/system_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <utility>

#include "hal/local/library_executable.h"
#include "hal/local/loaders/elf/elf_image.h"

namespace osprey::hal::local::loaders::system {

namespace {

using elf::ElfHostMachine;
using elf::ElfImage;
using elf::ElfImageOptions;
using elf::ElfMachine;
using elf::ElfMachineFromFormat;
using elf::ElfMachineName;
using elf::IdentifyElfMachine;

constexpr char kPrefix[] = "system-";
constexpr size_t kMaxPath = 512;

// What the executable keeps until it is destroyed.
struct LoadedFile {
  osprey::Allocator* allocator;
  void* handle;
  char path[kMaxPath];
};

void ReleaseLoadedFile(void* user_data) {
  auto* file = static_cast<LoadedFile*>(user_data);
  if (file->handle) dlclose(file->handle);
  if (file->path[0]) unlink(file->path);
  file->allocator->Free(file);
}

bool MachineOfFormat(const char* format, ElfMachine* out_machine) {
  if (!format || strncmp(format, kPrefix, sizeof(kPrefix) - 1) != 0) return false;
  return ElfMachineFromFormat(format + sizeof(kPrefix) - 1, out_machine);
}

Status WriteAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return InternalError("writing the library to a temporary file failed: %s", strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

bool SystemLoader::CanLoad(const char* format) const {
  ElfMachine machine, host;
  return MachineOfFormat(format, &machine) && ElfHostMachine(&host) && machine == host;
}

StatusOr<ref_ptr<LocalExecutable>> SystemLoader::Load(const ExecutableParams& params,
                                                      const ImportTable& imports,
                                                      osprey::Allocator* host_allocator) {
  ElfMachine machine;
  if (!MachineOfFormat(params.format, &machine)) {
    return InvalidArgumentError("format '%s' is not a system-elf format",
                                params.format ? params.format : "(null)");
  }
  OSPREY_ASSIGN_OR_RETURN(ElfMachine file_machine, IdentifyElfMachine(params.data),
                          "reading %s executable", params.format);
  if (file_machine != machine) {
    return InvalidArgumentError("executable of format '%s' contains %s code", params.format,
                                ElfMachineName(file_machine));
  }
  ElfMachine host;
  if (!ElfHostMachine(&host) || host != machine) {
    return UnavailableError("%s executables cannot run on this host", ElfMachineName(machine));
  }
  {
    // Full structural check without running anything: the dynamic linker is
    // not written to survive hostile files.
    ElfImageOptions options;
    options.machine = machine;
    options.executable = false;
    OSPREY_ASSIGN_OR_RETURN(auto image, ElfImage::Load(params.data, options, host_allocator),
                            "checking %s executable", params.format);
  }

  LoadedFile* file = nullptr;
  OSPREY_ASSIGN_OR_RETURN(file, host_allocator->New<LoadedFile>());
  file->allocator = host_allocator;
  file->handle = nullptr;
  file->path[0] = '\0';
  LibraryExecutableOptions library_options;
  library_options.imports = &imports;
  library_options.release = {&ReleaseLoadedFile, file};

  const char* dir = temp_dir_;
  if (!dir) dir = getenv("TMPDIR");
  if (!dir || !dir[0]) dir = "/tmp";
  const int len = snprintf(file->path, kMaxPath, "%s/osprey_executable_XXXXXX.so", dir);
  if (len < 0 || static_cast<size_t>(len) >= kMaxPath) {
    file->path[0] = '\0';
    ReleaseLoadedFile(file);
    return InvalidArgumentError("temporary directory path '%s' is too long", dir);
  }
  const int fd = mkstemps(file->path, 3);
  if (fd < 0) {
    Status status =
        InternalError("creating temporary file '%s' failed: %s", file->path, strerror(errno));
    file->path[0] = '\0';
    ReleaseLoadedFile(file);
    return status;
  }
  Status written = WriteAll(fd, params.data.data(), params.data.size());
  close(fd);
  if (!written.ok()) {
    ReleaseLoadedFile(file);
    return written;
  }
  file->handle = dlopen(file->path, RTLD_NOW | RTLD_LOCAL);
  if (!file->handle) {
    const char* error = dlerror();
    Status status =
        UnavailableError("dlopen of '%s' failed: %s", file->path, error ? error : "unknown error");
    ReleaseLoadedFile(file);
    return status;
  }
  auto query = reinterpret_cast<osprey_executable_library_query_fn_t>(
      dlsym(file->handle, OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME));
  if (!query) {
    ReleaseLoadedFile(file);
    return InvalidArgumentError("library '%s' exports no '%s'", file->path,
                                OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
  }
  // From here on the executable (or its failure path) runs the release.
  OSPREY_ASSIGN_OR_RETURN(
      ref_ptr<LibraryExecutable> executable,
      LibraryExecutable::CreateFromQuery(query, std::move(library_options), host_allocator));
  return ref_ptr<LocalExecutable>(std::move(executable));
}

Status CreateSystemLoader(osprey::Allocator* allocator, ExecutableLoader** out_loader) {
  *out_loader = nullptr;
  OSPREY_ASSIGN_OR_RETURN(SystemLoader * loader, allocator->New<SystemLoader>());
  *out_loader = loader;
  return OkStatus();
}

}  // namespace osprey::hal::local::loaders::system
