// Stride-2 convolutions on the packed matrix-product path: the interior of
// each packed row is read with contiguous double-width loads and a shuffle
// keeping the even elements (packed_gemm.cpp, packStride2Interior). Covers
// row interiors shorter than, equal to and longer than a vector, 1x1, 3x3
// and 7x7 windows, with AVX-512 (host) and AVX2 (x86_64) vector widths.
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using dispatch::BufferKind;
using dispatch::DispatchProgram;

std::string statusText(const osprey::Status &s) {
  char buf[512];
  s.ToString(buf, sizeof(buf));
  return buf;
}

// A compiled graph plus an executor that runs its dispatches in order with
// transients placed in one arena at their planned offsets.
class Compiled {
public:
  absl::Status compile(llvm::StringRef text, const char *targetName) {
    auto graph = graph::parseGraph(text, "test");
    if (!graph.ok()) {
      return graph.status();
    }
    auto program = structured::lowerToStructured(**graph);
    if (!program.ok()) {
      return program.status();
    }
    if (absl::Status s = structured::fuseAndTile(*program); !s.ok()) {
      return s;
    }
    auto d = dispatch::formDispatchRegions(std::move(*program));
    if (!d.ok()) {
      return d.status();
    }
    program_ = std::move(*d);
    if (absl::Status s = dispatch::planMemory(program_); !s.ok()) {
      return s;
    }
    auto target = resolveCpuTarget(targetName);
    if (!target.ok()) {
      return target.status();
    }
    auto bytes = buildExecutableLibrary(program_, *target, {"test"});
    if (!bytes.ok()) {
      return bytes.status();
    }
    bytes_ = std::move(*bytes);
    hal::ExecutableParams params;
    params.format = target->elfFormat.c_str();
    params.data = bytes_;
    auto exe = loader_.Load(params, hal::local::ImportTable{},
                            osprey::Allocator::Default());
    if (!exe.ok()) {
      return absl::InternalError("loading failed: " + statusText(exe.status()));
    }
    executable_ = std::move(*exe);
    return absl::OkStatus();
  }

  const DispatchProgram &program() const { return program_; }
  const hal::local::LocalExecutable &executable() const { return *executable_; }

  unsigned tensor(llvm::StringRef name) const {
    for (unsigned t = 0; t < program_.program.tensors.size(); ++t) {
      if (program_.program.tensors[t].name == name) {
        return t;
      }
    }
    ADD_FAILURE() << "no tensor " << name.str();
    return 0;
  }

  // Runs all dispatches; |inputs| in graph input order. Returns outputs.
  std::vector<std::vector<float>>
  run(const std::vector<std::vector<float>> &inputs) {
    const auto &p = program_.program;
    std::vector<float> arena(program_.arenaSize / 4 + 1);
    std::map<unsigned, std::vector<float>> storage;
    for (unsigned i = 0; i < p.inputs.size(); ++i) {
      storage[p.inputs[i]] = inputs[i];
    }
    for (const dispatch::Buffer &b : program_.buffers) {
      if (b.kind == BufferKind::Output) {
        storage[b.tensor].assign(b.byteSize / 4, NAN);
      } else if (b.kind == BufferKind::Constant) {
        llvm::ArrayRef<uint8_t> raw = p.tensors[b.tensor].constant->bytes();
        std::vector<float> v(raw.size() / 4);
        memcpy(v.data(), raw.data(), raw.size());
        storage[b.tensor] = v;
      }
    }
    auto pointer = [&](unsigned t) -> float * {
      const dispatch::Buffer &b = program_.buffers[program_.storageOf(t)];
      if (b.kind == BufferKind::Transient) {
        return arena.data() + b.offset / 4;
      }
      return storage.at(b.tensor).data();
    };
    for (unsigned r = 0; r < program_.regions.size(); ++r) {
      const dispatch::DispatchRegion &region = program_.regions[r];
      std::vector<void *> ptrs;
      std::vector<size_t> lengths;
      for (const dispatch::Binding &b : region.bindings) {
        ptrs.push_back(pointer(b.tensor));
        lengths.push_back(program_.buffers[b.tensor].byteSize);
      }
      osprey_dispatch_state_v1_t state = {};
      state.workgroup_size_x = state.workgroup_size_y = state.workgroup_size_z =
          1;
      state.workgroup_count_x = region.workgroupCount[0];
      state.workgroup_count_y = region.workgroupCount[1];
      state.workgroup_count_z = region.workgroupCount[2];
      state.max_concurrency = 1;
      state.binding_count = ptrs.size();
      state.binding_ptrs = ptrs.data();
      state.binding_lengths = lengths.data();
      for (uint32_t z = 0; z < state.workgroup_count_z; ++z) {
        for (uint32_t y = 0; y < state.workgroup_count_y; ++y) {
          for (uint32_t x = 0; x < state.workgroup_count_x; ++x) {
            osprey_workgroup_state_v1_t wg = {};
            wg.workgroup_id_x = x;
            wg.workgroup_id_y = y;
            wg.workgroup_id_z = z;
            EXPECT_EQ(executable_->CallWorkgroup(r, &state, &wg), 0);
          }
        }
      }
    }
    std::vector<std::vector<float>> outputs;
    for (unsigned t : p.outputs) {
      outputs.push_back(storage.at(program_.storageOf(t)));
    }
    return outputs;
  }

private:
  DispatchProgram program_;
  std::vector<uint8_t> bytes_;
  hal::local::loaders::elf::ElfLoader loader_;
  ref_ptr<hal::local::LocalExecutable> executable_;
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

// A batch-1 square-kernel convolution plus ReLU with equal padding.
struct Case {
  int ci, h, w, co, k, stride, pad;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
  int ow() const { return (w + 2 * pad - k) / stride + 1; }
};

std::string graphOf(const Case &t) {
  auto s = [](int v) { return std::to_string(v); };
  std::string y = "1x" + s(t.co) + "x" + s(t.oh()) + "x" + s(t.ow());
  std::string p = s(t.pad);
  return "graph @conv(%x: tensor<1x" + s(t.ci) + "x" + s(t.h) + "x" + s(t.w) +
         "xf32>, %w: tensor<" + s(t.co) + "x" + s(t.ci) + "x" + s(t.k) + "x" +
         s(t.k) + "xf32>, %b: tensor<" + s(t.co) +
         "xf32>) {\n  %c = Conv(%x, %w, %b) {pads = [" + p + ", " + p + ", " +
         p + ", " + p + "], strides = [" + s(t.stride) + ", " + s(t.stride) +
         "]} : tensor<" + y + "xf32> loc(\"conv\")\n  %y = Relu(%c) : tensor<" +
         y + "xf32>\n  return %y\n}";
}

std::vector<float> reference(const Case &t, const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b) {
  std::vector<float> y(t.co * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m];
        for (int c = 0; c < t.ci; ++c) {
          for (int kh = 0; kh < t.k; ++kh) {
            for (int kw = 0; kw < t.k; ++kw) {
              int ih = oh * t.stride + kh - t.pad;
              int iw = ow * t.stride + kw - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              acc += double(x[(c * t.h + ih) * t.w + iw]) *
                     w[((m * t.ci + c) * t.k + kh) * t.k + kw];
            }
          }
        }
        y[(m * t.oh() + oh) * t.ow() + ow] = float(std::max(acc, 0.0));
      }
    }
  }
  return y;
}

