// Recording command buffer replay and the CPU dispatch helper.
#include "hal/local/local_dispatch.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/heap_allocator.h"
#include "hal/local/library_executable.h"
#include "hal/local/recording_command_buffer.h"

namespace osprey::hal::local {
namespace {

// Records (x, y, z, processor) of each call into binding 0.
int Record(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
           const osprey_workgroup_state_v1_t* w) {
  auto* out = static_cast<uint32_t*>(d->binding_ptrs[0]);
  uint32_t l = (w->workgroup_id_z * d->workgroup_count_y + w->workgroup_id_y) *
                   d->workgroup_count_x +
               w->workgroup_id_x;
  out[l * 2] = (w->workgroup_id_x << 16) | (w->workgroup_id_y << 8) | w->workgroup_id_z;
  out[l * 2 + 1] = w->processor_id + d->constants[0];
  return 0;
}
int FailOnThird(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t*,
                const osprey_workgroup_state_v1_t* w) {
  return w->workgroup_id_x == 2 ? -5 : 0;
}
int IndexOutOfRange(const osprey_executable_environment_v1_t*,
                    const osprey_dispatch_state_v1_t*, const osprey_workgroup_state_v1_t*) {
  return OSPREY_DISPATCH_INDEX_OUT_OF_RANGE;
}

struct Library {
  osprey_executable_library_header_t header = {1, "dispatch_test_lib"};
  osprey_dispatch_fn_t fns[3] = {&Record, &FailOnThird, &IndexOutOfRange};
  osprey_dispatch_attrs_v1_t attrs[3] = {
      {1, 1, 1, 128, {1, 1, 1}}, {0, 0, 0, 0, {1, 1, 1}}, {0, 0, 0, 0, {1, 1, 1}}};
  const char* names[3] = {"record", "fail_on_third", "gather_ids"};
  osprey_executable_library_v1_t library = {};
  Library() {
    library.header = &header;
    library.exports = {3, fns, attrs, names};
  }
};

class LocalDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto executable = LibraryExecutable::Create(&library_.library.header, {}, allocator_);
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    executable_ = std::move(*executable);
    auto heap = HeapAllocator::Create(allocator_);
    ASSERT_TRUE(heap.ok());
    heap_ = std::move(*heap);
  }
  osprey::Allocator* allocator_ = osprey::Allocator::Default();
  Library library_;
  ref_ptr<LibraryExecutable> executable_;
  ref_ptr<HeapAllocator> heap_;
};

TEST_F(LocalDispatchTest, RunsRangesOfLinearIds) {
  auto buffer = heap_->AllocateBuffer({}, 2 * 3 * 4 * 8);
  ASSERT_TRUE(buffer.ok());
  BufferRef bindings[] = {{buffer->get(), 0, 2 * 3 * 4 * 8}};
  uint32_t constants[] = {100};
  LocalDispatch dispatch;
  ASSERT_TRUE(dispatch.Prepare(executable_.get(), 0, {2, 3, 4}, constants, bindings, 2, nullptr)
                  .ok());
  EXPECT_EQ(dispatch.workgroup_total(), 24u);
  EXPECT_EQ(dispatch.local_memory_size(), 128u);
  EXPECT_EQ(dispatch.state().max_concurrency, 2u);
  alignas(16) uint8_t local[128];
  // Two workers' shards, in any order.
  ASSERT_TRUE(dispatch.RunWorkgroups(7, 24, 1, local, sizeof(local)).ok());
  ASSERT_TRUE(dispatch.RunWorkgroups(0, 7, 0, local, sizeof(local)).ok());
  std::vector<uint32_t> out(48);
  ASSERT_TRUE((*buffer)->ReadData(0, out.data(), out.size() * 4).ok());
  for (uint32_t l = 0; l < 24; ++l) {
    uint32_t x = l % 2, y = (l / 2) % 3, z = l / 6;
    EXPECT_EQ(out[l * 2], (x << 16) | (y << 8) | z) << l;
    EXPECT_EQ(out[l * 2 + 1], (l >= 7 ? 1u : 0u) + 100u) << l;
  }
}

