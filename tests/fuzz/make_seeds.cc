// Writes the seed corpora of the fuzz targets from the project's own test
// inputs: VM assembly tests assembled into modules, .npy files of every
// dtype the reader knows, and npu-v1 blobs. (ELF libraries and ONNX models
// come straight from tests/executables and the compiler's test models.)
//
//   make_seeds --out=DIR file.vmasm...
#include <cstdio>
#include <string>
#include <vector>

#include "drivers/npu/builder/stream_builder.h"
#include "tools/common/file_io.h"
#include "tools/common/flags.h"
#include "tools/common/npy.h"
#include "vm/asm/assembler.h"

namespace osprey::fuzz {
namespace {

Status Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  return tools::WriteFileBytes(path, bytes);
}

Status WriteModules(const std::string& dir, const std::vector<std::string>& sources) {
  for (const std::string& source : sources) {
    OSPREY_ASSIGN_OR_RETURN(auto text, tools::ReadFileBytes(source));
    OSPREY_ASSIGN_OR_RETURN(auto module,
                            vm::AssembleModule(std::string(text.begin(), text.end())),
                            "assembling '%s'", source.c_str());
    std::string name = source.substr(source.find_last_of('/') + 1);
    OSPREY_RETURN_IF_ERROR(Write(dir + "/" + name + ".osp", module));
    // The same module with large segments stored after the FlatBuffer.
    vm::BuildOptions external;
    external.external_threshold = 8;
    OSPREY_ASSIGN_OR_RETURN(module, vm::AssembleModule(std::string(text.begin(), text.end()),
                                                       external));
    OSPREY_RETURN_IF_ERROR(Write(dir + "/" + name + ".external.osp", module));
  }
  return OkStatus();
}

Status WriteNpys(const std::string& dir) {
  struct Spec {
    const char* name;
    hal::ElementType type;
    std::vector<int64_t> shape;
  };
  const Spec specs[] = {
      {"f32_2x3", hal::ElementType::kFloat32, {2, 3}},
      {"f16_4", hal::ElementType::kFloat16, {4}},
      {"f64_scalar", hal::ElementType::kFloat64, {}},
      {"i8_1x2x2", hal::ElementType::kInt8, {1, 2, 2}},
      {"i64_3", hal::ElementType::kInt64, {3}},
      {"u16_2x2", hal::ElementType::kUint16, {2, 2}},
      {"bool_5", hal::ElementType::kBool8, {5}},
      {"f32_empty", hal::ElementType::kFloat32, {0, 4}},
  };
  for (const Spec& spec : specs) {
    tools::HostTensor tensor;
    tensor.element_type = spec.type;
    tensor.shape = spec.shape;
    tensor.data.assign(size_t(tensor.element_count()) * hal::ElementByteSize(spec.type), 1);
    OSPREY_ASSIGN_OR_RETURN(auto bytes, tools::SerializeNpy(tensor));
    OSPREY_RETURN_IF_ERROR(Write(dir + "/" + spec.name + ".npy", bytes));
  }
  // Forms SerializeNpy does not write: Fortran order, big-endian, version 2.
  const std::string headers[] = {
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
      "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
  };
  for (size_t i = 0; i < 2; ++i) {
    std::string header = headers[i];
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size()),
                                  uint8_t(header.size() >> 8)};
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + (i == 0 ? 24 : 8), 2);
    OSPREY_RETURN_IF_ERROR(Write(dir + "/handmade_" + std::to_string(i) + ".npy", bytes));
  }
  return OkStatus();
}

Status WriteNpuBlobs(const std::string& dir) {
  using drivers::npu::builder::BlobExport;
  using drivers::npu::builder::StreamBuilder;
  // A copy through local memory.
  StreamBuilder copy;
  copy.DmaRead(0, 0, 0, 64).Op(NPU_OP_SYNC).DmaWrite(1, 0, 64, 64);
  // An elementwise op and a small convolution.
  StreamBuilder relu;
  relu.DmaRead(0, 0, 0, 32).Op(NPU_OP_SYNC).Ifm(0, 1, 4, 8).Ofm(64, 1, 4, 8).Op(NPU_OP_ACT_RELU)
      .Op(NPU_OP_SYNC).DmaWrite(1, 0, 64, 32);
  StreamBuilder conv;
  conv.DmaRead(0, 0, 0, 48).DmaRead(1, 0, 0, 72, 1, 0, 0, true).Op(NPU_OP_SYNC)
      .Ifm(0, 4, 4, 3).Ofm(128, 2, 2, 2).Kernel(3, 3, 1, 1, 0, 0).Op(NPU_OP_CONV).Op(NPU_OP_SYNC)
      .DmaWrite(2, 0, 128, 8);
  const std::pair<const char*, const StreamBuilder*> streams[] = {
      {"copy", &copy}, {"relu", &relu}, {"conv", &conv}};
  std::vector<BlobExport> all;
  for (const auto& [name, stream] : streams) {
    BlobExport e;
    e.name = name;
    e.words = stream->Finish();
    e.relocations = stream->relocations();
    e.binding_count = 3;
    e.binding_write_mask = 0x6;
    OSPREY_RETURN_IF_ERROR(Write(dir + "/" + name + ".npu", drivers::npu::builder::BuildBlob({e})));
    all.push_back(e);
  }
  return Write(dir + "/all.npu", drivers::npu::builder::BuildBlob(all));
}

}  // namespace
}  // namespace osprey::fuzz

int main(int argc, char** argv) {
  std::string out = ".";
  osprey::tools::FlagParser parser("make_seeds --out=DIR file.vmasm...");
  parser.AddString("out", &out, "Directory that gets modules/, npy/ and npu/.");
  osprey::Status status = parser.Parse(&argc, argv);
  std::vector<std::string> sources(argv + 1, argv + argc);
  if (status.ok()) status = osprey::fuzz::WriteModules(out + "/modules", sources);
  if (status.ok()) status = osprey::fuzz::WriteNpys(out + "/npy");
  if (status.ok()) status = osprey::fuzz::WriteNpuBlobs(out + "/npu");
  if (!status.ok()) {
    char text[2048];
    status.ToString(text, sizeof(text));
    std::fprintf(stderr, "make_seeds: %s\n", text);
    return 1;
  }
  return 0;
}
