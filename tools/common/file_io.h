// Whole-file reads and writes for the host tools, with errors (never
// exceptions) that say what is wrong with the path.
#ifndef OSPREY_TOOLS_COMMON_FILE_IO_H_
#define OSPREY_TOOLS_COMMON_FILE_IO_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace osprey::tools {

// Streams (pipes, FIFOs) are read up to this many bytes.
inline constexpr size_t kMaxStreamBytes = size_t(1) << 30;

// Reads the whole file at |path|. NOT_FOUND if it cannot be opened (with the
// system's reason); INVALID_ARGUMENT for a directory or a device (anything
// but a regular file or a pipe) and for a pipe delivering more than
// kMaxStreamBytes; DATA_LOSS if reading fails part-way.
StatusOr<std::vector<uint8_t>> ReadFileBytes(const std::string& path);

// Creates or truncates |path| and writes |bytes|. NOT_FOUND if it cannot be
// created (with the system's reason; a directory is INVALID_ARGUMENT);
// DATA_LOSS if writing fails.
Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace osprey::tools

#endif  // OSPREY_TOOLS_COMMON_FILE_IO_H_