TEST_F(LocalDispatchTest, TooLittleLocalMemoryIsResourceExhausted) {
  auto buffer = heap_->AllocateBuffer({}, 64);
  ASSERT_TRUE(buffer.ok());
  BufferRef bindings[] = {{buffer->get(), 0, 64}};
  uint32_t constants[] = {0};
  LocalDispatch dispatch;
  ASSERT_TRUE(dispatch.Prepare(executable_.get(), 0, {1, 1, 1}, constants, bindings, 1, nullptr)
                  .ok());
  uint8_t local[64];
  EXPECT_EQ(dispatch.RunWorkgroups(0, 1, 0, local, sizeof(local)).code(),
            StatusCode::kResourceExhausted);
}

TEST_F(LocalDispatchTest, FailureNamesLibraryExportAndWorkgroup) {
  LocalDispatch dispatch;
  ASSERT_TRUE(dispatch.Prepare(executable_.get(), 1, {5, 1, 1}, {}, {}, 1, nullptr).ok());
  Status status = dispatch.RunWorkgroups(0, 5, 0, nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  std::string message = status.message();
  EXPECT_NE(message.find("dispatch_test_lib"), std::string::npos) << message;
  EXPECT_NE(message.find("fail_on_third"), std::string::npos) << message;
  EXPECT_NE(message.find("returned -5"), std::string::npos) << message;
  EXPECT_NE(message.find("(2, 0, 0)"), std::string::npos) << message;
}

TEST_F(LocalDispatchTest, RejectsForeignExecutables) {
  struct Foreign : public Executable {
    uint32_t export_count() const override { return 1; }
    const ExportInfo& export_info(uint32_t) const override { return info; }
    ExportInfo info;
  };
  Foreign foreign;
  LocalDispatch dispatch;
  EXPECT_EQ(dispatch.Prepare(&foreign, 0, {1, 1, 1}, {}, {}, 1, nullptr).code(),
            StatusCode::kInvalidArgument);
}

// Counts what a replay hands over.
class CountingHandler : public CommandHandler {
 public:
  Status OnBarrier(const BarrierCommand&) override { return Note("barrier"); }
  Status OnFill(const FillCommand& c) override {
    EXPECT_EQ(c.pattern_length, 2u);
    EXPECT_EQ(c.pattern, 0xBEEFu);
    return Note("fill");
  }
  Status OnUpdate(const UpdateCommand& c) override {
    EXPECT_EQ(c.data[0], 42);
    return Note("update");
  }
  Status OnCopy(const CopyCommand&) override { return Note("copy"); }
  Status OnDispatch(const DispatchCommand& c) override {
    EXPECT_EQ(c.constants.size(), 1u);
    EXPECT_EQ(c.constants[0], 9u);
    EXPECT_EQ(c.bindings.size(), 1u);
    if (fail_dispatch) return UnknownError("handler refused");
    return Note("dispatch");
  }
  Status Note(const char* what) {
    log += what;
    log += ";";
    return OkStatus();
  }
  std::string log;
  bool fail_dispatch = false;
};

TEST_F(LocalDispatchTest, RecordingReplaysInOrder) {
  auto buffer = heap_->AllocateBuffer({}, 64);
  ASSERT_TRUE(buffer.ok());
  auto cb = RecordingCommandBuffer::Create(CommandBufferMode::kDefault, allocator_);
  ASSERT_TRUE(cb.ok());
  EXPECT_EQ(RecordingCommandBuffer::Cast(cb->get()), cb->get());
  ASSERT_TRUE((*cb)->Begin().ok());
  uint16_t pattern = 0xBEEF;
  ASSERT_TRUE((*cb)->FillBuffer({buffer->get(), 0, 32}, &pattern, 2).ok());
  ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
  uint8_t data = 42;
  ASSERT_TRUE((*cb)->UpdateBuffer(&data, {buffer->get(), 40, 1}).ok());
  ASSERT_TRUE((*cb)->CopyBuffer({buffer->get(), 0, 8}, {buffer->get(), 48, 8}).ok());
  uint32_t constants[] = {9};
  BufferRef bindings[] = {{buffer->get(), 0, 64}};
  ASSERT_TRUE((*cb)->Dispatch(executable_.get(), 0, {1, 1, 1}, constants, bindings).ok());
  CountingHandler early;
  EXPECT_EQ((*cb)->Replay(early).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*cb)->End().ok());
  EXPECT_EQ((*cb)->command_count(), 5u);
  EXPECT_EQ((*cb)->dispatch_count(), 1u);
  EXPECT_EQ((*cb)->max_binding_count(), 1u);
  CountingHandler handler;
  ASSERT_TRUE((*cb)->Replay(handler).ok());
  EXPECT_EQ(handler.log, "fill;barrier;update;copy;dispatch;");
  CountingHandler failing;
  failing.fail_dispatch = true;
  Status status = (*cb)->Replay(failing);
  EXPECT_EQ(status.code(), StatusCode::kUnknown);
  EXPECT_NE(std::string(status.message()).find("command 4 (dispatch)"), std::string::npos)
      << status.message();
}

