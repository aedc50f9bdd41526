// Convolutions over single pixel tiles (7x7, 14x14 maps) with constant
// weights: the weights get a transposed compile-time copy and the packed
// path vectorizes along output channels. Runs the compiled libraries on
// this machine (host AVX-512 and x86_64 AVX2 code) against references
// computed here.
#include <cmath>
#include <map>
#include <random>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "gtest/gtest.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "llvm/Support/CommandLine.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using dispatch::BufferKind;

struct ConvCase {
  int ci, h, co, k, stride, pad;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
};

std::vector<float> randomData(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v) {
    x = dist(rng);
  }
  return v;
}

std::string denseText(const std::vector<float> &v) {
  std::string s = "dense<[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]>";
}

// Conv(x, constant w, constant b) + Relu as graph IR text.
std::string convGraph(const ConvCase &t, const std::vector<float> &w,
                      const std::vector<float> &b) {
  auto s = [](int v) { return std::to_string(v); };
  std::string y = "1x" + s(t.co) + "x" + s(t.oh()) + "x" + s(t.oh());
  std::string p = s(t.pad);
  return "graph @conv(%x: tensor<1x" + s(t.ci) + "x" + s(t.h) + "x" + s(t.h) +
         "xf32>) {\n  %w = Constant() {value = " + denseText(w) +
         "} : tensor<" + s(t.co) + "x" + s(t.ci) + "x" + s(t.k) + "x" +
         s(t.k) + "xf32>\n  %b = Constant() {value = " + denseText(b) +
         "} : tensor<" + s(t.co) + "xf32>\n  %c = Conv(%x, %w, %b) {pads = [" +
         p + ", " + p + ", " + p + ", " + p + "], strides = [" + s(t.stride) +
         ", " + s(t.stride) + "]} : tensor<" + y +
         "xf32> loc(\"conv\")\n  %y = Relu(%c) : tensor<" + y +
         "xf32>\n  return %y\n}";
}

// The convolution + Relu in double precision; |magnitude| receives, per
// output, the sum of the magnitudes of its terms (the scale of the f32
// rounding error).
std::vector<float> reference(const ConvCase &t, const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b,
                             std::vector<double> &magnitude) {
  int o = t.oh();
  std::vector<float> y(t.co * o * o);
  magnitude.assign(y.size(), 0);
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < o; ++oh) {
      for (int ow = 0; ow < o; ++ow) {
        double acc = b[m], mag = std::fabs(b[m]);
        for (int c = 0; c < t.ci; ++c) {
          for (int kh = 0; kh < t.k; ++kh) {
            for (int kw = 0; kw < t.k; ++kw) {
              int ih = oh * t.stride + kh - t.pad;
              int iw = ow * t.stride + kw - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.h) {
                continue;
              }
              double term = double(x[(c * t.h + ih) * t.h + iw]) *
                            w[((m * t.ci + c) * t.k + kh) * t.k + kw];
              acc += term;
              mag += std::fabs(term);
            }
          }
        }
        y[(m * o + oh) * o + ow] = float(std::max(acc, 0.0));
        magnitude[(m * o + oh) * o + ow] = mag;
      }
    }
  }
  return y;
}

