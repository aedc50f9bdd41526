// The "hal" native VM module: argument unpacking, per-context executable
// caching and the function table.
#include "runtime/modules/hal/hal_module.h"

#include <stdio.h>
#include <string.h>

#include <new>
#include <utility>

#include "runtime/base/platform/platform.h"
#include "vm/buffer.h"
#include "vm/bytecode_module.h"
#include "vm/list.h"

namespace osprey::modules::hal {

namespace ohal = ::osprey::hal;

const vm::RefType kDeviceType{"hal.device"};
const vm::RefType kAllocatorType{"hal.allocator"};
const vm::RefType kBufferType{"hal.buffer"};
const vm::RefType kBufferViewType{"hal.buffer_view"};
const vm::RefType kCommandBufferType{"hal.command_buffer"};
const vm::RefType kExecutableType{"hal.executable"};
const vm::RefType kSemaphoreType{"hal.semaphore"};

Status RegisterTypes(vm::Instance* instance) {
  for (const vm::RefType* type :
       {&kDeviceType, &kAllocatorType, &kBufferType, &kBufferViewType, &kCommandBufferType,
        &kExecutableType, &kSemaphoreType}) {
    OSPREY_RETURN_IF_ERROR(instance->RegisterRefType(type), "registering '%s'", type->name);
  }
  return OkStatus();
}

vm::Ref WrapBufferView(ohal::BufferView* view) { return vm::Ref(view, &kBufferViewType); }
vm::Ref WrapBuffer(ohal::Buffer* buffer) { return vm::Ref(buffer, &kBufferType); }

namespace {

//===----------------------------------------------------------------------===//
// Per-context state
//===----------------------------------------------------------------------===//

// One prepared executable, keyed by its device and the module and index it
// came from.
struct CachedExecutable {
  const ohal::Device* device;
  const vm::BytecodeModule* module;
  uint32_t index;
  ohal::Executable* executable;  // One reference owned by the entry.
};

// A device of the module and what a context keeps for it.
struct DeviceSlot {
  ref_ptr<ohal::Device> device;
  ref_ptr<ohal::ExecutableCache> cache;  // Created on first use.
  ref_ptr<ohal::Semaphore> sync_semaphore;
  uint64_t sync_value = 0;
};

class HalModuleState final : public vm::ModuleState {
 public:
  HalModuleState(std::span<const ref_ptr<ohal::Device>> devices, Allocator* allocator)
      : allocator_(allocator) {
    for (const ref_ptr<ohal::Device>& device : devices) slots_[slot_count_++].device = device;
  }
  ~HalModuleState() override {
    for (size_t i = 0; i < executable_count_; ++i) executables_[i].executable->Release();
    allocator_->Free(executables_);
  }

  // The default device: the first of the module's devices.
  ohal::Device* device() const { return slots_[0].device.get(); }
  size_t device_count() const { return slot_count_; }
  ohal::Device* device(size_t i) const { return slots_[i].device.get(); }
  DeviceSlot* slot(size_t i) { return &slots_[i]; }

  // The slot of |device|, or an error naming the module's devices.
  StatusOr<DeviceSlot*> Slot(ohal::Device* device, const char* what) {
    for (size_t i = 0; i < slot_count_; ++i) {
      if (slots_[i].device.get() == device) return &slots_[i];
    }
    char names[96];
    DeviceNames(names, sizeof(names));
    return InvalidArgumentError("%s: device '%s' is not one of this context's devices (%s)",
                                what, device->id(), names);
  }

  // "cpu-sync, npu": the ids of the module's devices, for messages.
  void DeviceNames(char* out, size_t capacity) const {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < slot_count_ && used < capacity; ++i) {
      const int n = snprintf(out + used, capacity - used, "%s%s", i ? ", " : "",
                             slots_[i].device->id());
      if (n < 0) break;
      used += size_t(n);
    }
  }

  StatusOr<ohal::ExecutableCache*> Cache(DeviceSlot* slot) {
    if (!slot->cache) {
      OSPREY_ASSIGN_OR_RETURN(slot->cache, slot->device->CreateExecutableCache(),
                              "creating the executable cache of device '%s'",
                              slot->device->id());
    }
    return slot->cache.get();
  }

  // Submits |command_buffer| to |slot|'s device and waits for it,
  // signalling a timeline semaphore kept per device so steady-state calls
  // allocate none. A failed submission drops the semaphore (failures are
  // sticky).
  Status ExecuteSync(DeviceSlot* slot, ohal::CommandBuffer* command_buffer) {
    if (!slot->sync_semaphore) {
      OSPREY_ASSIGN_OR_RETURN(slot->sync_semaphore, slot->device->CreateSemaphore(0));
      slot->sync_value = 0;
    }
    const uint64_t value = ++slot->sync_value;
    ohal::Semaphore* signal = slot->sync_semaphore.get();
    ohal::SemaphoreList signal_list{std::span<ohal::Semaphore* const>(&signal, 1),
                                    std::span<const uint64_t>(&value, 1)};
    ohal::CommandBuffer* const command_buffers[1] = {command_buffer};
    Status status = slot->device->QueueExecute({}, command_buffers, signal_list);
    if (status.ok()) status = slot->sync_semaphore->Wait(value, platform::kInfiniteFuture);
    if (!status.ok()) slot->sync_semaphore.reset();
    return status;
  }
  Status ExecuteSync(ohal::CommandBuffer* command_buffer) {
    return ExecuteSync(&slots_[0], command_buffer);
  }

