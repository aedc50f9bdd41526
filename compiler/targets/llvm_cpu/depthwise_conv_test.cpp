// Runs depthwise and grouped convolutions compiled through the padded-plane
// path (depthwise_conv.h) on AVX-512 (host, when the CPU has it), AVX2
// (x86_64) and scalar code (the embedded targets' code, forced on the host)
// against references computed here.
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "llvm/Support/CommandLine.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using dispatch::BufferKind;
using dispatch::DispatchProgram;

// Sets a hidden llvm::cl option of the code generator for one scope.
class ScopedOption {
public:
  ScopedOption(const char *name, unsigned value) {
    auto &options = llvm::cl::getRegisteredOptions();
    option_ = static_cast<llvm::cl::opt<unsigned> *>(options.lookup(name));
    EXPECT_NE(option_, nullptr) << name;
    if (option_) {
      option_->setValue(value);
    }
  }
  ~ScopedOption() {
    if (option_) {
      option_->setValue(0);
    }
  }

private:
  llvm::cl::opt<unsigned> *option_ = nullptr;
};

// A graph compiled for |target| and run dispatch by dispatch, transients at
// their planned arena offsets.
class Compiled {
public:
  absl::Status compile(const std::string &text, const char *target) {
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
    auto cpu = resolveCpuTarget(target);
    if (!cpu.ok()) {
      return cpu.status();
    }
    LibraryOptions options;
    options.name = "test";
    options.llvmIr = &ir_;
    auto bytes = buildExecutableLibrary(program_, *cpu, options);
    if (!bytes.ok()) {
      return bytes.status();
    }
    bytes_ = std::move(*bytes);
    hal::ExecutableParams params;
    params.format = cpu->elfFormat.c_str();
    params.data = bytes_;
    auto exe = loader_.Load(params, hal::local::ImportTable{},
                            osprey::Allocator::Default());
    if (!exe.ok()) {
      return absl::InternalError("loading the library failed");
    }
    executable_ = std::move(*exe);
    return absl::OkStatus();
  }

  const DispatchProgram &program() const { return program_; }
  // Optimized LLVM IR of the library.
  const std::string &ir() const { return ir_; }

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
  std::string ir_;
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

// A 2-D convolution (batch 1) with per-axis geometry; co channels in
// |group| groups.
struct Case {
  int ci, h, w, co, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
  int oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

Case depthwise(int c, int h, int w, int k, int stride, int pad) {
  return {c, h, w, c, k, k, stride, stride, 1, 1, pad, pad, pad, pad, c};
}

std::string dims(std::initializer_list<int> d) {
  std::string s;
  for (int v : d) {
    s += (s.empty() ? "" : "x") + std::to_string(v);
  }
  return s;
}

// Conv + bias, then |epilogue| ("relu": Relu; "residual": + a tensor of the
// output's shape; "row": + a [1, 1, 1, ow] tensor broadcast over rows).
std::string graphText(const Case &t, const std::string &epilogue) {
  std::string y = dims({1, t.co, t.oh(), t.ow()});
  std::string extra;
  if (epilogue == "residual") {
    extra = ", %r: tensor<" + y + "xf32>";
  } else if (epilogue == "row") {
    extra = ", %r: tensor<" + dims({1, 1, 1, t.ow()}) + "xf32>";
  }
  auto pair = [](int a, int b) {
    return std::to_string(a) + ", " + std::to_string(b);
  };
  std::string text =
      "graph @dw(%x: tensor<" + dims({1, t.ci, t.h, t.w}) +
      "xf32>, %w: tensor<" + dims({t.co, t.ci / t.group, t.kh, t.kw}) +
      "xf32>, %b: tensor<" + std::to_string(t.co) + "xf32>" + extra +
      ") {\n  %c = Conv(%x, %w, %b) {pads = [" + pair(t.pt, t.pl) + ", " +
      pair(t.pb, t.pr) + "], strides = [" + pair(t.sh, t.sw) +
      "], dilations = [" + pair(t.dh, t.dw) +
      "], group = " + std::to_string(t.group) + "} : tensor<" + y +
      "xf32> loc(\"conv\")\n";
  if (epilogue == "relu") {
    text += "  %y = Relu(%c) : tensor<" + y + "xf32>\n";
  } else {
    text += "  %y = Add(%c, %r) : tensor<" + y + "xf32>\n";
  }
  return text + "  return %y\n}";
}

std::vector<float> reference(const Case &t, const std::string &epilogue,
                             const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b,
                             const std::vector<float> &r) {
  int cig = t.ci / t.group, cog = t.co / t.group;
  std::vector<float> y(size_t(t.co) * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    int g = m / cog;
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m];
        for (int c = 0; c < cig; ++c) {
          for (int kh = 0; kh < t.kh; ++kh) {
            for (int kw = 0; kw < t.kw; ++kw) {
              int ih = oh * t.sh + kh * t.dh - t.pt;
              int iw = ow * t.sw + kw * t.dw - t.pl;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              acc += double(x[(size_t(g * cig + c) * t.h + ih) * t.w + iw]) *
                     w[((size_t(m) * cig + c) * t.kh + kh) * t.kw + kw];
            }
          }
        }
        size_t at = (size_t(m) * t.oh() + oh) * t.ow() + ow;
        if (epilogue == "relu") {
          y[at] = float(std::max(acc, 0.0));
        } else if (epilogue == "residual") {
          y[at] = float(acc + r[at]);
        } else {
          y[at] = float(acc + r[ow]);
        }
      }
    }
  }
  return y;
}

