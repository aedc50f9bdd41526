// Parsing, verification and relocation of npu-v1 executable blobs.
//
// ParseBlob checks everything that can be checked before the device runs:
// the header, the export table, that each export's stream decodes (known
// opcodes and registers, SET_REG value words present, END last) and that
// every relocation patches a SET_REG DMA_SYS_ADDR value word of a declared
// binding. Register values, memory bounds and permissions are data the
// device checks as it executes (see Simulator::Execute).
#ifndef OSPREY_DRIVERS_NPU_SIM_COMMAND_STREAM_H_
#define OSPREY_DRIVERS_NPU_SIM_COMMAND_STREAM_H_

#include <cstdint>
#include <span>

#include "drivers/npu/schema/npu_isa.h"
#include "runtime/base/status.h"

namespace osprey::drivers::npu::sim {

// One export of a parsed blob. Spans borrow the blob's bytes.
struct ExportView {
  const char* name = "";
  std::span<const uint32_t> words;
  std::span<const npu_relocation_t> relocations;
  uint32_t binding_count = 0;
  uint32_t binding_write_mask = 0;
};

// Verifies the stream of one export on its own (also used for streams the
// driver builds itself). INVALID_ARGUMENT naming the word at fault.
Status VerifyStream(std::span<const uint32_t> words, std::span<const npu_relocation_t> relocations,
                    uint32_t binding_count);

// A verified view of a blob. The blob bytes are borrowed and must stay
// alive (and unchanged) while the view is used.
class BlobView {
 public:
  // Parses |data| (4-byte aligned). DATA_LOSS if truncated or sizes
  // disagree, INVALID_ARGUMENT for a bad magic/version/export/stream (the
  // message names the export and word).
  static Status Parse(std::span<const uint8_t> data, BlobView* out_view);

  uint32_t export_count() const { return header_->export_count; }
  // |ordinal| < export_count().
  ExportView export_view(uint32_t ordinal) const;

 private:
  const npu_blob_header_t* header_ = nullptr;
  const npu_export_t* exports_ = nullptr;
  const uint32_t* words_ = nullptr;
  const npu_relocation_t* relocations_ = nullptr;
  const char* strings_ = nullptr;
};

// Copies |view|'s words to |out_words| (same size) adding
// |binding_addresses[r.binding]| to each relocated word. OUT_OF_RANGE if a
// patched address overflows 32 bits; INVALID_ARGUMENT if sizes mismatch.
Status ApplyRelocations(const ExportView& view, std::span<const uint32_t> binding_addresses,
                        std::span<uint32_t> out_words);

}  // namespace osprey::drivers::npu::sim

#endif  // OSPREY_DRIVERS_NPU_SIM_COMMAND_STREAM_H_