  // Returns the executable prepared for |slot|'s device from |module|'s
  // executable |index|, preparing it on first use in this context.
  StatusOr<ohal::Executable*> GetExecutable(DeviceSlot* slot, const vm::BytecodeModule* module,
                                            uint32_t index) {
    ohal::Device* device = slot->device.get();
    for (size_t i = 0; i < executable_count_; ++i) {
      if (executables_[i].device == device && executables_[i].module == module &&
          executables_[i].index == index) {
        return executables_[i].executable;
      }
    }
    if (index >= module->executable_count()) {
      return InvalidArgumentError("executable index %u is out of range: module '%s' has %u",
                                  unsigned(index), module->name(),
                                  unsigned(module->executable_count()));
    }
    const vm::ExecutableInfo& info = module->executable(index);
    OSPREY_ASSIGN_OR_RETURN(ohal::ExecutableCache * cache, Cache(slot));
    if (!cache->CanPrepareFormat(info.format)) {
      return UnimplementedError(
          "device '%s' cannot run executable %u ('%s') of format '%s' in module '%s'",
          device->id(), unsigned(index), info.name, info.format, module->name());
    }
    ohal::ExecutableParams params;
    params.format = info.format;
    params.data = std::span<const uint8_t>(info.data, info.length);
    params.caching_mode = ohal::ExecutableCachingMode::kDefault;
    OSPREY_ASSIGN_OR_RETURN(auto executable, cache->PrepareExecutable(params),
                            "preparing executable %u ('%s', %s) of module '%s' for device '%s'",
                            unsigned(index), info.name, info.format, module->name(),
                            device->id());
    if (executable_count_ == executable_capacity_) {
      const size_t capacity = executable_capacity_ ? executable_capacity_ * 2 : 4;
      void* memory = nullptr;
      OSPREY_RETURN_IF_ERROR(
          allocator_->Allocate(capacity * sizeof(CachedExecutable), alignof(CachedExecutable),
                               &memory));
      if (executable_count_) {
        memcpy(memory, executables_, executable_count_ * sizeof(CachedExecutable));
      }
      allocator_->Free(executables_);
      executables_ = static_cast<CachedExecutable*>(memory);
      executable_capacity_ = capacity;
    }
    ohal::Executable* raw = executable.release();
    executables_[executable_count_++] = CachedExecutable{device, module, index, raw};
    return raw;
  }
  StatusOr<ohal::Executable*> GetExecutable(const vm::BytecodeModule* module, uint32_t index) {
    return GetExecutable(&slots_[0], module, index);
  }

 private:
  Allocator* allocator_;
  DeviceSlot slots_[kMaxModuleDevices];
  size_t slot_count_ = 0;
  CachedExecutable* executables_ = nullptr;
  size_t executable_count_ = 0;
  size_t executable_capacity_ = 0;
};

class HalModule final : public vm::NativeModule {
 public:
  HalModule(const char* name, std::span<const ref_ptr<ohal::Device>> devices,
            std::span<const vm::NativeFunction> functions)
      : vm::NativeModule(name, functions) {
    for (const ref_ptr<ohal::Device>& device : devices) devices_[device_count_++] = device;
  }

  StatusOr<vm::ModuleState*> CreateState(Allocator* allocator) override {
    OSPREY_ASSIGN_OR_RETURN(
        HalModuleState * state,
        allocator->New<HalModuleState>(
            std::span<const ref_ptr<ohal::Device>>(devices_, device_count_), allocator));
    return static_cast<vm::ModuleState*>(state);
  }
  void DestroyState(vm::ModuleState* state, Allocator* allocator) override {
    allocator->Delete(static_cast<HalModuleState*>(state));
  }

 private:
  ref_ptr<ohal::Device> devices_[kMaxModuleDevices];
  size_t device_count_ = 0;
};

HalModuleState* State(vm::NativeCall& call) { return static_cast<HalModuleState*>(call.state()); }

//===----------------------------------------------------------------------===//
// Argument helpers
//===----------------------------------------------------------------------===//

// Reads text (a name or query key) from a vm.buffer argument into |out|.
Status GetText(vm::NativeCall& call, size_t k, char* out, size_t capacity) {
  vm::Buffer* buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(k, vm::Buffer::type(), &buffer));
  size_t length = buffer->length();
  // Rodata strings may carry a terminating NUL.
  while (length > 0 && buffer->data()[length - 1] == '\0') --length;
  if (length >= capacity) {
    return InvalidArgumentError("argument %zu: text of %zu bytes exceeds %zu", k, length,
                                capacity - 1);
  }
  memcpy(out, buffer->data(), length);
  out[length] = '\0';
  return OkStatus();
}

