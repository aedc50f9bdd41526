// Compiles graph text with the LLVM CPU backend and runs its dispatches on
// this machine for the backend's tests.
#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "compiler/targets/llvm_cpu/winograd_conv.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu::testing {

using dispatch::BufferKind;

absl::StatusOr<dispatch::DispatchProgram>
lowerGraphText(llvm::StringRef text, llvm::StringRef sourceName,
               const structured::FusionOptions &fusion) {
  auto graph = graph::parseGraph(text, sourceName);
  if (!graph.ok()) {
    return graph.status();
  }
  auto program = structured::lowering::lowerToStructured(**graph);
  if (!program.ok()) {
    return program.status();
  }
  if (absl::Status s = structured::fuseAndTile(*program, fusion); !s.ok()) {
    return s;
  }
  auto d = dispatch::formDispatchRegions(std::move(*program));
  if (!d.ok()) {
    return d.status();
  }
  if (absl::Status s = dispatch::planMemory(*d); !s.ok()) {
    return s;
  }
  return std::move(*d);
}

absl::Status CompiledGraph::compile(llvm::StringRef text,
                                    const CompileOptions &options) {
  auto target = resolveCpuTarget(options.target, options.cpu);
  if (!target.ok()) {
    return target.status();
  }
  // Fusion makes some of the code generator's decisions (Winograd
  // convolutions) for the target.
  auto d = lowerGraphText(text, options.name,
                          fusionOptionsFor(*target, options.fusion));
  if (!d.ok()) {
    return d.status();
  }
  program_ = std::move(*d);
  LibraryOptions libraryOptions;
  libraryOptions.name = options.name;
  libraryOptions.llvmIr = &ir_;
  libraryOptions.codegen = options.codegen;
  libraryOptions.codegen.winograd = options.fusion.winograd;
  auto bytes = buildExecutableLibrary(program_, *target, libraryOptions);
  if (!bytes.ok()) {
    return bytes.status();
  }
  library_ = std::move(*bytes);
  if (!options.load) {
    return absl::OkStatus();
  }
  hal::ExecutableParams params;
  params.format = target->elfFormat.c_str();
  params.data = library_;
  auto exe = loader_.Load(params, hal::local::ImportTable{},
                          osprey::Allocator::Default());
  if (!exe.ok()) {
    return absl::InternalError("loading failed: " + statusText(exe.status()));
  }
  executable_ = std::move(*exe);
  return absl::OkStatus();
}

absl::Status CompiledGraph::compile(llvm::StringRef text, const char *target) {
  CompileOptions options;
  options.target = target;
  return compile(text, options);
}

unsigned CompiledGraph::tensor(llvm::StringRef name) const {
  for (unsigned t = 0; t < program_.program.tensors.size(); ++t) {
    if (program_.program.tensors[t].name == name) {
      return t;
    }
  }
  ADD_FAILURE() << "no tensor " << name.str();
  return 0;
}

std::vector<std::vector<float>>
CompiledGraph::run(const std::vector<std::vector<float>> &inputs) {
  std::vector<std::vector<uint8_t>> bytes;
  for (const std::vector<float> &in : inputs) {
    const uint8_t *data = reinterpret_cast<const uint8_t *>(in.data());
    bytes.emplace_back(data, data + in.size() * sizeof(float));
  }
  std::vector<std::vector<float>> outputs;
  for (const std::vector<uint8_t> &out : runBytes(bytes)) {
    std::vector<float> values(out.size() / sizeof(float));
    std::memcpy(values.data(), out.data(), values.size() * sizeof(float));
    outputs.push_back(std::move(values));
  }
  return outputs;
}

std::vector<std::vector<uint8_t>>
CompiledGraph::runBytes(const std::vector<std::vector<uint8_t>> &inputs) {
  const structured::StructuredProgram &p = program_.program;
  EXPECT_EQ(inputs.size(), p.inputs.size()) << "one vector per graph input";
  // NaN-filled (0xFF bytes) arena and outputs: reads of unwritten memory
  // show up in float results. 64 spare bytes keep the base alignable.
  std::vector<uint8_t> arenaBytes(program_.arenaSize + 64, 0xFF);
  uint8_t *arena = arenaBytes.data();
  arena += (64 - reinterpret_cast<uintptr_t>(arena) % 64) % 64;
  std::map<unsigned, std::vector<uint8_t>> owned;
  for (unsigned i = 0; i < p.inputs.size() && i < inputs.size(); ++i) {
    owned[p.inputs[i]] = inputs[i];
  }
  for (const dispatch::Buffer &b : program_.buffers) {
    if (b.kind == BufferKind::Output) {
      owned[b.tensor].assign(b.byteSize, 0xFF);
    } else if (b.kind == BufferKind::Constant) {
      llvm::ArrayRef<uint8_t> bytes = p.tensors[b.tensor].constant->bytes();
      owned[b.tensor].assign(bytes.begin(), bytes.end());
    }
  }
  auto base = [&](unsigned tensor) -> void * {
    const dispatch::Buffer &b = program_.buffers[program_.storageOf(tensor)];
    if (b.kind == BufferKind::Transient) {
      return arena + b.offset;
    }
    return owned.at(b.tensor).data();
  };
  for (unsigned r = 0; r < program_.regions.size(); ++r) {
    const dispatch::DispatchRegion &region = program_.regions[r];
    std::vector<void *> ptrs;
    std::vector<size_t> lengths;
    for (const dispatch::Binding &b : region.bindings) {
      ptrs.push_back(base(b.tensor));
      lengths.push_back(
          program_.buffers[program_.storageOf(b.tensor)].byteSize);
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
    osprey_workgroup_state_v1_t wg = {};
    for (wg.workgroup_id_z = 0; wg.workgroup_id_z < state.workgroup_count_z;
         ++wg.workgroup_id_z) {
      for (wg.workgroup_id_y = 0; wg.workgroup_id_y < state.workgroup_count_y;
           ++wg.workgroup_id_y) {
        for (wg.workgroup_id_x = 0; wg.workgroup_id_x < state.workgroup_count_x;
             ++wg.workgroup_id_x) {
          EXPECT_EQ(executable_->CallWorkgroup(r, &state, &wg), 0)
              << "region " << region.name;
        }
      }
    }
  }
  std::vector<std::vector<uint8_t>> outputs;
  for (unsigned t : p.outputs) {
    outputs.push_back(owned.at(program_.storageOf(t)));
  }
  return outputs;
}

std::vector<float> randomData(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v) {
    x = dist(rng);
  }
  return v;
}

std::vector<float> randomData(size_t n, unsigned seed) {
  return randomData(n, -1, 1, seed);
}

std::string dims(std::initializer_list<int> d) {
  std::string s;
  for (int v : d) {
    if (!s.empty()) {
      s += 'x';
    }
    s += std::to_string(v);
  }
  return s;
}

std::string statusText(const osprey::Status &s) {
  char buf[512];
  s.ToString(buf, sizeof(buf));
  return buf;
}

} // namespace osprey::compiler::llvm_cpu::testing
