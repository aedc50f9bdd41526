// C API: statuses, instances, devices and buffer views.
#include <string.h>

#include <new>

#include "drivers/init.h"
#include "runtime/modules/hal/hal_module.h"
#include "runtime/embed/internal.h"
#include "runtime/embed/osprey.h"

using osprey::Allocator;
using osprey::MakeRef;
using osprey::ref_ptr;
using osprey::Status;
using osprey::StatusCode;
namespace hal = osprey::hal;

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

struct osprey_status_t {
  Status status;
  char* text = nullptr;  // "CODE: message", from the default allocator.
};

namespace osprey::embed {

namespace {
// Returned when there is no memory to report an error; never freed.
osprey_status_t* OutOfMemoryStatus() {
  static osprey_status_t status{Status(StatusCode::kResourceExhausted), nullptr};
  return &status;
}
}  // namespace

osprey_status_t* ToCStatus(Status status) {
  if (status.ok()) return nullptr;
  Allocator* allocator = Allocator::Default();
  auto wrapper = allocator->New<osprey_status_t>();
  if (!wrapper.ok()) return OutOfMemoryStatus();
  osprey_status_t* result = *wrapper;
  result->status = std::move(status);
  const size_t length = result->status.ToString(nullptr, 0);
  void* text = nullptr;
  if (allocator->Allocate(length + 1, 1, &text).ok()) {
    result->status.ToString(static_cast<char*>(text), length + 1);
    result->text = static_cast<char*>(text);
  }
  return result;
}

}  // namespace osprey::embed

using osprey::embed::FromC;
using osprey::embed::ToC;
using osprey::embed::ToCStatus;

extern "C" {

osprey_status_code_t osprey_status_code(const osprey_status_t* status) {
  return status ? osprey_status_code_t(status->status.code()) : OSPREY_STATUS_OK;
}

const char* osprey_status_message(const osprey_status_t* status) {
  if (!status) return "OK";
  if (status->text) return status->text;
  return osprey::StatusCodeName(status->status.code());
}

void osprey_status_free(osprey_status_t* status) {
  if (!status || status == osprey::embed::OutOfMemoryStatus()) return;
  Allocator* allocator = Allocator::Default();
  allocator->Free(status->text);
  allocator->Delete(status);
}

const char* osprey_status_code_name(osprey_status_code_t code) {
  return osprey::StatusCodeName(StatusCode(code));
}

}  // extern "C"

//===----------------------------------------------------------------------===//
// Instance
//===----------------------------------------------------------------------===//

namespace {

// Adapts an osprey_allocator_t to osprey::Allocator. Lives in the struct's
// reserved words, so it needs no memory of its own and lasts as long as
// the caller keeps the struct.
class CAllocator final : public Allocator {
 public:
  explicit CAllocator(osprey_allocator_t* allocator) : allocator_(allocator) {}
  Status Allocate(size_t size, size_t alignment, void** out_ptr) override {
    *out_ptr = allocator_->allocate(allocator_->user_data, size ? size : 1, alignment);
    if (!*out_ptr) {
      return osprey::ResourceExhaustedError("application allocator refused %zu bytes", size);
    }
    return osprey::OkStatus();
  }
  void Free(void* ptr) override {
    if (ptr) allocator_->free(allocator_->user_data, ptr);
  }

 private:
  osprey_allocator_t* allocator_;
};
static_assert(sizeof(CAllocator) <= sizeof(osprey_allocator_t::reserved));
static_assert(alignof(CAllocator) <= alignof(void*));

osprey_status_t* CreateInstance(Allocator* allocator, osprey_instance_t** out_instance) {
  if (!out_instance) return ToCStatus(osprey::InvalidArgumentError("out_instance is null"));
  *out_instance = nullptr;
  auto instance = MakeRef<osprey_instance_t>(allocator);
  if (!instance.ok()) return ToCStatus(std::move(instance).status());
  (*instance)->host_allocator = allocator;
  Status status = osprey::drivers::RegisterEnabledDrivers((*instance)->registry);
  if (!status.ok()) return ToCStatus(std::move(status).Annotate("registering drivers"));
  auto vm_instance = osprey::vm::Instance::Create(allocator);
  if (!vm_instance.ok()) return ToCStatus(std::move(vm_instance).status());
  (*instance)->vm_instance = std::move(*vm_instance);
  status = osprey::modules::hal::RegisterTypes((*instance)->vm_instance.get());
  if (!status.ok()) return ToCStatus(std::move(status));
  *out_instance = instance->release();
  return nullptr;
}

}  // namespace