// Reads a list of integers from a vm.buffer (little-endian elements of
// |element_size| bytes) or a vm.list (i32/i64 values) argument.
template <typename T>
Status GetIntegers(vm::NativeCall& call, size_t k, size_t element_size, T* out,
                   size_t capacity, size_t* out_count, const char* what) {
  const vm::Ref& ref = call.ref(k);
  if (ref.is_null()) {
    *out_count = 0;
    return OkStatus();
  }
  if (vm::Buffer* buffer = ref.As<vm::Buffer>(vm::Buffer::type())) {
    if (buffer->length() % element_size != 0) {
      return InvalidArgumentError("argument %zu (%s): buffer of %zu bytes is not a whole number "
                                  "of %zu-byte elements",
                                  k, what, buffer->length(), element_size);
    }
    const size_t count = buffer->length() / element_size;
    if (count > capacity) {
      return InvalidArgumentError("argument %zu (%s): %zu elements exceed the maximum of %zu", k,
                                  what, count, capacity);
    }
    for (size_t i = 0; i < count; ++i) {
      if (element_size == 8) {
        int64_t v;
        memcpy(&v, buffer->data() + i * 8, 8);
        out[i] = T(v);
      } else {
        int32_t v;
        memcpy(&v, buffer->data() + i * 4, 4);
        out[i] = T(v);
      }
    }
    *out_count = count;
    return OkStatus();
  }
  if (vm::List* list = ref.As<vm::List>(vm::List::type())) {
    if (list->size() > capacity) {
      return InvalidArgumentError("argument %zu (%s): %zu elements exceed the maximum of %zu", k,
                                  what, list->size(), capacity);
    }
    for (size_t i = 0; i < list->size(); ++i) {
      const vm::Value* value = nullptr;
      OSPREY_RETURN_IF_ERROR(list->Get(i, &value));
      if (value->type == vm::ValueType::kI32) {
        out[i] = T(value->i32);
      } else if (value->type == vm::ValueType::kI64) {
        out[i] = T(value->i64);
      } else {
        return InvalidArgumentError("argument %zu (%s): element %zu is %s, expected an integer",
                                    k, what, i, vm::ValueTypeName(value->type));
      }
    }
    *out_count = list->size();
    return OkStatus();
  }
  return InvalidArgumentError("argument %zu (%s): expected a vm.buffer or vm.list, got '%s'", k,
                              what, ref.type() ? ref.type()->name : "(untyped)");
}

Status CheckNonNegative(int64_t value, size_t k, const char* what) {
  if (value < 0) {
    return InvalidArgumentError("argument %zu (%s) is negative: %lld", k, what,
                                (long long)value);
  }
  return OkStatus();
}

// An i64 length argument where -1 means "to the end of the buffer".
ohal::DeviceSize LengthArg(int64_t value) {
  return value < 0 ? ohal::kWholeBuffer : ohal::DeviceSize(value);
}

//===----------------------------------------------------------------------===//
// Devices and allocators
//===----------------------------------------------------------------------===//

Status DeviceSelf(vm::NativeCall& call) {
  call.set_ref(0, vm::Ref(State(call)->device(), &kDeviceType));
  return OkStatus();
}

Status DevicesCount(vm::NativeCall& call) {
  call.set_i32(0, int32_t(State(call)->device_count()));
  return OkStatus();
}

// (index) -> device |index| of the context (0 is the default device).
Status DevicesGet(vm::NativeCall& call) {
  HalModuleState* state = State(call);
  const int32_t index = call.i32(0);
  if (index < 0 || size_t(index) >= state->device_count()) {
    char names[96];
    state->DeviceNames(names, sizeof(names));
    return OutOfRangeError("device index %d is out of range: the context has %zu (%s)", index,
                           state->device_count(), names);
  }
  call.set_ref(0, vm::Ref(state->device(size_t(index)), &kDeviceType));
  return OkStatus();
}

// (format) -> the first device of the context that runs executables of
// |format|; NOT_FOUND naming the format and the devices otherwise.
Status DevicesSelect(vm::NativeCall& call) {
  HalModuleState* state = State(call);
  char format[64];
  OSPREY_RETURN_IF_ERROR(GetText(call, 0, format, sizeof(format)));
  for (size_t i = 0; i < state->device_count(); ++i) {
    OSPREY_ASSIGN_OR_RETURN(ohal::ExecutableCache * cache, state->Cache(state->slot(i)));
    if (cache->CanPrepareFormat(format)) {
      call.set_ref(0, vm::Ref(state->device(i), &kDeviceType));
      return OkStatus();
    }
  }
  char names[96];
  state->DeviceNames(names, sizeof(names));
  return NotFoundError("the program needs a device that runs '%s' executables and none of the "
                       "context's devices (%s) does: add one to the session (osprey-run: "
                       "--device=%s,<device>)",
                       format, names, state->device()->id());
}

Status DeviceAllocator(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  call.set_ref(0, vm::Ref(device->allocator(), &kAllocatorType));
  return OkStatus();
}

// Matches |text| against |pattern|, where a trailing '*' matches any rest.
bool MatchPattern(const char* pattern, const char* text) {
  const size_t length = strlen(pattern);
  if (length > 0 && pattern[length - 1] == '*') return strncmp(pattern, text, length - 1) == 0;
  return strcmp(pattern, text) == 0;
}

// (device, key) -> (ok, value). Keys:
//   "device.id=<pattern>"             1 if the device id matches
//   "device.executable_format=<fmt>"  1 if the device can run the format
//   "allocator.bytes_allocated"       bytes currently allocated
//   "device.processor_count"          host processors
//   anything hal::Device::QueryI64 knows (e.g. "npu.total_cycles")
// Unknown keys return ok = 0 so programs can probe.
Status DeviceQueryI64(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  char key[128];
  OSPREY_RETURN_IF_ERROR(GetText(call, 1, key, sizeof(key)));
  int32_t ok = 1;
  int64_t value = 0;
  if (strncmp(key, "device.id=", 10) == 0) {
    value = MatchPattern(key + 10, device->id()) ? 1 : 0;
  } else if (strncmp(key, "device.executable_format=", 25) == 0) {
    OSPREY_ASSIGN_OR_RETURN(auto cache, device->CreateExecutableCache());
    value = cache->CanPrepareFormat(key + 25) ? 1 : 0;
  } else if (strcmp(key, "allocator.bytes_allocated") == 0) {
    value = int64_t(device->allocator()->bytes_allocated());
  } else if (strcmp(key, "device.processor_count") == 0) {
    value = platform::ProcessorCount();
  } else if (StatusOr<int64_t> device_value = device->QueryI64(key); device_value.ok()) {
    value = *device_value;
  } else {
    ok = 0;
  }
  call.set_i32(0, ok);
  call.set_i64(1, value);
  return OkStatus();
}

