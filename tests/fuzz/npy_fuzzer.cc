// libFuzzer target: the .npy reader. Anything parsed must serialize again.
#include <cstddef>
#include <cstdint>

#include "tools/common/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensor = osprey::tools::ParseNpy(std::span<const uint8_t>(data, size));
  if (!tensor.ok()) return 0;
  auto bytes = osprey::tools::SerializeNpy(*tensor);
  if (bytes.ok()) {
    auto again = osprey::tools::ParseNpy(*bytes);
    if (!again.ok() || again->data != tensor->data) __builtin_trap();  // Round trip.
  }
  return 0;
}
