// osprey-benchmark: times one function call of a module with Google
// Benchmark. Takes osprey-run's flags plus Google Benchmark's own
// (--benchmark_format=json, --benchmark_repetitions, --benchmark_min_time).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

#include "tools/common/flags.h"
#include "tools/common/module_runner.h"

namespace osprey::tools {
namespace {

constexpr char kUsage[] =
    "Usage: osprey-benchmark --module=model.osp [--device=cpu-sync] [--function=main]\n"
    "                        --input=@in.npy|--input=2x3xf32=1,2,3,4,5,6 ...\n"
    "                        [--task_workers=N] [--benchmark_* flags]\n"
    "Each iteration is one synchronous call (inputs already on the device, outputs\n"
    "released, not read back).";

void BenchmarkCall(benchmark::State& state, ModuleRunner* runner) {
  for (auto _ : state) {
    Status status = runner->Call();
    if (!status.ok()) {
      char text[2048];
      status.ToString(text, sizeof(text));
      state.SkipWithError(text);
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace
}  // namespace osprey::tools

int main(int argc, char** argv) {
  using namespace osprey::tools;
  RunOptions options;
  FlagParser parser(kUsage);
  options.AddFlags(parser);
  parser.set_allow_unknown(true);
  osprey::Status status = parser.Parse(&argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "osprey-benchmark: %s\n", status.message());
    return 1;
  }
  if (parser.help_requested()) {
    std::printf("%s\n\nGoogle Benchmark flags (--benchmark_*) are passed through.\n",
                parser.Usage().c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  auto runner = ModuleRunner::Create(options);
  if (!runner.ok()) {
    char text[4096];
    runner.status().ToString(text, sizeof(text));
    std::fprintf(stderr, "osprey-benchmark: %s\n", text);
    return 1;
  }
  // A first call outside the timing catches errors early and warms caches.
  status = (*runner)->Call();
  if (!status.ok()) {
    char text[4096];
    status.ToString(text, sizeof(text));
    std::fprintf(stderr, "osprey-benchmark: %s\n", text);
    return 1;
  }
  std::string name = std::string((*runner)->function().name()) + "/" + options.device;
  benchmark::RegisterBenchmark(name.c_str(), BenchmarkCall, runner->get())
      ->MeasureProcessCPUTime()
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
