// A model's input, reference output and tolerance for the samples that
// receive models at run time (samples/rtos_loader, the bare-metal model
// runner), read from a file scripts/qemu/make_model_data.py --vectors
// writes (little-endian):
//
//   offset 0   "OSPV"
//   offset 4   u32 version (1)
//   offset 8   u32 input rank (1..8)
//   offset 12  u32 input element count
//   offset 16  u32 reference element count
//   offset 20  f32 atol, offset 24 f32 rtol, offset 28 u32 0
//   offset 32  i64 input dims[rank], then f32 input[], f32 reference[]
#ifndef OSPREY_SAMPLES_COMMON_TEST_VECTORS_H_
#define OSPREY_SAMPLES_COMMON_TEST_VECTORS_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey::samples {

struct TestVectors {
  TestVectors() = default;
  ~TestVectors();
  TestVectors(const TestVectors&) = delete;
  TestVectors& operator=(const TestVectors&) = delete;

  int64_t shape[8] = {};
  size_t rank = 0;
  const float* input = nullptr;
  size_t input_count = 0;
  const float* expected = nullptr;
  size_t expected_count = 0;
  float atol = 0;
  float rtol = 0;

  Allocator* allocator = nullptr;
  void* storage = nullptr;  // Both arrays, one allocation.
};

// Reads |path|. NOT_FOUND if it cannot be opened, DATA_LOSS if it is
// malformed or short, INVALID_ARGUMENT if the shape and count disagree.
Status ReadTestVectors(const char* path, Allocator* allocator, TestVectors* out);

}  // namespace osprey::samples

#endif  // OSPREY_SAMPLES_COMMON_TEST_VECTORS_H_
