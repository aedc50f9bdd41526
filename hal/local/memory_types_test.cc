// Memory-type resolution, the shared refusals and the compatibility answer.
#include "hal/local/memory_types.h"

#include <string>

#include "gtest/gtest.h"

namespace osprey::hal::local {
namespace {

BufferParams Params(MemoryType type, BufferUsage usage = BufferUsage::kDefault,
                    DeviceSize min_alignment = 0) {
  BufferParams params;
  params.type = type;
  params.usage = usage;
  params.min_alignment = min_alignment;
  return params;
}

MemoryType Resolved(MemoryType type) {
  BufferParams params = Params(type);
  ResolveMemoryType(&params);
  return params.type;
}

TEST(MemoryTypesTest, ResolutionTable) {
  const MemoryType kHostMemory =
      MemoryType::kHostLocal | MemoryType::kHostCoherent | MemoryType::kDeviceVisible;
  const struct {
    MemoryType requested;
    MemoryType resolved;
  } kCases[] = {
      // kOptimal: coherent host memory the device can use.
      {MemoryType::kOptimal, kHostMemory},
      // Explicit bits next to kOptimal stay.
      {MemoryType::kOptimal | MemoryType::kHostCached, kHostMemory | MemoryType::kHostCached},
      {MemoryType::kOptimal | MemoryType::kDeviceLocalBit,
       kHostMemory | MemoryType::kDeviceLocalBit},
      // Implied bits.
      {MemoryType::kDeviceLocalBit, MemoryType::kDeviceLocal},
      {MemoryType::kHostLocalBit, MemoryType::kHostLocal},
      {MemoryType::kHostLocalBit | MemoryType::kDeviceLocalBit,
       MemoryType::kHostLocal | MemoryType::kDeviceLocal},
      // Already concrete: unchanged.
      {MemoryType::kDeviceLocal, MemoryType::kDeviceLocal},
      {MemoryType::kHostVisible | MemoryType::kDeviceVisible,
       MemoryType::kHostVisible | MemoryType::kDeviceVisible},
      {MemoryType::kHostVisible, MemoryType::kHostVisible},
      {MemoryType::kNone, MemoryType::kNone},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(unsigned(Resolved(c.requested)), unsigned(c.resolved))
        << "requested 0x" << std::hex << unsigned(c.requested);
  }
}

TEST(MemoryTypesTest, ResolutionKeepsUsageAccessAndAlignment) {
  BufferParams params = Params(MemoryType::kOptimal, BufferUsage::kTransferSource, 256);
  params.access = MemoryAccess::kRead;
  ResolveMemoryType(&params);
  EXPECT_EQ(params.usage, BufferUsage::kTransferSource);
  EXPECT_EQ(params.access, MemoryAccess::kRead);
  EXPECT_EQ(params.min_alignment, 256u);
}

TEST(MemoryTypesTest, Refusals) {
  const struct {
    BufferParams params;
    const char* message;  // Null: accepted.
  } kCases[] = {
      {Params(MemoryType::kNone), "visible to neither the host nor the device (test allocator)"},
      {Params(MemoryType::kHostCoherent | MemoryType::kHostCached), "visible to neither"},
      {Params(MemoryType::kDeviceLocal, BufferUsage::kMappingScoped), "not host-visible"},
      {Params(MemoryType::kDeviceLocal, BufferUsage::kMappingPersistent), "not host-visible"},
      {Params(MemoryType::kDeviceLocal, BufferUsage::kDefault), "not host-visible"},
      {Params(MemoryType::kHostVisible, BufferUsage::kDefault, 48), "not a power of two"},
      {Params(MemoryType::kHostVisible, BufferUsage::kDefault, 3), "not a power of two"},
      // Accepted: device-local without mapping, host-visible with mapping,
      // power-of-two or no alignment.
      {Params(MemoryType::kDeviceLocal, BufferUsage::kTransfer | BufferUsage::kDispatchStorage),
       nullptr},
      {Params(MemoryType::kHostVisible, BufferUsage::kMapping, 4096), nullptr},
      {Params(MemoryType::kHostLocal | MemoryType::kDeviceVisible, BufferUsage::kDefault, 1),
       nullptr},
      {Params(MemoryType::kHostVisible, BufferUsage::kDefault, 0), nullptr},
  };
  for (const auto& c : kCases) {
    Status status = CheckMemoryType(c.params, "test");
    SCOPED_TRACE(testing::Message() << "type 0x" << std::hex << unsigned(c.params.type)
                                    << " usage 0x" << unsigned(c.params.usage) << std::dec
                                    << " alignment " << c.params.min_alignment);
    if (!c.message) {
      EXPECT_TRUE(status.ok()) << status.message();
      continue;
    }
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(status.message()).find(c.message), std::string::npos) << status.message();
  }
}

TEST(MemoryTypesTest, Compatibility) {
  using C = BufferCompatibility;
  const struct {
    BufferParams params;
    bool importable;
    BufferCompatibility expected;
  } kCases[] = {
      // Host memory with the default usage: everything.
      {Params(MemoryType::kHostLocal | MemoryType::kDeviceVisible), true,
       C::kAllocatable | C::kImportable | C::kExportable | C::kQueueTransfer | C::kQueueDispatch},
      // Not importable where the allocator says so (e.g. device SRAM).
      {Params(MemoryType::kDeviceLocal, BufferUsage::kTransfer | BufferUsage::kDispatchStorage),
       false, C::kAllocatable | C::kQueueTransfer | C::kQueueDispatch},
      // Queue use follows usage.
      {Params(MemoryType::kDeviceLocal, BufferUsage::kTransferTarget), true,
       C::kAllocatable | C::kImportable | C::kQueueTransfer},
      {Params(MemoryType::kDeviceLocal, BufferUsage::kDispatchUniformRead), true,
       C::kAllocatable | C::kImportable | C::kQueueDispatch},
      // Host-only memory: exportable, but no queue use.
      {Params(MemoryType::kHostLocal, BufferUsage::kDefault), true,
       C::kAllocatable | C::kImportable | C::kExportable},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(unsigned(ResolvedCompatibility(c.params, c.importable)), unsigned(c.expected))
        << "type 0x" << std::hex << unsigned(c.params.type) << " usage 0x"
        << unsigned(c.params.usage);
  }
}

}  // namespace
}  // namespace osprey::hal::local