// (allocator, memory_type, usage, access, length) -> buffer
Status AllocatorAllocate(vm::NativeCall& call) {
  ohal::Allocator* allocator = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kAllocatorType, &allocator));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(4), 4, "length"));
  ohal::BufferParams params;
  params.type = ohal::MemoryType(uint32_t(call.i32(1)));
  params.usage = ohal::BufferUsage(uint32_t(call.i32(2)));
  params.access = ohal::MemoryAccess(uint32_t(call.i32(3)));
  if (params.access == ohal::MemoryAccess::kNone) params.access = ohal::MemoryAccess::kAll;
  OSPREY_ASSIGN_OR_RETURN(auto buffer,
                          allocator->AllocateBuffer(params, ohal::DeviceSize(call.i64(4))),
                          "allocating %lld bytes", (long long)call.i64(4));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(buffer), &kBufferType));
  return OkStatus();
}

// (allocator, memory_type, usage, length) -> compatibility bits
Status AllocatorCompatibility(vm::NativeCall& call) {
  ohal::Allocator* allocator = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kAllocatorType, &allocator));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(3), 3, "length"));
  ohal::BufferParams params;
  params.type = ohal::MemoryType(uint32_t(call.i32(1)));
  params.usage = ohal::BufferUsage(uint32_t(call.i32(2)));
  call.set_i32(0, int32_t(allocator->QueryCompatibility(&params, ohal::DeviceSize(call.i64(3)))));
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

Status BufferLength(vm::NativeCall& call) {
  ohal::Buffer* buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferType, &buffer));
  call.set_i64(0, int64_t(buffer->byte_length()));
  return OkStatus();
}

// (buffer, offset, length) -> buffer
Status BufferSubspan(vm::NativeCall& call) {
  ohal::Buffer* buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferType, &buffer));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(1), 1, "offset"));
  OSPREY_ASSIGN_OR_RETURN(auto subspan,
                          ohal::Buffer::Subspan(ref_ptr<ohal::Buffer>(buffer),
                                                ohal::DeviceSize(call.i64(1)),
                                                LengthArg(call.i64(2))));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(subspan), &kBufferType));
  return OkStatus();
}

// Releases the read-only vm.buffer a wrapped rodata buffer keeps alive.
void ReleaseSegment(void* user_data, void* memory) {
  static_cast<vm::Buffer*>(user_data)->Release();
}

// (allocator, segment) -> buffer: a hal.buffer over the bytes of the
// read-only vm.buffer |segment| (a module rodata segment from
// const.ref.rodata) with read-only access and dispatch-read, transfer-source,
// mapping and constant usage. Zero-copy when the allocator imports host
// memory: the buffer retains |segment|, whose bytes stay valid while it (and
// so the module file) lives. Allocators that cannot import host memory get a
// copy in memory they allocate.
Status BufferWrapRodata(vm::NativeCall& call) {
  ohal::Allocator* allocator = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kAllocatorType, &allocator));
  vm::Buffer* segment = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(1, vm::Buffer::type(), &segment));
  if (!segment->read_only()) {
    return InvalidArgumentError("argument 1 (segment): expected a read-only vm.buffer (a rodata "
                                "segment), got a writable one");
  }
  ohal::BufferParams params;
  params.type = ohal::MemoryType::kHostLocal | ohal::MemoryType::kDeviceVisible;
  params.usage = ohal::BufferUsage::kDispatchStorageRead | ohal::BufferUsage::kTransferSource |
                 ohal::BufferUsage::kMapping | ohal::BufferUsage::kConstant;
  params.access = ohal::MemoryAccess::kRead;
  const ohal::DeviceSize length = segment->length();
  ohal::BufferParams query = params;
  if (ohal::AnyBitSet(allocator->QueryCompatibility(&query, length),
                      ohal::BufferCompatibility::kImportable)) {
    segment->Retain();
    // The HAL takes mutable pointers; read-only access forbids writing through
    // this one (mapping for write or binding as a written operand).
    auto buffer = allocator->ImportBuffer(params, const_cast<uint8_t*>(segment->data()), length,
                                          ohal::ReleaseCallback{&ReleaseSegment, segment});
    if (!buffer.ok()) {
      segment->Release();
      Status status = std::move(buffer).status();
      return std::move(status).Annotate("wrapping a rodata segment of %zu bytes",
                                        segment->length());
    }
    call.set_ref(0, vm::Ref::FromRefPtr(std::move(*buffer), &kBufferType));
    return OkStatus();
  }
  // The device cannot address host memory: copy into memory it allocates.
  // The copy needs write access once, so it stays writable at the HAL level;
  // compiled programs bind it only as a read operand.
  params.usage |= ohal::BufferUsage::kTransferTarget;
  params.access = ohal::MemoryAccess::kAll;
  OSPREY_ASSIGN_OR_RETURN(auto buffer, allocator->AllocateBuffer(params, length),
                          "allocating a copy of a rodata segment of %zu bytes",
                          segment->length());
  OSPREY_RETURN_IF_ERROR(buffer->WriteData(0, segment->data(), length),
                         "copying a rodata segment of %zu bytes", segment->length());
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(buffer), &kBufferType));
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// Buffer views
//===----------------------------------------------------------------------===//

