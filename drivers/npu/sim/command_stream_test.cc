// Tests of npu-v1 blob parsing, stream verification and relocation.
#include "drivers/npu/sim/command_stream.h"

#include <cstring>
#include <string>
#include <vector>

#include "drivers/npu/builder/stream_builder.h"
#include "gtest/gtest.h"

namespace osprey::drivers::npu::sim {
namespace {

using builder::BlobExport;
using builder::BuildBlob;
using builder::StreamBuilder;

BlobExport CopyExport() {
  StreamBuilder b;
  b.DmaRead(0, 0, 0, 64).Op(NPU_OP_SYNC).DmaWrite(1, 16, 0, 64);
  BlobExport e;
  e.name = "copy";
  e.words = b.Finish();
  e.relocations = b.relocations();
  e.binding_count = 2;
  e.binding_write_mask = 0x2;
  return e;
}

// Parses |blob| from 4-byte-aligned storage.
Status Parse(const std::vector<uint8_t>& blob, std::vector<uint32_t>* storage, BlobView* view) {
  storage->assign((blob.size() + 3) / 4, 0);
  std::memcpy(storage->data(), blob.data(), blob.size());
  return BlobView::Parse({reinterpret_cast<const uint8_t*>(storage->data()), blob.size()}, view);
}

TEST(CommandStreamTest, ParsesExportsAndRelocates) {
  BlobExport second = CopyExport();
  second.name = "second";
  auto blob = BuildBlob({CopyExport(), second});
  std::vector<uint32_t> storage;
  BlobView view;
  Status s = Parse(blob, &storage, &view);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(view.export_count(), 2u);
  ExportView e = view.export_view(1);
  EXPECT_STREQ(e.name, "second");
  EXPECT_EQ(e.binding_count, 2u);
  EXPECT_EQ(e.binding_write_mask, 0x2u);
  ASSERT_EQ(e.relocations.size(), 2u);

  std::vector<uint32_t> patched(e.words.size());
  const uint32_t bases[2] = {0x10000000, 0x20000000};
  ASSERT_TRUE(ApplyRelocations(e, bases, patched).ok());
  EXPECT_EQ(patched[e.relocations[0].word], 0x10000000u);
  EXPECT_EQ(patched[e.relocations[1].word], 0x20000010u);
  // Unrelocated words are copied unchanged.
  EXPECT_EQ(patched[0], e.words[0]);

  const uint32_t overflow[2] = {0xFFFFFFF0, 0};
  EXPECT_EQ(ApplyRelocations(e, overflow, patched).code(), StatusCode::kOk);
  const uint32_t overflow2[2] = {0, 0xFFFFFFF8};
  EXPECT_EQ(ApplyRelocations(e, overflow2, patched).code(), StatusCode::kOutOfRange);
}

TEST(CommandStreamTest, RejectsCorruptHeaders) {
  auto blob = BuildBlob({CopyExport()});
  std::vector<uint32_t> storage;
  BlobView view;

  auto bad_magic = blob;
  bad_magic[0] ^= 0xFF;
  EXPECT_EQ(Parse(bad_magic, &storage, &view).code(), StatusCode::kInvalidArgument);

  auto bad_version = blob;
  bad_version[4] = 2;
  Status s = Parse(bad_version, &storage, &view);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("version 2"), std::string::npos) << s.message();

  for (size_t cut : {size_t{0}, size_t{16}, blob.size() - 4}) {
    std::vector<uint8_t> truncated(blob.begin(), blob.begin() + cut);
    EXPECT_EQ(Parse(truncated, &storage, &view).code(), StatusCode::kDataLoss) << cut;
  }
}

TEST(CommandStreamTest, RejectsBadStreams) {
  std::vector<uint32_t> storage;
  BlobView view;
  // Stream without END.
  BlobExport no_end = CopyExport();
  no_end.words.pop_back();
  Status s = Parse(BuildBlob({no_end}), &storage, &view);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("'copy'"), std::string::npos) << s.message();
  // Unknown opcode.
  BlobExport bad_op = CopyExport();
  bad_op.words.insert(bad_op.words.begin(), 0x3F);
  for (auto& r : bad_op.relocations) r.word += 1;
  EXPECT_EQ(Parse(BuildBlob({bad_op}), &storage, &view).code(), StatusCode::kInvalidArgument);
  // Unknown register.
  BlobExport bad_reg = CopyExport();
  bad_reg.words.insert(bad_reg.words.begin(), {NPU_MAKE_WORD(NPU_OP_SET_REG, 0, 200), 0});
  for (auto& r : bad_reg.relocations) r.word += 2;
  EXPECT_EQ(Parse(BuildBlob({bad_reg}), &storage, &view).code(), StatusCode::kInvalidArgument);
  // Relocation of a register that is not DMA_SYS_ADDR.
  BlobExport bad_reloc = CopyExport();
  bad_reloc.relocations[0].word += 2;  // The DMA_LOC_ADDR value word.
  s = Parse(BuildBlob({bad_reloc}), &storage, &view);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("DMA_SYS_ADDR"), std::string::npos) << s.message();
  // Relocation of an instruction word.
  BlobExport reloc_op = CopyExport();
  reloc_op.relocations[0].word = 0;
  EXPECT_EQ(Parse(BuildBlob({reloc_op}), &storage, &view).code(), StatusCode::kInvalidArgument);
  // Binding index past the count, write mask past the count.
  BlobExport bad_binding = CopyExport();
  bad_binding.relocations[1].binding = 2;
  EXPECT_EQ(Parse(BuildBlob({bad_binding}), &storage, &view).code(),
            StatusCode::kInvalidArgument);
  BlobExport bad_mask = CopyExport();
  bad_mask.binding_write_mask = 0x4;
  EXPECT_EQ(Parse(BuildBlob({bad_mask}), &storage, &view).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace osprey::drivers::npu::sim
