// Digest64 throughput over a module-sized buffer (ResNet-18's host module is
// about 62 MB), for the load-time integrity check.
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/base/digest.h"

namespace osprey {
namespace {

void BM_Digest64(benchmark::State& state) {
  std::vector<uint8_t> data(size_t(state.range(0)));
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 2654435761u >> 13);
  uint64_t digest = 0;
  for (auto _ : state) {
    digest ^= ComputeDigest64(data.data(), data.size());
    benchmark::DoNotOptimize(digest);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Digest64)->Arg(4096)->Arg(1 << 20)->Arg(62 << 20)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace osprey
