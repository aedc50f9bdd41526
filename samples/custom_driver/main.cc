// Registers the custom driver with the default registry, creates a device
// by name and runs a fill and a copy on it. Exit code 0 on success.
#include <cstdint>
#include <cstdio>

#include "hal/api.h"
#include "samples/custom_driver/custom_driver.h"

namespace {

int Fail(const char* what, const osprey::Status& status) {
  char text[512];
  status.ToString(text, sizeof(text));
  std::fprintf(stderr, "custom_driver_sample: %s: %s\n", what, text);
  return 1;
}

}  // namespace

int main() {
  using namespace osprey;
  hal::DriverRegistry* registry = hal::DriverRegistry::Default();
  Status registered = custom_driver::RegisterCustomDriver(*registry);
  if (!registered.ok()) return Fail("registering", registered);

  auto device = registry->CreateDevice("custom", {}, Allocator::Default());
  if (!device.ok()) return Fail("creating the device", device.status());
  hal::BufferParams params;
  auto a = (*device)->allocator()->AllocateBuffer(params, 64);
  auto b = (*device)->allocator()->AllocateBuffer(params, 64);
  if (!a.ok() || !b.ok()) return Fail("allocating", a.ok() ? b.status() : a.status());

  auto cb = (*device)->CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
  if (!cb.ok()) return Fail("creating a command buffer", cb.status());
  const uint32_t pattern = 0x01020304;
  Status recorded = (*cb)->Begin();
  if (recorded.ok()) recorded = (*cb)->FillBuffer({a->get()}, &pattern, 4);
  if (recorded.ok()) recorded = (*cb)->ExecutionBarrier();
  if (recorded.ok()) recorded = (*cb)->CopyBuffer({a->get()}, {b->get()});
  if (recorded.ok()) recorded = (*cb)->End();
  if (!recorded.ok()) return Fail("recording", recorded);

  auto semaphore = (*device)->CreateSemaphore(0);
  if (!semaphore.ok()) return Fail("creating a semaphore", semaphore.status());
  hal::Semaphore* semaphores[] = {semaphore->get()};
  uint64_t values[] = {1};
  hal::CommandBuffer* command_buffers[] = {cb->get()};
  Status submitted = (*device)->QueueExecute({}, command_buffers, {semaphores, values});
  if (submitted.ok()) submitted = (*semaphore)->Wait(1, platform::kInfiniteFuture);
  if (!submitted.ok()) return Fail("executing", submitted);

  uint32_t word = 0;
  Status read = (*b)->ReadData(60, &word, 4);
  if (!read.ok()) return Fail("reading back", read);
  if (word != pattern) {
    std::fprintf(stderr, "custom_driver_sample: read 0x%08x, expected 0x%08x\n",
                 static_cast<unsigned>(word), static_cast<unsigned>(pattern));
    return 1;
  }
  std::printf("custom device '%s': fill + copy OK\n", (*device)->id());
  return 0;
}
