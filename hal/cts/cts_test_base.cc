// CTS fixture: device per test, CTS kernels registered as a static library.
#include "hal/cts/cts_test_base.h"

#include "hal/local/static_library_loader.h"

namespace osprey::hal::cts {

namespace {

// "cts_host_add": result = value + 1000; counts calls in the context.
int HostAdd(void* params, void* context, void* reserved) {
  auto* p = static_cast<osprey_cts_host_add_params_t*>(params);
  p->result = p->value + 1000;
  ++*static_cast<uint32_t*>(context);
  return 0;
}

const local::StaticLibraryRegistry* CtsLibraries() {
  static local::StaticLibraryRegistry* registry = [] {
    auto* r = new local::StaticLibraryRegistry();
    Status status = r->Register(OSPREY_CTS_KERNELS_LIBRARY_NAME, &osprey_cts_kernels_query);
    if (!status.ok()) ADD_FAILURE() << StatusText(status);
    return r;
  }();
  return registry;
}

}  // namespace

std::string StatusText(const Status& status) {
  char buffer[1024];
  status.ToString(buffer, sizeof(buffer));
  return buffer;
}

uint32_t FloatBits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  return bits;
}
float BitsFloat(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

int64_t DeadlineInMs(int64_t ms) { return platform::DeadlineFromTimeout(ms * 1000000); }

void CtsTest::SetUp() {
  host_allocator_ = osprey::Allocator::Default();
  // The import table must outlive the device: it lives in the fixture.
  host_imports_[0] = {"cts_host_add", &HostAdd, &host_add_calls_};
  BackendContext context;
  context.static_libraries = CtsLibraries();
  context.imports.imports = host_imports_;
  context.host_allocator = host_allocator_;
  auto device = GetParam().create_device(context);
  ASSERT_TRUE(device.ok()) << StatusText(device);
  device_ = std::move(*device);
}

void CtsTest::TearDown() { device_.reset(); }

StatusOr<ref_ptr<Buffer>> CtsTest::Allocate(DeviceSize length, BufferUsage usage,
                                            MemoryType type, MemoryAccess access) {
  BufferParams params;
  params.type = type;
  params.usage = usage;
  params.access = access;
  return allocator()->AllocateBuffer(params, length);
}

StatusOr<ref_ptr<Buffer>> CtsTest::AllocateWith(const void* data, DeviceSize length,
                                                BufferUsage usage) {
  OSPREY_ASSIGN_OR_RETURN(auto buffer, Allocate(length, usage));
  OSPREY_RETURN_IF_ERROR(buffer->WriteData(0, data, length));
  return buffer;
}

std::vector<uint8_t> CtsTest::ReadAll(Buffer* buffer, DeviceSize offset, DeviceSize length) {
  if (length == kWholeBuffer) length = buffer->byte_length() - offset;
  std::vector<uint8_t> bytes(static_cast<size_t>(length));
  Status status = buffer->ReadData(offset, bytes.data(), length);
  EXPECT_TRUE(status.ok()) << StatusText(status);
  return bytes;
}

StatusOr<ref_ptr<CommandBuffer>> CtsTest::BeginCommandBuffer(CommandBufferMode mode) {
  OSPREY_ASSIGN_OR_RETURN(auto command_buffer, device_->CreateCommandBuffer(mode));
  OSPREY_RETURN_IF_ERROR(command_buffer->Begin());
  return command_buffer;
}

Status CtsTest::SubmitAndWait(CommandBuffer* command_buffer) {
  if (command_buffer->state() == CommandBuffer::State::kRecording) {
    OSPREY_RETURN_IF_ERROR(command_buffer->End());
  }
  OSPREY_ASSIGN_OR_RETURN(auto semaphore, device_->CreateSemaphore(0));
  Semaphore* signal[] = {semaphore.get()};
  uint64_t values[] = {1};
  CommandBuffer* buffers[] = {command_buffer};
  OSPREY_RETURN_IF_ERROR(device_->QueueExecute({}, buffers, {signal, values}));
  return semaphore->Wait(1, DeadlineInMs(10000));
}

StatusOr<ref_ptr<Executable>> CtsTest::LoadKernels() {
  OSPREY_ASSIGN_OR_RETURN(auto cache, device_->CreateExecutableCache());
  ExecutableParams params;
  params.format = GetParam().executable_format.c_str();
  params.data = {reinterpret_cast<const uint8_t*>(OSPREY_CTS_KERNELS_LIBRARY_NAME),
                 strlen(OSPREY_CTS_KERNELS_LIBRARY_NAME)};
  return cache->PrepareExecutable(params);
}

uint32_t CtsTest::Export(Executable* executable, const char* name) {
  auto ordinal = executable->LookupExport(name);
  EXPECT_TRUE(ordinal.ok()) << StatusText(ordinal);
  return ordinal.ok() ? *ordinal : 0;
}

}  // namespace osprey::hal::cts
