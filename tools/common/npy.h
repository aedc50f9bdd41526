// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Supported dtypes: f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8 and b1, little- or
// big-endian (big-endian data is byte-swapped on read). Fortran-order arrays
// are transposed to row-major on read. Everything read is validated: a bad
// magic, truncated header, malformed header dictionary, unknown dtype or a
// data size that does not match the shape is INVALID_ARGUMENT (DATA_LOSS for
// truncated data) with a message saying what is wrong.
#ifndef OSPREY_TOOLS_COMMON_NPY_H_
#define OSPREY_TOOLS_COMMON_NPY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "tools/common/file_io.h"
#include "tools/common/host_tensor.h"

namespace osprey::tools {

// Parses the contents of a .npy file.
StatusOr<HostTensor> ParseNpy(std::span<const uint8_t> bytes);
// Reads and parses |path|; errors name the file. NOT_FOUND if it cannot be
// opened.
StatusOr<HostTensor> ReadNpyFile(const std::string& path);

// Serializes |tensor| as a version 1.0 .npy file (C order, little-endian).
// bf16 has no NumPy dtype and is INVALID_ARGUMENT.
StatusOr<std::vector<uint8_t>> SerializeNpy(const HostTensor& tensor);
// Writes |tensor| to |path|.
Status WriteNpyFile(const std::string& path, const HostTensor& tensor);

// Parses an input argument: "@file.npy" reads the file, anything else is a
// tensor spec (see ParseTensorSpec).
StatusOr<HostTensor> ParseInputArgument(const std::string& argument);

}  // namespace osprey::tools

#endif  // OSPREY_TOOLS_COMMON_NPY_H_
