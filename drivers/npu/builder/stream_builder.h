// Host-side helpers to assemble npu-v1 command streams and blobs (the
// compiler's NPU target, tests, benchmarks and tools; not part of the
// runtime).
#ifndef OSPREY_DRIVERS_NPU_BUILDER_STREAM_BUILDER_H_
#define OSPREY_DRIVERS_NPU_BUILDER_STREAM_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "drivers/npu/schema/npu_isa.h"

namespace osprey::drivers::npu::builder {

class StreamBuilder {
 public:
  StreamBuilder& Set(npu_register_t reg, int64_t value) {
    words_.push_back(NPU_MAKE_WORD(NPU_OP_SET_REG, 0, reg));
    words_.push_back(static_cast<uint32_t>(value));
    return *this;
  }
  // SET_REG DMA_SYS_ADDR = |offset| + base of |binding| (via a relocation).
  StreamBuilder& SetSysAddr(uint32_t binding, uint32_t offset) {
    Set(NPU_REG_DMA_SYS_ADDR, offset);
    relocations_.push_back({static_cast<uint32_t>(words_.size() - 1), binding});
    return *this;
  }
  StreamBuilder& Op(npu_opcode_t opcode, uint32_t flags = 0) {
    words_.push_back(NPU_MAKE_WORD(opcode, flags, 0));
    return *this;
  }
  StreamBuilder& Raw(uint32_t word) {
    words_.push_back(word);
    return *this;
  }

  // DMA of |rows| rows of |len| bytes between binding memory and local memory.
  StreamBuilder& DmaRead(uint32_t binding, uint32_t sys_offset, uint32_t loc_addr, uint32_t len,
                         uint32_t rows = 1, uint32_t sys_stride = 0, uint32_t loc_stride = 0,
                         bool to_weights = false);
  StreamBuilder& DmaWrite(uint32_t binding, uint32_t sys_offset, uint32_t loc_addr, uint32_t len,
                          uint32_t rows = 1, uint32_t sys_stride = 0, uint32_t loc_stride = 0);
  StreamBuilder& Ifm(uint32_t addr, uint32_t h, uint32_t w, uint32_t c, int32_t zp = 0);
  StreamBuilder& Ofm(uint32_t addr, uint32_t h, uint32_t w, uint32_t c, int32_t zp = 0);
  StreamBuilder& Kernel(uint32_t kh, uint32_t kw, uint32_t sh, uint32_t sw, uint32_t pad_top,
                        uint32_t pad_left);

  const std::vector<uint32_t>& words() const { return words_; }
  const std::vector<npu_relocation_t>& relocations() const { return relocations_; }
  // Words with END appended (the builder is left unchanged).
  std::vector<uint32_t> Finish() const {
    std::vector<uint32_t> w = words_;
    w.push_back(NPU_MAKE_WORD(NPU_OP_END, 0, 0));
    return w;
  }

 private:
  std::vector<uint32_t> words_;
  std::vector<npu_relocation_t> relocations_;
};

struct BlobExport {
  std::string name;
  std::vector<uint32_t> words;  // Including END.
  std::vector<npu_relocation_t> relocations;
  uint32_t binding_count = 0;
  uint32_t binding_write_mask = 0;
};

// Serializes exports into an npu-v1 blob.
std::vector<uint8_t> BuildBlob(const std::vector<BlobExport>& exports);

// Packs per-channel parameters as npu_qparam_t entries (12 bytes each).
std::vector<uint8_t> PackQParams(const std::vector<int32_t>& bias,
                                 const std::vector<int32_t>& multiplier,
                                 const std::vector<int32_t>& shift);

}  // namespace osprey::drivers::npu::builder

#endif  // OSPREY_DRIVERS_NPU_BUILDER_STREAM_BUILDER_H_
