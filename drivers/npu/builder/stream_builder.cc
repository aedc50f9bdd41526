// Host-side assembly of npu-v1 command streams and blobs.
#include "drivers/npu/builder/stream_builder.h"

#include <cstring>

namespace osprey::drivers::npu::builder {

StreamBuilder& StreamBuilder::DmaRead(uint32_t binding, uint32_t sys_offset, uint32_t loc_addr,
                                      uint32_t len, uint32_t rows, uint32_t sys_stride,
                                      uint32_t loc_stride, bool to_weights) {
  SetSysAddr(binding, sys_offset);
  Set(NPU_REG_DMA_LOC_ADDR, loc_addr);
  Set(NPU_REG_DMA_LEN, len);
  Set(NPU_REG_DMA_ROWS, rows);
  Set(NPU_REG_DMA_SYS_STRIDE, sys_stride);
  Set(NPU_REG_DMA_LOC_STRIDE, loc_stride);
  return Op(NPU_OP_DMA_READ, to_weights ? NPU_FLAG_DMA_WEIGHTS : 0);
}

StreamBuilder& StreamBuilder::DmaWrite(uint32_t binding, uint32_t sys_offset, uint32_t loc_addr,
                                       uint32_t len, uint32_t rows, uint32_t sys_stride,
                                       uint32_t loc_stride) {
  SetSysAddr(binding, sys_offset);
  Set(NPU_REG_DMA_LOC_ADDR, loc_addr);
  Set(NPU_REG_DMA_LEN, len);
  Set(NPU_REG_DMA_ROWS, rows);
  Set(NPU_REG_DMA_SYS_STRIDE, sys_stride);
  Set(NPU_REG_DMA_LOC_STRIDE, loc_stride);
  return Op(NPU_OP_DMA_WRITE);
}

StreamBuilder& StreamBuilder::Ifm(uint32_t addr, uint32_t h, uint32_t w, uint32_t c, int32_t zp) {
  return Set(NPU_REG_IFM_ADDR, addr)
      .Set(NPU_REG_IFM_H, h)
      .Set(NPU_REG_IFM_W, w)
      .Set(NPU_REG_IFM_C, c)
      .Set(NPU_REG_IFM_ZP, zp);
}

StreamBuilder& StreamBuilder::Ofm(uint32_t addr, uint32_t h, uint32_t w, uint32_t c, int32_t zp) {
  return Set(NPU_REG_OFM_ADDR, addr)
      .Set(NPU_REG_OFM_H, h)
      .Set(NPU_REG_OFM_W, w)
      .Set(NPU_REG_OFM_C, c)
      .Set(NPU_REG_OFM_ZP, zp);
}

StreamBuilder& StreamBuilder::Kernel(uint32_t kh, uint32_t kw, uint32_t sh, uint32_t sw,
                                     uint32_t pad_top, uint32_t pad_left) {
  return Set(NPU_REG_KERNEL_H, kh)
      .Set(NPU_REG_KERNEL_W, kw)
      .Set(NPU_REG_STRIDE_H, sh)
      .Set(NPU_REG_STRIDE_W, sw)
      .Set(NPU_REG_PAD_TOP, pad_top)
      .Set(NPU_REG_PAD_LEFT, pad_left);
}

std::vector<uint8_t> BuildBlob(const std::vector<BlobExport>& exports) {
  npu_blob_header_t header = {};
  header.magic = NPU_BLOB_MAGIC;
  header.version = NPU_ISA_VERSION;
  header.export_count = static_cast<uint32_t>(exports.size());
  std::vector<npu_export_t> table;
  std::vector<uint32_t> words;
  std::vector<npu_relocation_t> relocations;
  std::string strings;
  for (const BlobExport& e : exports) {
    npu_export_t entry = {};
    entry.name_offset = static_cast<uint32_t>(strings.size());
    strings += e.name;
    strings.push_back('\0');
    entry.first_word = static_cast<uint32_t>(words.size());
    entry.word_count = static_cast<uint32_t>(e.words.size());
    entry.first_relocation = static_cast<uint32_t>(relocations.size());
    entry.relocation_count = static_cast<uint32_t>(e.relocations.size());
    entry.binding_count = e.binding_count;
    entry.binding_write_mask = e.binding_write_mask;
    table.push_back(entry);
    words.insert(words.end(), e.words.begin(), e.words.end());
    relocations.insert(relocations.end(), e.relocations.begin(), e.relocations.end());
  }
  while (strings.size() % 4 != 0) strings.push_back('\0');
  header.word_count = static_cast<uint32_t>(words.size());
  header.relocation_count = static_cast<uint32_t>(relocations.size());
  header.string_bytes = static_cast<uint32_t>(strings.size());
  std::vector<uint8_t> blob;
  auto append = [&blob](const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    blob.insert(blob.end(), p, p + size);
  };
  append(&header, sizeof(header));
  append(table.data(), table.size() * sizeof(npu_export_t));
  append(words.data(), words.size() * sizeof(uint32_t));
  append(relocations.data(), relocations.size() * sizeof(npu_relocation_t));
  append(strings.data(), strings.size());
  return blob;
}

std::vector<uint8_t> PackQParams(const std::vector<int32_t>& bias,
                                 const std::vector<int32_t>& multiplier,
                                 const std::vector<int32_t>& shift) {
  std::vector<uint8_t> out(bias.size() * sizeof(npu_qparam_t));
  for (size_t i = 0; i < bias.size(); ++i) {
    npu_qparam_t q = {bias[i], multiplier[i], shift[i]};
    std::memcpy(out.data() + i * sizeof(q), &q, sizeof(q));
  }
  return out;
}

}  // namespace osprey::drivers::npu::builder
