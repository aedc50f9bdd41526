// Verification and relocation of npu-v1 executable blobs.
#include "drivers/npu/sim/command_stream.h"

#include <cstring>

#include "drivers/npu/sim/simulator.h"

namespace osprey::drivers::npu::sim {

Status VerifyStream(std::span<const uint32_t> words, std::span<const npu_relocation_t> relocations,
                    uint32_t binding_count) {
  size_t next_reloc = 0;
  size_t pc = 0;
  bool ended = false;
  uint32_t last_reloc_word = 0;
  for (size_t i = 0; i < relocations.size(); ++i) {
    if (i > 0 && relocations[i].word <= last_reloc_word) {
      return InvalidArgumentError("relocation %zu (word %u) not in increasing word order", i,
                                  relocations[i].word);
    }
    if (relocations[i].binding >= binding_count) {
      return InvalidArgumentError("relocation %zu refers to binding %u of %u", i,
                                  relocations[i].binding, binding_count);
    }
    last_reloc_word = relocations[i].word;
  }
  while (pc < words.size()) {
    const uint32_t w = words[pc];
    const uint32_t opcode = NPU_WORD_OPCODE(w);
    const uint32_t operand = NPU_WORD_OPERAND(w);
    if (ended) {
      return InvalidArgumentError("word %zu follows END", pc);
    }
    if (opcode == NPU_OP_SET_REG) {
      if (operand >= NPU_REG_COUNT) {
        return InvalidArgumentError("word %zu: SET_REG of register %u (npu-v1 has %u)", pc,
                                    operand, static_cast<unsigned>(NPU_REG_COUNT));
      }
      if (pc + 1 >= words.size()) {
        return InvalidArgumentError("word %zu: SET_REG without a value word (truncated)", pc);
      }
      const size_t value_word = pc + 1;
      if (next_reloc < relocations.size() && relocations[next_reloc].word < value_word) {
        return InvalidArgumentError(
            "relocation %zu patches word %u, which is not a SET_REG DMA_SYS_ADDR value",
            next_reloc, relocations[next_reloc].word);
      }
      if (next_reloc < relocations.size() && relocations[next_reloc].word == value_word) {
        if (operand != NPU_REG_DMA_SYS_ADDR) {
          return InvalidArgumentError(
              "relocation %zu patches the value of register %u; only DMA_SYS_ADDR (%u) is "
              "relocatable",
              next_reloc, operand, static_cast<unsigned>(NPU_REG_DMA_SYS_ADDR));
        }
        ++next_reloc;
      }
      pc += 2;
      continue;
    }
    if (OpKindOf(opcode) == kOpKindCount && opcode != NPU_OP_END) {
      return InvalidArgumentError("word %zu: opcode 0x%02x is not an npu-v1 instruction", pc,
                                  opcode);
    }
    if (operand != 0) {
      return InvalidArgumentError("word %zu: %s with non-zero operand bits", pc,
                                  OpcodeName(opcode));
    }
    if (opcode == NPU_OP_END) ended = true;
    ++pc;
  }
  if (!ended) {
    return InvalidArgumentError("stream of %zu words does not end with END (truncated?)",
                                words.size());
  }
  if (next_reloc < relocations.size()) {
    return InvalidArgumentError(
        "relocation %zu patches word %u, which is not a SET_REG DMA_SYS_ADDR value", next_reloc,
        relocations[next_reloc].word);
  }
  return OkStatus();
}

Status BlobView::Parse(std::span<const uint8_t> data, BlobView* out_view) {
  if (reinterpret_cast<uintptr_t>(data.data()) % alignof(uint32_t) != 0) {
    return InvalidArgumentError("npu-v1 blob is not 4-byte aligned");
  }
  if (data.size() < sizeof(npu_blob_header_t)) {
    return DataLossError("npu-v1 blob of %zu bytes is shorter than its %zu-byte header",
                         data.size(), sizeof(npu_blob_header_t));
  }
  const auto* header = reinterpret_cast<const npu_blob_header_t*>(data.data());
  if (header->magic != NPU_BLOB_MAGIC) {
    return InvalidArgumentError("not an npu-v1 blob (magic 0x%08x, expected 0x%08x)",
                                header->magic, NPU_BLOB_MAGIC);
  }
  if (header->version != NPU_ISA_VERSION) {
    return InvalidArgumentError("npu blob version %u not supported (this runtime runs %u)",
                                header->version, NPU_ISA_VERSION);
  }
  if (header->export_count == 0 || header->export_count > 4096) {
    return InvalidArgumentError("npu blob declares %u exports (1..4096)", header->export_count);
  }
  if (header->reserved[0] != 0 || header->reserved[1] != 0) {
    return InvalidArgumentError("npu blob header has non-zero reserved fields");
  }
  const uint64_t exports_bytes = uint64_t{header->export_count} * sizeof(npu_export_t);
  const uint64_t words_bytes = uint64_t{header->word_count} * 4;
  const uint64_t relocs_bytes = uint64_t{header->relocation_count} * sizeof(npu_relocation_t);
  const uint64_t total = sizeof(npu_blob_header_t) + exports_bytes + words_bytes + relocs_bytes +
                         header->string_bytes;
  if (total != data.size()) {
    return DataLossError("npu blob is %zu bytes but its header describes %llu", data.size(),
                         static_cast<unsigned long long>(total));
  }
  BlobView view;
  view.header_ = header;
  const uint8_t* p = data.data() + sizeof(npu_blob_header_t);
  view.exports_ = reinterpret_cast<const npu_export_t*>(p);
  p += exports_bytes;
  view.words_ = reinterpret_cast<const uint32_t*>(p);
  p += words_bytes;
  view.relocations_ = reinterpret_cast<const npu_relocation_t*>(p);
  p += relocs_bytes;
  view.strings_ = reinterpret_cast<const char*>(p);

  for (unsigned i = 0; i < header->export_count; ++i) {
    const npu_export_t& e = view.exports_[i];
    if (e.name_offset >= header->string_bytes ||
        std::memchr(view.strings_ + e.name_offset, 0, header->string_bytes - e.name_offset) ==
            nullptr) {
      return InvalidArgumentError("npu export %u: name offset %u is not a string in the table",
                                  i, e.name_offset);
    }
    if (uint64_t{e.first_word} + e.word_count > header->word_count) {
      return InvalidArgumentError("npu export %u: words [%u, +%u) past the %u words", i,
                                  e.first_word, e.word_count, header->word_count);
    }
    if (uint64_t{e.first_relocation} + e.relocation_count > header->relocation_count) {
      return InvalidArgumentError("npu export %u: relocations [%u, +%u) past the %u entries", i,
                                  e.first_relocation, e.relocation_count,
                                  header->relocation_count);
    }
    if (e.binding_count > NPU_MAX_BINDINGS) {
      return InvalidArgumentError("npu export %u: %u bindings (at most %u)", i, e.binding_count,
                                  NPU_MAX_BINDINGS);
    }
    if (e.binding_count < 32 && (e.binding_write_mask >> e.binding_count) != 0) {
      return InvalidArgumentError("npu export %u: write mask 0x%x names bindings past %u", i,
                                  e.binding_write_mask, e.binding_count);
    }
    if (e.reserved != 0) {
      return InvalidArgumentError("npu export %u: non-zero reserved field", i);
    }
    ExportView ev = view.export_view(i);
    OSPREY_RETURN_IF_ERROR(VerifyStream(ev.words, ev.relocations, ev.binding_count),
                           "in npu export %u ('%s')", i, ev.name);
  }
  *out_view = view;
  return OkStatus();
}

ExportView BlobView::export_view(uint32_t ordinal) const {
  const npu_export_t& e = exports_[ordinal];
  ExportView v;
  v.name = strings_ + e.name_offset;
  v.words = {words_ + e.first_word, e.word_count};
  v.relocations = {relocations_ + e.first_relocation, e.relocation_count};
  v.binding_count = e.binding_count;
  v.binding_write_mask = e.binding_write_mask;
  return v;
}

Status ApplyRelocations(const ExportView& view, std::span<const uint32_t> binding_addresses,
                        std::span<uint32_t> out_words) {
  if (out_words.size() != view.words.size()) {
    return InvalidArgumentError("relocation target holds %zu words, stream has %zu",
                                out_words.size(), view.words.size());
  }
  if (binding_addresses.size() < view.binding_count) {
    return InvalidArgumentError("%zu binding addresses for %u bindings",
                                binding_addresses.size(), view.binding_count);
  }
  std::memcpy(out_words.data(), view.words.data(), view.words.size() * sizeof(uint32_t));
  for (const npu_relocation_t& r : view.relocations) {
    const uint64_t patched = uint64_t{out_words[r.word]} + binding_addresses[r.binding];
    if (patched > 0xFFFFFFFFull) {
      return OutOfRangeError("relocating word %u by binding %u overflows 32-bit addresses",
                             r.word, r.binding);
    }
    out_words[r.word] = static_cast<uint32_t>(patched);
  }
  return OkStatus();
}

}  // namespace osprey::drivers::npu::sim