TEST_F(LocalDispatchTest, RecordingLimitsApplyAtRecordTime) {
  auto buffer = heap_->AllocateBuffer({}, 64);
  ASSERT_TRUE(buffer.ok());
  RecordingOptions options;
  options.local_executables_only = true;
  options.max_local_memory_size = 64;
  auto cb = RecordingCommandBuffer::Create(CommandBufferMode::kDefault, allocator_, options);
  ASSERT_TRUE(cb.ok());
  ASSERT_TRUE((*cb)->Begin().ok());
  uint32_t constants[] = {9};
  BufferRef bindings[] = {{buffer->get(), 0, 64}};
  Status status = (*cb)->Dispatch(executable_.get(), 0, {1, 1, 1}, constants, bindings);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(status.message()).find("record"), std::string::npos);
}

TEST_F(LocalDispatchTest, OneShotSubmissionIsChecked) {
  auto cb = RecordingCommandBuffer::Create(CommandBufferMode::kOneShot, allocator_);
  ASSERT_TRUE(cb.ok());
  EXPECT_EQ((*cb)->BeginSubmission().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*cb)->Begin().ok());
  ASSERT_TRUE((*cb)->End().ok());
  EXPECT_TRUE((*cb)->BeginSubmission().ok());
  EXPECT_EQ((*cb)->BeginSubmission().code(), StatusCode::kFailedPrecondition);
}

// Sums binding i's first word * (i + 1) into binding 0's first word.
int SumBindings(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
                const osprey_workgroup_state_v1_t*) {
  uint32_t sum = 0;
  for (uint32_t i = 1; i < d->binding_count; ++i) {
    if (d->binding_lengths[i] != 4) return 1;
    sum += static_cast<const uint32_t*>(d->binding_ptrs[i])[0] * (i + 1);
  }
  static_cast<uint32_t*>(d->binding_ptrs[0])[0] = sum;
  return 0;
}