// (buffer, offset, length, element_type, shape) -> buffer_view. |shape| is
// a vm.buffer of i64 dimensions or a vm.list of integers.
Status BufferViewCreate(vm::NativeCall& call) {
  ohal::Buffer* buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferType, &buffer));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(1), 1, "offset"));
  int64_t shape[ohal::kMaxRank];
  size_t rank = 0;
  OSPREY_RETURN_IF_ERROR(GetIntegers(call, 4, 8, shape, ohal::kMaxRank, &rank, "shape"));
  ref_ptr<ohal::Buffer> target(buffer);
  if (call.i64(1) != 0 || (call.i64(2) >= 0 && ohal::DeviceSize(call.i64(2)) !=
                                                   buffer->byte_length())) {
    OSPREY_ASSIGN_OR_RETURN(target, ohal::Buffer::Subspan(target, ohal::DeviceSize(call.i64(1)),
                                                          LengthArg(call.i64(2))));
  }
  OSPREY_ASSIGN_OR_RETURN(
      auto view,
      ohal::BufferView::Create(std::move(target), std::span<const int64_t>(shape, rank),
                               ohal::ElementType(uint32_t(call.i32(3))),
                               ohal::Encoding::kDenseRowMajor, call.allocator()));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(view), &kBufferViewType));
  return OkStatus();
}

Status BufferViewBuffer(vm::NativeCall& call) {
  ohal::BufferView* view = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferViewType, &view));
  call.set_ref(0, vm::Ref(view->buffer(), &kBufferType));
  return OkStatus();
}

Status BufferViewElementType(vm::NativeCall& call) {
  ohal::BufferView* view = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferViewType, &view));
  call.set_i32(0, int32_t(view->element_type()));
  return OkStatus();
}

Status BufferViewRank(vm::NativeCall& call) {
  ohal::BufferView* view = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferViewType, &view));
  call.set_i32(0, int32_t(view->rank()));
  return OkStatus();
}

Status BufferViewDim(vm::NativeCall& call) {
  ohal::BufferView* view = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferViewType, &view));
  const int32_t index = call.i32(1);
  if (index < 0 || size_t(index) >= view->rank()) {
    return OutOfRangeError("dimension %d of a rank-%zu buffer view", index, view->rank());
  }
  call.set_i64(0, view->dim(size_t(index)));
  return OkStatus();
}

Status BufferViewByteLength(vm::NativeCall& call) {
  ohal::BufferView* view = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kBufferViewType, &view));
  call.set_i64(0, int64_t(view->byte_length()));
  return OkStatus();
}

// Formats |shape| and |type| like BufferView::FormatShape ("2x3xf32"), with
// "?" for dimensions given as -1.
void FormatExpected(const int64_t* shape, size_t rank, ohal::ElementType type, char* out,
                    size_t capacity) {
  size_t used = 0;
  for (size_t i = 0; i < rank && used < capacity; ++i) {
    int n = shape[i] < 0 ? snprintf(out + used, capacity - used, "?x")
                         : snprintf(out + used, capacity - used, "%lldx", (long long)shape[i]);
    if (n > 0) used += size_t(n);
  }
  if (used < capacity) snprintf(out + used, capacity - used, "%s", ohal::ElementTypeName(type));
}

// (view, name, element_type, shape): INVALID_ARGUMENT naming |name| with the
// expected and actual shape unless the view matches. Dimensions of -1 in
// |shape| match any size.
Status BufferViewAssert(vm::NativeCall& call) {
  int64_t shape[ohal::kMaxRank];
  size_t rank = 0;
  OSPREY_RETURN_IF_ERROR(GetIntegers(call, 3, 8, shape, ohal::kMaxRank, &rank, "shape"));
  const ohal::ElementType type = ohal::ElementType(uint32_t(call.i32(2)));
  const vm::Ref& ref = call.ref(0);
  ohal::BufferView* view = ref.As<ohal::BufferView>(&kBufferViewType);
  bool match = view && view->element_type() == type && view->rank() == rank;
  for (size_t i = 0; match && i < rank; ++i) {
    match = shape[i] < 0 || shape[i] == view->dim(i);
  }
  if (OSPREY_LIKELY(match)) return OkStatus();

  // Only the failure path reads the name and formats shapes.
  char name[64];
  OSPREY_RETURN_IF_ERROR(GetText(call, 1, name, sizeof(name)));
  char expected[96];
  FormatExpected(shape, rank, type, expected, sizeof(expected));
  if (!view) {
    return InvalidArgumentError("%s: expected a %s tensor, got %s", name, expected,
                                ref.is_null() ? "null" : ref.type() ? ref.type()->name : "?");
  }
  char actual[96];
  view->FormatShape(actual, sizeof(actual));
  return InvalidArgumentError("%s has shape %s, expected %s", name, actual, expected);
}

//===----------------------------------------------------------------------===//
// Command buffers
//===----------------------------------------------------------------------===//

// (device, mode) -> command_buffer
Status CommandBufferCreate(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  OSPREY_ASSIGN_OR_RETURN(
      auto command_buffer,
      device->CreateCommandBuffer(ohal::CommandBufferMode(uint32_t(call.i32(1)))));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(command_buffer), &kCommandBufferType));
  return OkStatus();
}

Status CommandBufferBegin(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  return command_buffer->Begin();
}

Status CommandBufferEnd(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  return command_buffer->End();
}

Status CommandBufferBarrier(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  return command_buffer->ExecutionBarrier();
}