extern "C" {

osprey_status_t* osprey_instance_create(osprey_instance_t** out_instance) {
  return CreateInstance(Allocator::Default(), out_instance);
}

osprey_status_t* osprey_instance_create_with_allocator(osprey_allocator_t* allocator,
                                                       osprey_instance_t** out_instance) {
  if (out_instance) *out_instance = nullptr;
  if (!allocator || !allocator->allocate || !allocator->free) {
    return ToCStatus(osprey::InvalidArgumentError(
        "the allocator needs both allocate and free functions"));
  }
  Allocator* adapter = new (allocator->reserved) CAllocator(allocator);
  return CreateInstance(adapter, out_instance);
}

void osprey_instance_retain(osprey_instance_t* instance) {
  if (instance) instance->Retain();
}
void osprey_instance_release(osprey_instance_t* instance) {
  if (instance) instance->Release();
}

size_t osprey_instance_driver_count(const osprey_instance_t* instance) {
  return instance ? instance->registry.size() : 0;
}

const char* osprey_instance_driver_name(const osprey_instance_t* instance, size_t index) {
  if (!instance || index >= instance->registry.size()) return nullptr;
  return instance->registry.factory(index)->name;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

osprey_status_t* osprey_device_create(osprey_instance_t* instance, const char* name,
                                      const osprey_device_param_t* params, size_t param_count,
                                      osprey_device_t** out_device) {
  if (!out_device) return ToCStatus(osprey::InvalidArgumentError("out_device is null"));
  *out_device = nullptr;
  if (!instance || !name) {
    return ToCStatus(osprey::InvalidArgumentError("instance and device name are required"));
  }
  if (param_count > 0 && !params) {
    return ToCStatus(osprey::InvalidArgumentError("%zu device params but params is null",
                                                  param_count));
  }
  static_assert(sizeof(osprey_device_param_t) == sizeof(hal::DeviceParam));
  std::span<const hal::DeviceParam> hal_params(
      reinterpret_cast<const hal::DeviceParam*>(params), param_count);
  auto device = instance->registry.CreateDevice(name, hal_params, instance->host_allocator);
  if (!device.ok()) {
    return ToCStatus(std::move(device).status().Annotate("creating device '%s'", name));
  }
  auto handle = MakeRef<osprey_device_t>(instance->host_allocator);
  if (!handle.ok()) return ToCStatus(std::move(handle).status());
  (*handle)->instance = ref_ptr<osprey_instance_t>(instance);
  (*handle)->device = std::move(*device);
  *out_device = handle->release();
  return nullptr;
}

void osprey_device_retain(osprey_device_t* device) {
  if (device) device->Retain();
}
void osprey_device_release(osprey_device_t* device) {
  if (device) device->Release();
}
const char* osprey_device_name(const osprey_device_t* device) {
  return device ? device->device->id() : "";
}
osprey_status_t* osprey_device_trim(osprey_device_t* device) {
  if (!device) return ToCStatus(osprey::InvalidArgumentError("device is required"));
  return ToCStatus(device->device->Trim());
}

osprey_status_t* osprey_device_query_i64(osprey_device_t* device, const char* key,
                                         int64_t* out_value) {
  if (!device || !key || !out_value) {
    return ToCStatus(osprey::InvalidArgumentError("device, key and out_value are required"));
  }
  auto value = device->device->QueryI64(key);
  if (!value.ok()) return ToCStatus(std::move(value).status());
  *out_value = *value;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Buffer views
//===----------------------------------------------------------------------===//

size_t osprey_element_type_byte_size(osprey_element_type_t type) {
  return size_t(hal::ElementByteSize(hal::ElementType(type)));
}

}  // extern "C"

namespace {

// Checks shape and type and returns the byte length the tensor needs.
Status ValidateTensor(const int64_t* shape, size_t rank, osprey_element_type_t element_type,
                      size_t byte_length, uint64_t* out_needed) {
  if (rank > OSPREY_MAX_RANK) {
    return osprey::InvalidArgumentError("rank %zu exceeds the maximum of %d", rank,
                                        OSPREY_MAX_RANK);
  }
  if (rank > 0 && !shape) return osprey::InvalidArgumentError("rank %zu but shape is null", rank);
  const hal::ElementType type = hal::ElementType(element_type);
  if (strcmp(hal::ElementTypeName(type), "unknown") == 0) {
    return osprey::InvalidArgumentError("element type 0x%x is not valid",
                                        unsigned(element_type));
  }
  uint64_t needed = hal::ElementByteSize(type);
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      return osprey::InvalidArgumentError("dimension %zu is negative (%lld)", i,
                                          (long long)shape[i]);
    }
    if (shape[i] != 0 && needed > (uint64_t(1) << 62) / uint64_t(shape[i])) {
      return osprey::InvalidArgumentError("shape overflows at dimension %zu", i);
    }
    needed *= uint64_t(shape[i]);
  }
  if (needed != byte_length) {
    return osprey::InvalidArgumentError("shape needs %llu bytes but %zu were given",
                                        (unsigned long long)needed, byte_length);
  }
  *out_needed = needed;
  return osprey::OkStatus();
}

hal::BufferParams HostVisibleParams() {
  hal::BufferParams params;
  params.type = hal::MemoryType::kHostVisible | hal::MemoryType::kDeviceVisible;
  params.usage = hal::BufferUsage::kDefault;
  params.access = hal::MemoryAccess::kAll;
  return params;
}

Status CreateView(osprey_device_t* device, ref_ptr<hal::Buffer> buffer, const int64_t* shape,
                  size_t rank, osprey_element_type_t element_type,
                  osprey_buffer_view_t** out_view) {
  OSPREY_ASSIGN_OR_RETURN(
      auto view,
      hal::BufferView::Create(std::move(buffer), std::span<const int64_t>(shape, rank),
                              hal::ElementType(element_type), hal::Encoding::kDenseRowMajor,
                              device->device->host_allocator()));
  *out_view = ToC(view.release());
  return osprey::OkStatus();
}

Status CreateCopy(osprey_device_t* device, const int64_t* shape, size_t rank,
                  osprey_element_type_t element_type, const void* data, size_t byte_length,
                  osprey_buffer_view_t** out_view) {
  if (!device || !out_view) return osprey::InvalidArgumentError("device and out_view required");
  // Without data the tensor is zero-filled and |byte_length| may be 0.
  uint64_t needed = 0;
  if (!data && byte_length == 0 && rank <= OSPREY_MAX_RANK && (shape || rank == 0)) {
    byte_length = osprey_element_type_byte_size(element_type);
    for (size_t i = 0; i < rank; ++i) {
      byte_length *= shape[i] < 0 ? 0 : size_t(shape[i]);
    }
  }
  OSPREY_RETURN_IF_ERROR(ValidateTensor(shape, rank, element_type, byte_length, &needed));
  hal::Allocator* allocator = device->device->allocator();
  OSPREY_ASSIGN_OR_RETURN(auto buffer, allocator->AllocateBuffer(HostVisibleParams(), needed),
                          "allocating %llu bytes", (unsigned long long)needed);
  if (needed > 0) {
    if (data) {
      OSPREY_RETURN_IF_ERROR(buffer->WriteData(0, data, needed));
    } else {
      hal::MappedMemory mapping;
      OSPREY_RETURN_IF_ERROR(
          buffer->MapRange(hal::MemoryAccess::kDiscardWrite, 0, needed, &mapping));
      OSPREY_ASSIGN_OR_RETURN(auto contents, mapping.MutableContents());
      memset(contents.data(), 0, contents.size());
    }
  }
  return CreateView(device, std::move(buffer), shape, rank, element_type, out_view);
}

}  // namespace