TEST_F(LocalDispatchTest, ManyBindingsUseScratch) {
  constexpr uint32_t kBindings = 20;
  osprey_executable_library_header_t header = {1, "many"};
  osprey_dispatch_fn_t fns[1] = {&SumBindings};
  osprey_dispatch_attrs_v1_t attrs[1] = {{kBindings, 0, 0x1, 0, {1, 1, 1}}};
  osprey_executable_library_v1_t library = {};
  library.header = &header;
  library.exports = {1, fns, attrs, nullptr};
  auto executable = LibraryExecutable::Create(&library.header, {}, allocator_);
  ASSERT_TRUE(executable.ok()) << executable.status().message();

  std::vector<ref_ptr<Buffer>> buffers;
  std::vector<BufferRef> bindings;
  for (uint32_t i = 0; i < kBindings; ++i) {
    auto buffer = heap_->AllocateBuffer({}, 4);
    ASSERT_TRUE(buffer.ok());
    uint32_t value = i;
    ASSERT_TRUE((*buffer)->WriteData(0, &value, 4).ok());
    bindings.push_back({buffer->get(), 0, 4});
    buffers.push_back(std::move(*buffer));
  }
  auto cb = RecordingCommandBuffer::Create(CommandBufferMode::kDefault, allocator_);
  ASSERT_TRUE(cb.ok());
  ASSERT_TRUE((*cb)->Begin().ok());
  ASSERT_TRUE((*cb)->Dispatch(executable->get(), 0, {1, 1, 1}, {}, bindings).ok());
  ASSERT_TRUE((*cb)->End().ok());
  ASSERT_EQ((*cb)->max_binding_count(), kBindings);
  const auto* command = static_cast<const DispatchCommand*>((*cb)->first_command());
  ASSERT_EQ(command->type, CommandType::kDispatch);

  LocalDispatch without_scratch;
  EXPECT_EQ(without_scratch.Prepare(*command, 1, nullptr).code(), StatusCode::kResourceExhausted);
  Arena scratch(allocator_);
  LocalDispatch dispatch;
  ASSERT_TRUE(dispatch.Prepare(*command, 1, &scratch).ok());
  ASSERT_TRUE(dispatch.RunWorkgroups(0, 1, 0, nullptr, 0).ok());
  uint32_t sum = 0;
  ASSERT_TRUE(buffers[0]->ReadData(0, &sum, 4).ok());
  uint32_t expected = 0;
  for (uint32_t i = 1; i < kBindings; ++i) expected += i * (i + 1);
  EXPECT_EQ(sum, expected);
}

TEST(HeapAllocatorTest, UsesDataAllocatorAndTracksBytes) {
  CountingAllocator data(osprey::Allocator::Default());
  auto heap = HeapAllocator::Create(osprey::Allocator::Default(), &data);
  ASSERT_TRUE(heap.ok());
  {
    auto a = (*heap)->AllocateBuffer({}, 1000);
    auto b = (*heap)->AllocateBuffer({}, 24);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*heap)->bytes_allocated(), 1024u);
    EXPECT_EQ(data.live(), 2u);
    BufferParams params;
    params.min_alignment = 4096;
    auto aligned = (*heap)->AllocateBuffer(params, 8);
    ASSERT_TRUE(aligned.ok());
    uint8_t* p = nullptr;
    ASSERT_TRUE((*aligned)->MapForDevice(MemoryAccess::kRead, 0, 8, &p).ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  }
  EXPECT_EQ((*heap)->bytes_allocated(), 0u);
  EXPECT_EQ(data.live(), 0u);
}

TEST(HeapAllocatorTest, OutOfMemoryIsResourceExhausted) {
  alignas(16) static uint8_t memory[4096];
  StaticArenaAllocator small(memory, sizeof(memory));
  auto heap = HeapAllocator::Create(osprey::Allocator::Default(), &small);
  ASSERT_TRUE(heap.ok());
  auto buffer = (*heap)->AllocateBuffer({}, 1 << 20);
  EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*heap)->bytes_allocated(), 0u);
}

TEST_F(LocalDispatchTest, FailureCodesOfTheAbiAreExplained) {
  LocalDispatch dispatch;
  ASSERT_TRUE(dispatch.Prepare(executable_.get(), 2, {1, 1, 1}, {}, {}, 1, nullptr).ok());
  Status status = dispatch.RunWorkgroups(0, 1, 0, nullptr, 0);
  std::string message = status.message();
  EXPECT_NE(message.find("export 'gather_ids'"), std::string::npos) << message;
  EXPECT_NE(message.find("returned 1 (index out of range in the input data)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace osprey::hal::local