// (command_buffer, target, offset, length, pattern, pattern_length)
Status CommandBufferFill(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  ohal::Buffer* target = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(1, &kBufferType, &target));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(2), 2, "offset"));
  const int32_t pattern_length = call.i32(5);
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return InvalidArgumentError("argument 5 (pattern length) must be 1, 2 or 4, got %d",
                                pattern_length);
  }
  const uint32_t pattern = uint32_t(call.i32(4));
  uint8_t bytes[4];
  memcpy(bytes, &pattern, 4);  // Little-endian: the low bytes come first.
  return command_buffer->FillBuffer(
      ohal::BufferRef{target, ohal::DeviceSize(call.i64(2)), LengthArg(call.i64(3))}, bytes,
      size_t(pattern_length));
}

// (command_buffer, source, source_offset, target, target_offset, length)
Status CommandBufferCopy(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  ohal::Buffer* source = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(1, &kBufferType, &source));
  ohal::Buffer* target = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(3, &kBufferType, &target));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(2), 2, "source offset"));
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(4), 4, "target offset"));
  const ohal::DeviceSize length = LengthArg(call.i64(5));
  return command_buffer->CopyBuffer(
      ohal::BufferRef{source, ohal::DeviceSize(call.i64(2)), length},
      ohal::BufferRef{target, ohal::DeviceSize(call.i64(4)), length});
}

// Records a dispatch whose arguments start at index |k| of |call|:
// (executable, ordinal, x, y, z, constants, bindings).
// |constants|: vm.buffer of u32 or vm.list of integers (null: none).
// |bindings|: vm.list of hal.buffer or hal.buffer_view refs.
Status RecordDispatch(vm::NativeCall& call, size_t k, ohal::CommandBuffer* command_buffer) {
  ohal::Executable* executable = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(k, &kExecutableType, &executable));
  if (call.i32(k + 1) < 0) {
    return InvalidArgumentError("argument %zu (ordinal) is negative", k + 1);
  }
  for (size_t i = k + 2; i <= k + 4; ++i) {
    if (call.i32(i) < 0) {
      return InvalidArgumentError("argument %zu (workgroup count) is negative: %d", i,
                                  call.i32(i));
    }
  }
  uint32_t constants[kMaxDispatchConstants];
  size_t constant_count = 0;
  OSPREY_RETURN_IF_ERROR(GetIntegers(call, k + 5, 4, constants, kMaxDispatchConstants,
                                     &constant_count, "constants"));
  ohal::BufferRef bindings[kMaxDispatchBindings];
  size_t binding_count = 0;
  const vm::Ref& bindings_ref = call.ref(k + 6);
  if (!bindings_ref.is_null()) {
    vm::List* list = nullptr;
    OSPREY_RETURN_IF_ERROR(call.GetRef(k + 6, vm::List::type(), &list));
    if (list->size() > kMaxDispatchBindings) {
      return InvalidArgumentError("argument %zu (bindings): %zu bindings exceed the maximum of "
                                  "%zu",
                                  k + 6, list->size(), kMaxDispatchBindings);
    }
    for (size_t i = 0; i < list->size(); ++i) {
      const vm::Value* value = nullptr;
      OSPREY_RETURN_IF_ERROR(list->Get(i, &value));
      ohal::Buffer* buffer = value->ref.As<ohal::Buffer>(&kBufferType);
      ohal::DeviceSize length = ohal::kWholeBuffer;
      if (!buffer) {
        if (auto* view = value->ref.As<ohal::BufferView>(&kBufferViewType)) {
          buffer = view->buffer();
          length = view->byte_length();
        }
      }
      if (!buffer) {
        return InvalidArgumentError("binding %zu: expected a hal.buffer or hal.buffer_view, got "
                                    "%s",
                                    i,
                                    value->ref.is_null() ? "null"
                                    : value->ref.type()  ? value->ref.type()->name
                                                         : "(untyped)");
      }
      bindings[i] = ohal::BufferRef{buffer, 0, length};
    }
    binding_count = list->size();
  }
  return command_buffer->Dispatch(
      executable, uint32_t(call.i32(k + 1)),
      ohal::WorkgroupCount{uint32_t(call.i32(k + 2)), uint32_t(call.i32(k + 3)),
                           uint32_t(call.i32(k + 4))},
      std::span<const uint32_t>(constants, constant_count),
      std::span<const ohal::BufferRef>(bindings, binding_count));
}

// (command_buffer, executable, ordinal, x, y, z, constants, bindings).
Status CommandBufferDispatch(vm::NativeCall& call) {
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kCommandBufferType, &command_buffer));
  return RecordDispatch(call, 1, command_buffer);
}

//===----------------------------------------------------------------------===//
// Executables
//===----------------------------------------------------------------------===//

// (device, index) -> executable prepared from the calling module's
// executable |index|; cached per context.
Status ExecutableCreate(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  OSPREY_ASSIGN_OR_RETURN(DeviceSlot * slot, State(call)->Slot(device, "argument 0"));
  if (!call.caller()) {
    return FailedPreconditionError(
        "hal.executable.create reads the calling module's executable table and must be called "
        "from bytecode");
  }
  if (call.i32(1) < 0) return InvalidArgumentError("argument 1 (index) is negative");
  OSPREY_ASSIGN_OR_RETURN(ohal::Executable * executable,
                          State(call)->GetExecutable(slot, call.caller(), uint32_t(call.i32(1))));
  call.set_ref(0, vm::Ref(executable, &kExecutableType));
  return OkStatus();
}