// Compiles |t| for |target|, checks that the weights were transposed and
// which kernel is called (the transposed one unless |columnPanels| is off),
// runs every workgroup and compares with the reference.
void checkConv(const ConvCase &t, const char *target,
               bool columnPanels = true) {
  SCOPED_TRACE(std::string(target) + " ci " + std::to_string(t.ci) + " h " +
               std::to_string(t.h) + " co " + std::to_string(t.co) + " k " +
               std::to_string(t.k) + " stride " + std::to_string(t.stride));
  auto x = randomData(t.ci * t.h * t.h, 1);
  auto w = randomData(t.co * t.ci * t.k * t.k, 2);
  auto b = randomData(t.co, 3);
  auto graph = graph::parseGraph(convGraph(t, w, b), "test");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto program = structured::lowerToStructured(**graph);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_TRUE(structured::fuseAndTile(*program).ok());
  auto d = dispatch::formDispatchRegions(std::move(*program));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(dispatch::planMemory(*d).ok());
  ASSERT_EQ(d->regions.size(), 1u) << "bias and relu are fused";
  bool transposed = false;
  for (const auto &info : d->program.tensors) {
    transposed |= llvm::StringRef(info.name).ends_with("_kxm");
  }
  EXPECT_TRUE(transposed) << "the weights have a transposed copy";
  auto cpu = resolveCpuTarget(target);
  ASSERT_TRUE(cpu.ok());
  // Linking resets LLVM's options to their defaults, so set it every time.
  auto *panels = static_cast<llvm::cl::opt<bool> *>(
      llvm::cl::getRegisteredOptions().lookup("osprey-gemm-column-panels"));
  ASSERT_NE(panels, nullptr);
  panels->setValue(columnPanels);
  std::string ir;
  LibraryOptions options;
  options.name = "test";
  options.llvmIr = &ir;
  auto bytes = buildExecutableLibrary(*d, *cpu, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(ir.find("call fastcc void @osprey_gemmt_") != std::string::npos,
            columnPanels)
      << "the transposed kernel runs";
  EXPECT_EQ(ir.find("call fastcc void @osprey_gemm_") != std::string::npos,
            !columnPanels)
      << "the kernel along pixels runs";
  hal::local::loaders::elf::ElfLoader loader;
  hal::ExecutableParams params;
  params.format = cpu->elfFormat.c_str();
  params.data = *bytes;
  auto exe = loader.Load(params, hal::local::ImportTable{},
                         osprey::Allocator::Default());
  ASSERT_TRUE(exe.ok());

  const auto &p = d->program;
  std::map<unsigned, std::vector<float>> storage;
  storage[p.inputs[0]] = x;
  for (const dispatch::Buffer &buf : d->buffers) {
    if (buf.kind == BufferKind::Output) {
      storage[buf.tensor].assign(buf.byteSize / 4, NAN);
    } else if (buf.kind == BufferKind::Constant) {
      llvm::ArrayRef<uint8_t> raw = p.tensors[buf.tensor].constant->bytes();
      std::vector<float> v(raw.size() / 4);
      memcpy(v.data(), raw.data(), raw.size());
      storage[buf.tensor] = v;
    }
  }
  const dispatch::DispatchRegion &region = d->regions[0];
  std::vector<void *> ptrs;
  std::vector<size_t> lengths;
  for (const dispatch::Binding &binding : region.bindings) {
    unsigned s = d->storageOf(binding.tensor);
    ASSERT_TRUE(storage.count(s)) << "no transients in one region";
    ptrs.push_back(storage[s].data());
    lengths.push_back(d->buffers[s].byteSize);
  }
  osprey_dispatch_state_v1_t state = {};
  state.workgroup_size_x = state.workgroup_size_y = state.workgroup_size_z = 1;
  state.workgroup_count_x = region.workgroupCount[0];
  state.workgroup_count_y = region.workgroupCount[1];
  state.workgroup_count_z = region.workgroupCount[2];
  state.max_concurrency = 1;
  state.binding_count = ptrs.size();
  state.binding_ptrs = ptrs.data();
  state.binding_lengths = lengths.data();
  for (uint32_t z = 0; z < state.workgroup_count_z; ++z) {
    for (uint32_t yy = 0; yy < state.workgroup_count_y; ++yy) {
      for (uint32_t xx = 0; xx < state.workgroup_count_x; ++xx) {
        osprey_workgroup_state_v1_t wg = {};
        wg.workgroup_id_x = xx;
        wg.workgroup_id_y = yy;
        wg.workgroup_id_z = z;
        ASSERT_EQ((*exe)->CallWorkgroup(0, &state, &wg), 0);
      }
    }
  }
  std::vector<float> got = storage.at(d->storageOf(p.outputs[0]));
  std::vector<double> magnitude;
  std::vector<float> want = reference(t, x, w, b, magnitude);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + magnitude[i]))
        << "element " << i;
  }
}

// At least 128 reduction steps each (fewer keep the kernel along pixels).
const ConvCase kCases[] = {
    // 3x3, padding 1, 7x7 map: 49 pixels in 7 blocks of 7; 48 channels (a
    // last panel of 16: the one-vector kernel).
    {40, 7, 48, 3, 1, 1},
    // Pointwise (B read in place, no panel); 40 channels: a last panel of 8.
    {160, 7, 40, 1, 1, 0},
    // Stride 2 onto a 7x7 map; reduction of 36 * 9 = 324 > one chunk.
    {36, 14, 64, 3, 2, 1},
    // 5x5 window with padding 2 on a 6x6 map (36 pixels); 20 channels.
    {6, 6, 20, 5, 1, 2},
    // 544 channels: M tiles of 272 (the second starts mid-panel).
    {16, 7, 544, 3, 1, 1},
    // 5x5 map (25 pixels), pointwise, channels not a multiple of 16.
    {130, 5, 33, 1, 1, 0},
    // 14x14 maps (196 pixels, 28 blocks of 7): 3x3 and pointwise.
    {16, 14, 48, 3, 1, 1},
    {130, 14, 40, 1, 1, 0},
};

TEST(GemmTransposedTest, Avx512MatchesReference) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "host");
  }
  // Weights over 1 MiB: rows padded to an odd number of 16-float groups.
  checkConv({64, 7, 512, 3, 1, 1}, "host");
}

TEST(GemmTransposedTest, Avx2MatchesReference) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "x86_64");
  }
}

// Scalar targets keep the kernel along pixels and read the transposed
// weights with unit row stride; the same code on vectors here.
TEST(GemmTransposedTest, TransposedWeightsAlongPixels) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "host", /*columnPanels=*/false);
  }
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
