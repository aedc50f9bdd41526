// Reading test vectors (see test_vectors.h).
#include "samples/common/test_vectors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace osprey::samples {

namespace {

constexpr size_t kHeaderSize = 32;
constexpr uint32_t kMaxCount = 1u << 22;

bool ReadExactly(int fd, void* out, size_t size) {
  auto* bytes = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, bytes + done, size - done);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

TestVectors::~TestVectors() {
  if (storage) allocator->Free(storage);
}

Status ReadTestVectors(const char* path, Allocator* allocator, TestVectors* out) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NotFoundError("cannot open test vectors '%s'", path);
  uint8_t header[kHeaderSize];
  Status status;
  uint32_t version = 0, rank = 0, input_count = 0, expected_count = 0;
  if (!ReadExactly(fd, header, sizeof(header)) || memcmp(header, "OSPV", 4) != 0) {
    status = DataLossError("'%s' is not a test vector file", path);
  } else {
    memcpy(&version, header + 4, 4);
    memcpy(&rank, header + 8, 4);
    memcpy(&input_count, header + 12, 4);
    memcpy(&expected_count, header + 16, 4);
    memcpy(&out->atol, header + 20, 4);
    memcpy(&out->rtol, header + 24, 4);
    if (version != 1 || rank == 0 || rank > 8 || input_count == 0 || input_count > kMaxCount ||
        expected_count == 0 || expected_count > kMaxCount) {
      status = DataLossError(
          "test vectors '%s': bad header (version %u, rank %u, %u inputs, "
          "%u outputs)",
          path, unsigned(version), unsigned(rank), unsigned(input_count), unsigned(expected_count));
    }
  }
  if (status.ok() && !ReadExactly(fd, out->shape, rank * sizeof(int64_t))) {
    status = DataLossError("test vectors '%s' end inside the shape", path);
  }
  if (status.ok()) {
    out->rank = rank;
    int64_t elements = 1;
    for (uint32_t i = 0; i < rank; ++i) {
      if (out->shape[i] < 0 || out->shape[i] > int64_t(kMaxCount)) elements = -1;
      if (elements >= 0) elements *= out->shape[i];
      if (elements > int64_t(kMaxCount)) elements = -1;
    }
    if (elements != int64_t(input_count)) {
      status = InvalidArgumentError(
          "test vectors '%s': input shape holds %lld elements, the "
          "file %u",
          path, (long long)elements, unsigned(input_count));
    }
  }
  if (status.ok()) {
    const size_t bytes = (size_t(input_count) + expected_count) * sizeof(float);
    status = allocator->Allocate(bytes, alignof(float), &out->storage);
    if (status.ok()) {
      out->allocator = allocator;
      if (!ReadExactly(fd, out->storage, bytes)) {
        status = DataLossError("test vectors '%s' end inside the data", path);
      }
    }
  }
  close(fd);
  OSPREY_RETURN_IF_ERROR(std::move(status));
  out->input = static_cast<const float*>(out->storage);
  out->input_count = input_count;
  out->expected = out->input + input_count;
  out->expected_count = expected_count;
  return OkStatus();
}

}  // namespace osprey::samples