// (executable, name) -> ordinal of the export called |name|.
Status ExecutableLookupExport(vm::NativeCall& call) {
  ohal::Executable* executable = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kExecutableType, &executable));
  char name[128];
  OSPREY_RETURN_IF_ERROR(GetText(call, 1, name, sizeof(name)));
  OSPREY_ASSIGN_OR_RETURN(uint32_t ordinal, executable->LookupExport(name));
  call.set_i32(0, int32_t(ordinal));
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// Semaphores and queue
//===----------------------------------------------------------------------===//

// (device, initial_value) -> semaphore
Status SemaphoreCreate(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  OSPREY_ASSIGN_OR_RETURN(auto semaphore, device->CreateSemaphore(uint64_t(call.i64(1))));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(semaphore), &kSemaphoreType));
  return OkStatus();
}

Status SemaphoreQuery(vm::NativeCall& call) {
  ohal::Semaphore* semaphore = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kSemaphoreType, &semaphore));
  OSPREY_ASSIGN_OR_RETURN(uint64_t value, semaphore->Query());
  call.set_i64(0, int64_t(value));
  return OkStatus();
}

Status SemaphoreSignal(vm::NativeCall& call) {
  ohal::Semaphore* semaphore = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kSemaphoreType, &semaphore));
  return semaphore->Signal(uint64_t(call.i64(1)));
}

// (semaphore, value): blocks until the value is reached; a failed
// semaphore returns its failure.
Status SemaphoreWait(vm::NativeCall& call) {
  ohal::Semaphore* semaphore = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kSemaphoreType, &semaphore));
  return semaphore->Wait(uint64_t(call.i64(1)), platform::kInfiniteFuture);
}

// (device, wait_semaphore, wait_value, signal_semaphore, signal_value,
//  command_buffer). Null semaphores mean "none".
Status DeviceQueueExecute(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  ohal::Semaphore* wait = nullptr;
  if (!call.ref(1).is_null()) OSPREY_RETURN_IF_ERROR(call.GetRef(1, &kSemaphoreType, &wait));
  ohal::Semaphore* signal = nullptr;
  if (!call.ref(3).is_null()) OSPREY_RETURN_IF_ERROR(call.GetRef(3, &kSemaphoreType, &signal));
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(5, &kCommandBufferType, &command_buffer));
  const uint64_t wait_value = uint64_t(call.i64(2));
  const uint64_t signal_value = uint64_t(call.i64(4));
  ohal::SemaphoreList wait_list{std::span<ohal::Semaphore* const>(&wait, wait ? 1 : 0),
                                std::span<const uint64_t>(&wait_value, wait ? 1 : 0)};
  ohal::SemaphoreList signal_list{std::span<ohal::Semaphore* const>(&signal, signal ? 1 : 0),
                                  std::span<const uint64_t>(&signal_value, signal ? 1 : 0)};
  ohal::CommandBuffer* const command_buffers[1] = {command_buffer};
  return device->QueueExecute(wait_list, command_buffers, signal_list);
}

// (device, command_buffer): submits and blocks until the work finished;
// returns the work's failure if it failed.
Status DeviceQueueExecuteSync(vm::NativeCall& call) {
  ohal::Device* device = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kDeviceType, &device));
  ohal::CommandBuffer* command_buffer = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(1, &kCommandBufferType, &command_buffer));
  OSPREY_ASSIGN_OR_RETURN(DeviceSlot * slot, State(call)->Slot(device, "argument 0"));
  return State(call)->ExecuteSync(slot, command_buffer);
}

//===----------------------------------------------------------------------===//
// hal_inline
//===----------------------------------------------------------------------===//

// (length) -> buffer: host-local, device-visible, default usage.
Status InlineBufferAllocate(vm::NativeCall& call) {
  OSPREY_RETURN_IF_ERROR(CheckNonNegative(call.i64(0), 0, "length"));
  ohal::BufferParams params;
  params.type = ohal::MemoryType::kHostLocal | ohal::MemoryType::kDeviceVisible;
  params.usage = ohal::BufferUsage::kDefault;
  params.access = ohal::MemoryAccess::kAll;
  OSPREY_ASSIGN_OR_RETURN(
      auto buffer,
      State(call)->device()->allocator()->AllocateBuffer(params, ohal::DeviceSize(call.i64(0))),
      "allocating %lld bytes", (long long)call.i64(0));
  call.set_ref(0, vm::Ref::FromRefPtr(std::move(buffer), &kBufferType));
  return OkStatus();
}

// (index) -> executable of the calling module, cached per context.
Status InlineExecutableCreate(vm::NativeCall& call) {
  if (!call.caller()) {
    return FailedPreconditionError(
        "hal_inline.executable.create reads the calling module's executable table and must be "
        "called from bytecode");
  }
  if (call.i32(0) < 0) return InvalidArgumentError("argument 0 (index) is negative");
  OSPREY_ASSIGN_OR_RETURN(ohal::Executable * executable,
                          State(call)->GetExecutable(call.caller(), uint32_t(call.i32(0))));
  call.set_ref(0, vm::Ref(executable, &kExecutableType));
  return OkStatus();
}

// (executable, ordinal, x, y, z, constants, bindings): runs the dispatch
// to completion. Arguments as for hal.command_buffer.dispatch.
Status InlineDispatch(vm::NativeCall& call) {
  ohal::Device* device = State(call)->device();
  OSPREY_ASSIGN_OR_RETURN(auto command_buffer,
                          device->CreateCommandBuffer(ohal::CommandBufferMode::kOneShot));
  OSPREY_RETURN_IF_ERROR(command_buffer->Begin());
  OSPREY_RETURN_IF_ERROR(RecordDispatch(call, 0, command_buffer.get()));
  OSPREY_RETURN_IF_ERROR(command_buffer->End());
  return State(call)->ExecuteSync(command_buffer.get());
}