extern "C" {

osprey_status_t* osprey_buffer_view_create(osprey_device_t* device, const int64_t* shape,
                                           size_t rank, osprey_element_type_t element_type,
                                           const void* data, size_t byte_length,
                                           osprey_buffer_view_t** out_view) {
  if (out_view) *out_view = nullptr;
  return ToCStatus(CreateCopy(device, shape, rank, element_type, data, byte_length, out_view));
}

osprey_status_t* osprey_buffer_view_wrap(osprey_device_t* device, const int64_t* shape,
                                         size_t rank, osprey_element_type_t element_type,
                                         void* data, size_t byte_length,
                                         osprey_release_fn_t release, void* release_user_data,
                                         osprey_buffer_view_t** out_view) {
  if (out_view) *out_view = nullptr;
  if (!device || !out_view || (!data && byte_length)) {
    return ToCStatus(osprey::InvalidArgumentError("device, data and out_view are required"));
  }
  uint64_t needed = 0;
  Status status = ValidateTensor(shape, rank, element_type, byte_length, &needed);
  if (!status.ok()) return ToCStatus(std::move(status));
  hal::ReleaseCallback callback{release, release_user_data};
  auto buffer = device->device->allocator()->ImportBuffer(HostVisibleParams(), data, needed,
                                                          callback);
  if (!buffer.ok()) {
    return ToCStatus(std::move(buffer).status().Annotate("importing %zu bytes of host memory",
                                                         byte_length));
  }
  return ToCStatus(
      CreateView(device, std::move(*buffer), shape, rank, element_type, out_view));
}

void osprey_buffer_view_retain(osprey_buffer_view_t* view) {
  if (view) FromC(view)->Retain();
}
void osprey_buffer_view_release(osprey_buffer_view_t* view) {
  if (view) FromC(view)->Release();
}

size_t osprey_buffer_view_rank(const osprey_buffer_view_t* view) {
  return view ? FromC(view)->rank() : 0;
}
int64_t osprey_buffer_view_dim(const osprey_buffer_view_t* view, size_t index) {
  if (!view || index >= FromC(view)->rank()) return -1;
  return FromC(view)->dim(index);
}
osprey_element_type_t osprey_buffer_view_element_type(const osprey_buffer_view_t* view) {
  return view ? osprey_element_type_t(FromC(view)->element_type()) : OSPREY_ELEMENT_TYPE_NONE;
}
int64_t osprey_buffer_view_element_count(const osprey_buffer_view_t* view) {
  return view ? FromC(view)->element_count() : 0;
}
size_t osprey_buffer_view_byte_length(const osprey_buffer_view_t* view) {
  return view ? size_t(FromC(view)->byte_length()) : 0;
}
size_t osprey_buffer_view_format_shape(const osprey_buffer_view_t* view, char* buffer,
                                       size_t capacity) {
  if (!view) {
    if (capacity) buffer[0] = '\0';
    return 0;
  }
  return FromC(view)->FormatShape(buffer, capacity);
}

osprey_status_t* osprey_buffer_view_read(const osprey_buffer_view_t* view, void* data,
                                         size_t capacity) {
  if (!view || (!data && capacity)) {
    return ToCStatus(osprey::InvalidArgumentError("view and data are required"));
  }
  const hal::BufferView* hal_view = FromC(view);
  const size_t length = size_t(hal_view->byte_length());
  if (capacity < length) {
    return ToCStatus(osprey::OutOfRangeError(
        "buffer view holds %zu bytes but the destination has room for %zu", length, capacity));
  }
  if (length == 0) return nullptr;
  return ToCStatus(hal_view->buffer()->ReadData(0, data, length));
}

}  // extern "C"