void check(const Case &t, const char *target) {
  SCOPED_TRACE(graphOf(t) + " on " + target);
  Compiled c;
  absl::Status s = c.compile(graphOf(t), target);
  ASSERT_TRUE(s.ok()) << s.message();
  auto x = randomData(t.ci * t.h * t.w, 1);
  auto w = randomData(t.co * t.ci * t.k * t.k, 2);
  auto b = randomData(t.co, 3);
  std::vector<float> got = c.run({x, w, b})[0];
  std::vector<float> want = reference(t, x, w, b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

const Case kCases[] = {
    // Downsample-like 1x1 without padding: the whole row is interior; 15
    // outputs (one element short of a 16-lane vector plus one) and 29.
    {16, 30, 30, 24, 1, 2, 0},
    {8, 57, 57, 16, 1, 2, 0},
    // 3x3 padding 1: 17 outputs (one 16-lane vector at most), and an odd
    // input width whose last window reads the last input column.
    {4, 34, 34, 8, 3, 2, 1},
    {5, 35, 35, 6, 3, 2, 1},
    // The 7x7 padding-3 stem shape with 3 channels.
    {3, 70, 70, 16, 7, 2, 3},
};

TEST(PackedGemmStride2Test, MatchesReferenceOnHost) {
  for (const Case &t : kCases) {
    check(t, "host");
  }
}

TEST(PackedGemmStride2Test, MatchesReferenceWithAvx2) {
  for (const Case &t : kCases) {
    check(t, "x86_64");
  }
}

// The packing of a stride-2 row reads pairs of vectors and keeps the even
// lanes instead of gathering: for AVX2 (8 lanes) a <16 x float> shuffle.
TEST(PackedGemmStride2Test, Avx2PackingUsesEvenLaneShuffles) {
  auto graph = graph::parseGraph(graphOf({3, 66, 66, 8, 3, 2, 1}), "test");
  ASSERT_TRUE(graph.ok());
  auto program = structured::lowerToStructured(**graph);
  ASSERT_TRUE(program.ok());
  ASSERT_TRUE(structured::fuseAndTile(*program).ok());
  auto d = dispatch::formDispatchRegions(std::move(*program));
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(dispatch::planMemory(*d).ok());
  auto target = resolveCpuTarget("x86_64");
  ASSERT_TRUE(target.ok());
  std::string ir;
  LibraryOptions options;
  options.name = "test";
  options.llvmIr = &ir;
  ASSERT_TRUE(buildExecutableLibrary(*d, *target, options).ok());
  EXPECT_NE(ir.find("shufflevector <16 x float>"), std::string::npos)
      << "no even-lane shuffle in the x86_64 library";
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
