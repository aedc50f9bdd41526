// Device allocators: create buffers with explicit placement, usage and
// access, and tell callers in advance what a request would get.
#ifndef OSPREY_HAL_ALLOCATOR_H_
#define OSPREY_HAL_ALLOCATOR_H_

#include "hal/buffer.h"
#include "hal/resource.h"
#include "hal/types.h"
#include "runtime/base/allocator.h"

namespace osprey::hal {

// Called when an imported buffer is destroyed, with the imported pointer.
struct ReleaseCallback {
  void (*fn)(void* user_data, void* memory) = nullptr;
  void* user_data = nullptr;
};

class Allocator : public Resource {
 public:
  // Host memory used for buffer objects (not necessarily their contents).
  // Borrowed; outlives this allocator.
  virtual osprey::Allocator* host_allocator() const = 0;

  // Resolves |params| in place (kOptimal becomes a concrete placement; the
  // implied visibility bits are added) and says what can be done with a
  // buffer of |length| bytes with them. kNone means "never works".
  virtual BufferCompatibility QueryCompatibility(BufferParams* params,
                                                 DeviceSize length) const = 0;

  // Allocates a buffer. INVALID_ARGUMENT if the params are incompatible
  // with this allocator (the message says why); RESOURCE_EXHAUSTED if out of
  // memory. Contents are undefined.
  virtual StatusOr<ref_ptr<Buffer>> AllocateBuffer(const BufferParams& params,
                                                   DeviceSize length) = 0;

  // Wraps |length| bytes of host memory at |memory| (not copied). |release|
  // runs when the buffer is destroyed; until then the caller keeps the
  // memory alive. INVALID_ARGUMENT if not importable with |params|.
  virtual StatusOr<ref_ptr<Buffer>> ImportBuffer(const BufferParams& params, void* memory,
                                                 DeviceSize length,
                                                 ReleaseCallback release) = 0;

  // Bytes currently allocated through this allocator (0 if not tracked).
  virtual DeviceSize bytes_allocated() const { return 0; }
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_ALLOCATOR_H_