// Compiles |t| for |target|, checks that the depthwise path generated the
// dispatch (its scratch plane is in the IR) and compares with the reference.
void check(const Case &t, const char *target,
           const std::string &epilogue = "relu") {
  SCOPED_TRACE(graphText(t, epilogue) + "\ntarget " + target);
  Compiled c;
  absl::Status s = c.compile(graphText(t, epilogue), target);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "the epilogue is fused";
  EXPECT_NE(c.ir().find("dw_plane"), std::string::npos)
      << "the padded-plane path generated the convolution";
  auto x = randomData(size_t(t.ci) * t.h * t.w, 1);
  auto w = randomData(size_t(t.co) * (t.ci / t.group) * t.kh * t.kw, 2);
  auto b = randomData(t.co, 3);
  std::vector<float> r;
  std::vector<std::vector<float>> inputs = {x, w, b};
  if (epilogue == "residual") {
    r = randomData(size_t(t.co) * t.oh() * t.ow(), 4);
    inputs.push_back(r);
  } else if (epilogue == "row") {
    r = randomData(t.ow(), 4);
    inputs.push_back(r);
  }
  std::vector<float> got = c.run(inputs)[0];
  std::vector<float> want = reference(t, epilogue, x, w, b, r);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

// The shapes of MobileNetV2, EfficientNet-B0 and DS-CNN at reduced channel
// counts, plus odd ones: maps of 7 to 40, 3x3 and 5x5 windows, strides 1 and
// 2, channel counts that are no multiple of a vector, non-square maps.
const Case kShapes[] = {
    depthwise(20, 7, 7, 3, 1, 1),  // 7x7, flattened rows, batched planes
    depthwise(13, 7, 7, 5, 1, 2),  // 5x5 window on a 7x7 map
    depthwise(9, 14, 14, 3, 1, 1), // 14x14
    depthwise(7, 14, 14, 5, 2, 2), // 14 -> 7, stride 2, 5x5
    depthwise(5, 15, 15, 3, 2, 1), // odd map with stride 2
    depthwise(3, 40, 40, 3, 2, 1), // wide rows, stride 2
    depthwise(3, 37, 37, 5, 1, 2), // wide odd rows, 5x5
    {6, 25, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},  // DS-CNN's 25x5 map
    {4, 10, 19, 4, 3, 5, 2, 1, 1, 1, 1, 2, 0, 2, 4}, // asymmetric everything
};

TEST(DepthwiseConvTest, HostMatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "host");
  }
}

TEST(DepthwiseConvTest, Avx2MatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "x86_64");
  }
}

// The embedded targets' scalar code (several outputs per iteration), run on
// the host.
TEST(DepthwiseConvTest, ScalarMatchesReference) {
  ScopedOption width("osprey-depthwise-vector-width", 1);
  for (const Case &t : kShapes) {
    check(t, "host");
  }
}

// A small scratch budget splits planes into blocks of rows (the last one
// partial), re-reading the rows the window needs across block borders.
TEST(DepthwiseConvTest, RowBlocksMatchReference) {
  ScopedOption scratch("osprey-depthwise-max-scratch", 2048);
  check(depthwise(3, 33, 33, 3, 1, 1), "host");
  check(depthwise(3, 33, 33, 5, 2, 2), "x86_64");
  ScopedOption width("osprey-depthwise-vector-width", 1);
  check(depthwise(3, 33, 33, 3, 2, 1), "host");
}

// Dilation, no padding, a channel multiplier of 2 (two outputs per input
// plane) and groups of two input channels (planes summed into one output).
TEST(DepthwiseConvTest, GroupedAndDilatedMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check({3, 21, 21, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3}, target);
    check({4, 18, 18, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 4}, target);
    check({4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4}, target);
    check({8, 12, 12, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4}, target);
  }
}

// Epilogues reading other tensors: a residual of the output's layout runs
// over flattened positions; a tensor broadcast along rows keeps the
// row-by-row epilogue.
TEST(DepthwiseConvTest, EpiloguesMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check(depthwise(6, 7, 7, 3, 1, 1), target, "residual");
    check(depthwise(4, 14, 14, 3, 2, 1), target, "residual");
    check(depthwise(6, 7, 7, 3, 1, 1), target, "row");
    check(depthwise(3, 30, 30, 3, 1, 1), target, "row");
  }
  ScopedOption width("osprey-depthwise-vector-width", 1);
  check(depthwise(5, 7, 7, 3, 1, 1), "host", "residual");
  check(depthwise(5, 7, 7, 3, 1, 1), "host", "row");
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