//===----------------------------------------------------------------------===//
// Function tables
//===----------------------------------------------------------------------===//

constexpr vm::NativeFunction kFunctions[] = {
    {"device", ":r", DeviceSelf},
    {"devices.count", ":i", DevicesCount},
    {"devices.get", "i:r", DevicesGet},
    {"devices.select", "r:r", DevicesSelect},
    {"device.allocator", "r:r", DeviceAllocator},
    {"device.query.i64", "rr:iI", DeviceQueryI64},
    {"device.queue.execute", "rrIrIr:", DeviceQueueExecute},
    {"device.queue.execute_sync", "rr:", DeviceQueueExecuteSync},
    {"allocator.allocate", "riiiI:r", AllocatorAllocate},
    {"allocator.compatibility", "riiI:i", AllocatorCompatibility},
    {"buffer.length", "r:I", BufferLength},
    {"buffer.subspan", "rII:r", BufferSubspan},
    {"buffer.wrap_rodata", "rr:r", BufferWrapRodata},
    {"buffer_view.create", "rIIir:r", BufferViewCreate},
    {"buffer_view.buffer", "r:r", BufferViewBuffer},
    {"buffer_view.element_type", "r:i", BufferViewElementType},
    {"buffer_view.rank", "r:i", BufferViewRank},
    {"buffer_view.dim", "ri:I", BufferViewDim},
    {"buffer_view.byte_length", "r:I", BufferViewByteLength},
    {"buffer_view.assert", "rrir:", BufferViewAssert},
    {"command_buffer.create", "ri:r", CommandBufferCreate},
    {"command_buffer.begin", "r:", CommandBufferBegin},
    {"command_buffer.end", "r:", CommandBufferEnd},
    {"command_buffer.execution_barrier", "r:", CommandBufferBarrier},
    {"command_buffer.fill_buffer", "rrIIii:", CommandBufferFill},
    {"command_buffer.copy_buffer", "rrIrII:", CommandBufferCopy},
    {"command_buffer.dispatch", "rriiiirr:", CommandBufferDispatch},
    {"executable.create", "ri:r", ExecutableCreate},
    {"executable.lookup_export", "rr:i", ExecutableLookupExport},
    {"semaphore.create", "rI:r", SemaphoreCreate},
    {"semaphore.query", "r:I", SemaphoreQuery},
    {"semaphore.signal", "rI:", SemaphoreSignal},
    {"semaphore.wait", "rI:", SemaphoreWait},
};

constexpr vm::NativeFunction kInlineFunctions[] = {
    {"buffer.allocate", "I:r", InlineBufferAllocate},
    {"buffer.length", "r:I", BufferLength},
    {"buffer.subspan", "rII:r", BufferSubspan},
    {"buffer_view.create", "rIIir:r", BufferViewCreate},
    {"buffer_view.buffer", "r:r", BufferViewBuffer},
    {"buffer_view.element_type", "r:i", BufferViewElementType},
    {"buffer_view.rank", "r:i", BufferViewRank},
    {"buffer_view.dim", "ri:I", BufferViewDim},
    {"buffer_view.byte_length", "r:I", BufferViewByteLength},
    {"buffer_view.assert", "rrir:", BufferViewAssert},
    {"executable.create", "i:r", InlineExecutableCreate},
    {"executable.lookup_export", "rr:i", ExecutableLookupExport},
    {"dispatch", "riiiirr:", InlineDispatch},
};

StatusOr<ref_ptr<vm::Module>> Create(const char* name,
                                     std::span<const ref_ptr<ohal::Device>> devices,
                                     std::span<const vm::NativeFunction> functions,
                                     Allocator* allocator) {
  if (devices.empty()) return InvalidArgumentError("the %s module needs a device", name);
  if (devices.size() > kMaxModuleDevices) {
    return InvalidArgumentError("the %s module takes at most %zu devices, got %zu", name,
                                kMaxModuleDevices, devices.size());
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i]) return InvalidArgumentError("the %s module: device %zu is null", name, i);
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return InvalidArgumentError("the %s module: device '%s' is given twice", name,
                                    devices[i]->id());
      }
    }
  }
  OSPREY_ASSIGN_OR_RETURN(auto module, MakeRef<HalModule>(allocator, name, devices, functions));
  OSPREY_RETURN_IF_ERROR(module->Validate());
  return ref_ptr<vm::Module>(std::move(module));
}

}  // namespace

std::span<const vm::NativeFunction> ModuleFunctions() { return kFunctions; }
std::span<const vm::NativeFunction> InlineModuleFunctions() { return kInlineFunctions; }

StatusOr<ref_ptr<vm::Module>> CreateModule(std::span<const ref_ptr<ohal::Device>> devices,
                                           Allocator* allocator) {
  return Create("hal", devices, kFunctions, allocator);
}

StatusOr<ref_ptr<vm::Module>> CreateModule(ref_ptr<ohal::Device> device, Allocator* allocator) {
  return Create("hal", std::span<const ref_ptr<ohal::Device>>(&device, device ? 1 : 0),
                kFunctions, allocator);
}

StatusOr<ref_ptr<vm::Module>> CreateInlineModule(ref_ptr<ohal::Device> device,
                                                 Allocator* allocator) {
  return Create("hal_inline", std::span<const ref_ptr<ohal::Device>>(&device, device ? 1 : 0),
                kInlineFunctions, allocator);
}

}  // namespace osprey::modules::hal
