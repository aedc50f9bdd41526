// Host-side tensors for tools: a shape, an element type and the bytes, plus
// parsing of textual specs ("2x3xf32=1,2,3,4,5,6"), printing and comparison.
#ifndef OSPREY_TOOLS_COMMON_HOST_TENSOR_H_
#define OSPREY_TOOLS_COMMON_HOST_TENSOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hal/types.h"
#include "runtime/base/status.h"

namespace osprey::tools {

// A dense, row-major tensor in host memory. |data| holds exactly
// element_count() * ElementByteSize(element_type) bytes, little-endian.
struct HostTensor {
  hal::ElementType element_type = hal::ElementType::kNone;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t element_count() const;
  // "2x3xf32"; a scalar prints as "f32".
  std::string FormatShape() const;
};

// Parses "f32", "f16", "bf16", "f64", "i8".."i64", "u8".."u64", "i1"/"bool".
// INVALID_ARGUMENT naming the text if unknown.
StatusOr<hal::ElementType> ParseElementType(std::string_view text);
// The short name used in specs ("f32", "i1" for bool).
const char* ElementTypeSpelling(hal::ElementType type);

// IEEE half <-> float conversion (round to nearest even).
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

// Reads element |index| as a double (for printing and comparison).
double ElementAsDouble(const HostTensor& tensor, int64_t index);

// Parses "DIMSxTYPE=v0,v1,..." such as "2x3xf32=1,2,3,4,5,6", "f32=4"
// (scalar) or "4xi32" (zero-filled). One value may be given to fill every
// element. Values are checked for range (e.g. 300 in an i8 is rejected).
// INVALID_ARGUMENT with the offending part of |spec| on any error.
StatusOr<HostTensor> ParseTensorSpec(std::string_view spec);

// Prints "2x3xf32=[[1 2 3][4 5 6]]"; at most |max_elements| values are
// printed (the rest is elided with "...").
std::string FormatTensor(const HostTensor& tensor, int64_t max_elements = 1024);

// Compares |actual| with |expected|: same element type and shape, and every
// element close enough. Floating point: |a - e| <= tolerance * max(1, |e|)
// (NaN matches only NaN). Integers and bools: |a - e| <= floor(tolerance),
// so any tolerance below 1 means exact. Returns INVALID_ARGUMENT describing
// the first mismatches (index, expected, actual) and how many differ.
Status CompareTensors(const HostTensor& expected, const HostTensor& actual, double tolerance);

}  // namespace osprey::tools

#endif  // OSPREY_TOOLS_COMMON_HOST_TENSOR_H_
