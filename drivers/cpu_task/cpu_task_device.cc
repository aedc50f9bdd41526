// cpu-task device: resources from hal/local, queue submissions as task
// graphs on a runtime/task executor.
#include "drivers/cpu_task/cpu_task_device.h"

#include <string.h>

#include <new>

#include "hal/local/host_semaphore.h"
#include "hal/local/local_dispatch.h"
#include "hal/local/local_executable_cache.h"
#include "hal/local/queue_submission.h"
#include "hal/local/recording_command_buffer.h"
#include "runtime/base/logging.h"

namespace osprey::drivers::cpu_task {

using hal::local::HostSemaphore;
using hal::local::SemaphoreTimepoint;

//===----------------------------------------------------------------------===//
// Device params
//===----------------------------------------------------------------------===//

namespace {

// Smallest explicit worker stack: the worker loop and a dispatch's frame.
constexpr uint32_t kMinWorkerStackSize = 4096;
// Sanity bound on priorities; the platform checks its own range when the
// workers start.
constexpr uint32_t kMaxWorkerPriority = 1024;

bool ParseUint32Param(const char* text, uint32_t* out_value) {
  uint64_t value = 0;
  if (!hal::ParseDeviceParamUint64(text, UINT32_MAX, &value)) return false;
  *out_value = uint32_t(value);
  return true;
}

}  // namespace

Status ParseDeviceParams(std::span<const hal::DeviceParam> params,
                         CpuTaskDeviceOptions* options) {
  for (const hal::DeviceParam& param : params) {
    const char* key = param.key ? param.key : "";
    const char* value = param.value ? param.value : "";
    if (strcmp(key, "task_workers") == 0) {
      uint32_t count = 0;
      if (!ParseUint32Param(value, &count) || count == 0 || count > task::Executor::kMaxWorkers) {
        return InvalidArgumentError("task_workers='%s' must be a number in [1, %u]", value,
                                    unsigned(task::Executor::kMaxWorkers));
      }
      options->worker_count = count;
    } else if (strcmp(key, "task_affinity") == 0) {
      if (strcmp(value, "none") == 0) {
        options->pin_workers = false;
      } else if (ParseUint32Param(value, &options->first_processor)) {
        options->pin_workers = true;
      } else {
        return InvalidArgumentError(
            "task_affinity='%s' must be 'none' or the first processor index", value);
      }
    } else if (strcmp(key, "task_local_memory") == 0) {
      uint32_t bytes = 0;
      if (!ParseUint32Param(value, &bytes) || bytes > (64u << 20)) {
        return InvalidArgumentError("task_local_memory='%s' must be a byte count up to 64 MiB",
                                    value);
      }
      options->worker_local_memory_size = bytes;
    } else if (strcmp(key, "task_stack_size") == 0) {
      uint32_t bytes = 0;
      if (!ParseUint32Param(value, &bytes) || (bytes != 0 && bytes < kMinWorkerStackSize) ||
          bytes > (64u << 20)) {
        return InvalidArgumentError(
            "task_stack_size='%s' must be 0 (platform default) or a byte count in [%u, 64 MiB]",
            value, unsigned(kMinWorkerStackSize));
      }
      options->worker_stack_size = bytes;
    } else if (strcmp(key, "task_priority") == 0) {
      uint32_t priority = 0;
      if (strcmp(value, "default") == 0) {
        options->worker_priority = -1;
      } else if (ParseUint32Param(value, &priority) && priority <= kMaxWorkerPriority) {
        options->worker_priority = int32_t(priority);
      } else {
        return InvalidArgumentError(
            "task_priority='%s' must be 'default' or a priority in [0, %u] (the platform may "
            "allow fewer)",
            value, unsigned(kMaxWorkerPriority));
      }
    } else {
      return InvalidArgumentError(
          "unknown cpu-task device param '%s' (known: task_workers, task_affinity, "
          "task_local_memory, task_stack_size, task_priority)",
          key);
    }
  }
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

StatusOr<ref_ptr<CpuTaskDevice>> CpuTaskDevice::Create(const CpuTaskDeviceOptions& options,
                                                       osprey::Allocator* host_allocator) {
  return CreateWithLoaders(options, &hal::local::DefaultLoaderSet::Create, host_allocator);
}

StatusOr<ref_ptr<CpuTaskDevice>> CpuTaskDevice::CreateWithLoaders(
    const CpuTaskDeviceOptions& options, hal::local::LoaderSetFactory create_loaders,
    osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("cpu-task device needs a host allocator");
  if (!create_loaders) {
    return InvalidArgumentError("cpu-task device needs a loader set factory (got null)");
  }
  OSPREY_ASSIGN_OR_RETURN(auto device, MakeRef<CpuTaskDevice>(host_allocator, options, host_allocator));
  OSPREY_ASSIGN_OR_RETURN(device->allocator_, hal::local::HeapAllocator::Create(host_allocator),
                          "creating the cpu-task allocator");
  OSPREY_ASSIGN_OR_RETURN(
      device->loaders_,
      create_loaders(options.static_libraries, host_allocator),
      "creating the cpu-task executable loaders");
  task::ExecutorOptions executor_options;
  executor_options.worker_count = options.worker_count;
  executor_options.pin_workers = options.pin_workers;
  executor_options.first_processor = options.first_processor;
  executor_options.worker_local_memory_size = options.worker_local_memory_size;
  executor_options.worker_stack_size = options.worker_stack_size;
  executor_options.worker_priority = options.worker_priority;
  executor_options.name = "cpu-task";
  OSPREY_ASSIGN_OR_RETURN(device->executor_,
                          task::Executor::Create(executor_options, host_allocator),
                          "creating the cpu-task worker pool");
  return device;
}

CpuTaskDevice::~CpuTaskDevice() {
  // Cancels and drains in-flight submissions (failing their signal
  // semaphores) before the resources they use go away.
  executor_.reset();
}

Status CpuTaskDevice::Trim() {
  OSPREY_RETURN_IF_ERROR(executor_->WaitIdle(platform::kInfiniteFuture),
                         "waiting for cpu-task work to retire before trimming");
  executor_->TrimPool();
  return OkStatus();
}

StatusOr<ref_ptr<hal::CommandBuffer>> CpuTaskDevice::CreateCommandBuffer(
    hal::CommandBufferMode mode) {
  hal::local::RecordingOptions options;
  options.local_executables_only = true;
  options.max_local_memory_size = options_.worker_local_memory_size;
  OSPREY_ASSIGN_OR_RETURN(
      auto command_buffer,
      hal::local::RecordingCommandBuffer::Create(mode, host_allocator_, options));
  return ref_ptr<hal::CommandBuffer>(std::move(command_buffer));
}

StatusOr<ref_ptr<hal::Semaphore>> CpuTaskDevice::CreateSemaphore(uint64_t initial_value) {
  OSPREY_ASSIGN_OR_RETURN(auto semaphore, HostSemaphore::Create(initial_value, host_allocator_));
  return ref_ptr<hal::Semaphore>(std::move(semaphore));
}

StatusOr<ref_ptr<hal::ExecutableCache>> CpuTaskDevice::CreateExecutableCache() {
  OSPREY_ASSIGN_OR_RETURN(
      auto cache, hal::local::LocalExecutableCache::Create(
                      loaders_->loaders(), options_.imports,
                      ref_ptr<RefObject>(loaders_.get()), host_allocator_));
  return ref_ptr<hal::ExecutableCache>(std::move(cache));
}

//===----------------------------------------------------------------------===//
// Queue submissions
//===----------------------------------------------------------------------===//

namespace {

// What one QueueExecute keeps until it completes; lives in the submission's
// scratch arena. Resources are retained by hand (the arena runs no
// destructors) and released in OnComplete.
struct QueueWork {
  hal::CommandBuffer** command_buffers;
  size_t command_buffer_count;
  hal::Semaphore** wait_semaphores;
  size_t wait_count;
  hal::Semaphore** signal_semaphores;
  const uint64_t* signal_values;
  size_t signal_count;
};

// A wait semaphore turned into a wait task through a timepoint.
struct SemaphoreWait {
  HostSemaphore* semaphore;
  uint64_t value;
  task::WaitTask* token = nullptr;
  SemaphoreTimepoint timepoint;
};

void OnTimepoint(void* user_data, HostSemaphore*, Status status) {
  auto* wait = static_cast<SemaphoreWait*>(user_data);
  task::ResolveWait(wait->token, std::move(status));
}

Status ArmSemaphoreWait(void* user_data, task::WaitTask* token) {
  auto* wait = static_cast<SemaphoreWait*>(user_data);
  wait->token = token;
  wait->semaphore->EnqueueTimepoint(&wait->timepoint, wait->value, &OnTimepoint, wait);
  return OkStatus();
}

bool DisarmSemaphoreWait(void* user_data, task::WaitTask*) {
  auto* wait = static_cast<SemaphoreWait*>(user_data);
  return wait->semaphore->CancelTimepoint(&wait->timepoint);
}

Status RunFill(void* user_data, const task::TaskContext&) {
  return hal::local::ExecuteFill(*static_cast<const hal::local::FillCommand*>(user_data));
}
Status RunUpdate(void* user_data, const task::TaskContext&) {
  return hal::local::ExecuteUpdate(*static_cast<const hal::local::UpdateCommand*>(user_data));
}
Status RunCopy(void* user_data, const task::TaskContext&) {
  return hal::local::ExecuteCopy(*static_cast<const hal::local::CopyCommand*>(user_data));
}
Status RunWorkgroups(void* user_data, uint32_t begin, uint32_t end,
                     const task::TaskContext& context) {
  auto* dispatch = static_cast<const hal::local::LocalDispatch*>(user_data);
  return dispatch->RunWorkgroups(begin, end, context.worker_id, context.local_memory.data(),
                                 uint32_t(context.local_memory.size()));
}

void OnComplete(void* user_data, Status status) {
  auto* work = static_cast<QueueWork*>(user_data);
  for (size_t i = 0; i < work->signal_count; ++i) {
    hal::Semaphore* semaphore = work->signal_semaphores[i];
    if (status.ok()) {
      Status signal_status = semaphore->Signal(work->signal_values[i]);
      if (!signal_status.ok()) {
        semaphore->Fail(std::move(signal_status)
                            .Annotate("signalling semaphore %zu to %llu after cpu-task work", i,
                                      (unsigned long long)work->signal_values[i]));
      }
    } else {
      semaphore->Fail(status.Clone());
    }
  }
  if (!status.ok() && work->signal_count == 0) {
    // Nothing else can report it: the caller asked for no signal.
    char text[512];
    status.ToString(text, sizeof(text));
    OSPREY_LOG_WARNING("cpu-task submission failed with no semaphore to report it: %s", text);
  }
  status.IgnoreError();
  for (size_t i = 0; i < work->signal_count; ++i) work->signal_semaphores[i]->Release();
  for (size_t i = 0; i < work->wait_count; ++i) work->wait_semaphores[i]->Release();
  for (size_t i = 0; i < work->command_buffer_count; ++i) work->command_buffers[i]->Release();
}

// Builds the task graph of one QueueExecute into |submission|.
class GraphBuilder {
 public:
  GraphBuilder(task::Submission* submission, uint32_t worker_count)
      : submission_(submission), worker_count_(worker_count) {}

  Status AddWaits(const hal::SemaphoreList& wait) {
    if (wait.size() == 0) return OkStatus();
    OSPREY_RETURN_IF_ERROR(BeginGroup(wait.size()));
    for (size_t i = 0; i < wait.size(); ++i) {
      OSPREY_ASSIGN_OR_RETURN(SemaphoreWait * state, submission_->New<SemaphoreWait>());
      // Every CPU device makes HostSemaphores (see the class comment).
      state->semaphore = static_cast<HostSemaphore*>(wait.semaphores[i]);
      state->value = wait.values[i];
      task::WaitSource source;
      source.arm = &ArmSemaphoreWait;
      source.disarm = &DisarmSemaphoreWait;
      source.user_data = state;
      source.name = "wait semaphore";
      OSPREY_ASSIGN_OR_RETURN(task::Task * task, submission_->AddWait(source));
      group_[group_size_++] = task;
    }
    return EndGroup();
  }

  Status AddCommandBuffer(const hal::local::RecordingCommandBuffer& command_buffer) {
    OSPREY_RETURN_IF_ERROR(BeginGroup(command_buffer.command_count()));
    size_t index = 0;
    for (const hal::local::Command* command = command_buffer.first_command(); command;
         command = command->next, ++index) {
      if (command->type == hal::local::CommandType::kBarrier) {
        OSPREY_RETURN_IF_ERROR(EndGroup());
        continue;
      }
      OSPREY_ASSIGN_OR_RETURN(task::Task * task, AddCommand(*command),
                              "command %zu (%s)", index,
                              hal::local::CommandTypeName(command->type));
      if (join_) OSPREY_RETURN_IF_ERROR(submission_->AddDependency(join_, task));
      group_[group_size_++] = task;
    }
    // Command buffers run in order: their boundary is a barrier.
    return EndGroup();
  }

 private:
  StatusOr<task::Task*> AddCommand(const hal::local::Command& command) {
    switch (command.type) {
      case hal::local::CommandType::kFill:
        return submission_->AddCall(&RunFill, const_cast<hal::local::Command*>(&command), "fill");
      case hal::local::CommandType::kUpdate:
        return submission_->AddCall(&RunUpdate, const_cast<hal::local::Command*>(&command),
                                    "update");
      case hal::local::CommandType::kCopy:
        return submission_->AddCall(&RunCopy, const_cast<hal::local::Command*>(&command), "copy");
      case hal::local::CommandType::kDispatch: {
        const auto& dispatch = static_cast<const hal::local::DispatchCommand&>(command);
        OSPREY_ASSIGN_OR_RETURN(hal::local::LocalDispatch * prepared,
                                submission_->New<hal::local::LocalDispatch>());
        OSPREY_RETURN_IF_ERROR(prepared->Prepare(dispatch, worker_count_, submission_->arena()));
        task::DispatchParams params;
        params.fn = &RunWorkgroups;
        params.user_data = prepared;
        params.tile_count = prepared->workgroup_total();
        params.local_memory_size = prepared->local_memory_size();
        params.name = dispatch.executable->export_info(dispatch.ordinal).name;
        return submission_->AddDispatch(params);
      }
      case hal::local::CommandType::kBarrier:
        break;
    }
    return InternalError("unexpected command type %d", int(command.type));
  }

  // Starts collecting up to |capacity| concurrent tasks.
  Status BeginGroup(size_t capacity) {
    group_size_ = 0;
    if (capacity > group_capacity_) {
      void* memory = nullptr;
      OSPREY_RETURN_IF_ERROR(
          submission_->Allocate(sizeof(task::Task*) * capacity, alignof(task::Task*), &memory));
      group_ = static_cast<task::Task**>(memory);
      group_capacity_ = capacity;
    }
    return OkStatus();
  }

  // Everything after this point depends on every task of the group.
  Status EndGroup() {
    if (group_size_ == 1) {
      join_ = group_[0];
    } else if (group_size_ > 1) {
      OSPREY_ASSIGN_OR_RETURN(task::Task * barrier, submission_->AddBarrier());
      for (size_t i = 0; i < group_size_; ++i) {
        OSPREY_RETURN_IF_ERROR(submission_->AddDependency(group_[i], barrier));
      }
      join_ = barrier;
    }
    group_size_ = 0;
    return OkStatus();
  }

  task::Submission* submission_;
  uint32_t worker_count_;
  task::Task* join_ = nullptr;
  task::Task** group_ = nullptr;
  size_t group_size_ = 0;
  size_t group_capacity_ = 0;
};

template <typename T>
StatusOr<T**> CopyPointers(task::Submission* submission, std::span<T* const> items) {
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(
      submission->Allocate(sizeof(T*) * (items.size() + 1), alignof(T*), &memory));
  T** copy = static_cast<T**>(memory);
  for (size_t i = 0; i < items.size(); ++i) copy[i] = items[i];
  return copy;
}

Status BuildSubmission(task::Submission* submission, uint32_t worker_count,
                       const hal::SemaphoreList& wait,
                       std::span<hal::CommandBuffer* const> command_buffers,
                       const hal::SemaphoreList& signal, QueueWork** out_work) {
  OSPREY_ASSIGN_OR_RETURN(QueueWork * work, submission->New<QueueWork>());
  OSPREY_ASSIGN_OR_RETURN(work->command_buffers,
                          CopyPointers<hal::CommandBuffer>(submission, command_buffers));
  work->command_buffer_count = command_buffers.size();
  OSPREY_ASSIGN_OR_RETURN(work->wait_semaphores,
                          CopyPointers<hal::Semaphore>(submission, wait.semaphores));
  work->wait_count = wait.size();
  OSPREY_ASSIGN_OR_RETURN(work->signal_semaphores,
                          CopyPointers<hal::Semaphore>(submission, signal.semaphores));
  void* values = nullptr;
  OSPREY_RETURN_IF_ERROR(
      submission->Allocate(sizeof(uint64_t) * (signal.size() + 1), alignof(uint64_t), &values));
  if (signal.size()) memcpy(values, signal.values.data(), sizeof(uint64_t) * signal.size());
  work->signal_values = static_cast<const uint64_t*>(values);
  work->signal_count = signal.size();

  GraphBuilder builder(submission, worker_count);
  OSPREY_RETURN_IF_ERROR(builder.AddWaits(wait), "adding %zu semaphore waits", wait.size());
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    // Every CPU device records into RecordingCommandBuffers.
    const auto* recording =
        static_cast<const hal::local::RecordingCommandBuffer*>(command_buffers[i]);
    OSPREY_RETURN_IF_ERROR(builder.AddCommandBuffer(*recording), "in command buffer %zu of %zu",
                           i, command_buffers.size());
  }
  *out_work = work;
  return OkStatus();
}

}  // namespace

Status CpuTaskDevice::QueueExecute(const hal::SemaphoreList& wait,
                                   std::span<hal::CommandBuffer* const> command_buffers,
                                   const hal::SemaphoreList& signal) {
  OSPREY_RETURN_IF_ERROR(
      hal::local::BeginQueueSubmission("cpu-task", wait, command_buffers, signal));

  // A wait semaphore that already failed fails the submission now, so the
  // signal semaphores carry the failure before QueueExecute returns.
  for (size_t i = 0; i < wait.size(); ++i) {
    auto current = wait.semaphores[i]->Query();
    if (current.ok()) continue;
    Status failure = std::move(current).status();
    failure.Annotate("wait semaphore %zu of %zu failed before cpu-task submission", i,
                     wait.size());
    for (size_t j = 0; j < signal.size(); ++j) signal.semaphores[j]->Fail(failure.Clone());
    if (signal.size() == 0) {
      char text[512];
      failure.ToString(text, sizeof(text));
      OSPREY_LOG_WARNING("cpu-task submission failed with no semaphore to report it: %s", text);
    }
    failure.IgnoreError();
    return OkStatus();
  }

  OSPREY_ASSIGN_OR_RETURN(task::Submission * submission, executor_->AcquireSubmission());
  QueueWork* work = nullptr;
  Status status = BuildSubmission(submission, executor_->worker_count(), wait, command_buffers,
                                  signal, &work);
  if (!status.ok()) {
    executor_->DiscardSubmission(submission);
    return std::move(status).Annotate("submitting to cpu-task");
  }
  for (size_t i = 0; i < work->command_buffer_count; ++i) static_cast<RefObject*>(work->command_buffers[i])->Retain();
  for (size_t i = 0; i < work->wait_count; ++i) work->wait_semaphores[i]->Retain();
  for (size_t i = 0; i < work->signal_count; ++i) work->signal_semaphores[i]->Retain();
  return executor_->Submit(submission, task::Completion{&OnComplete, work});
}

//===----------------------------------------------------------------------===//
// Host waits
//===----------------------------------------------------------------------===//

namespace {

// Shared by the timepoints of one kAny wait.
struct AnyWait {
  platform::Mutex mutex;
  platform::ConditionVariable condition;
  bool fired = false;
  bool reached = false;
  size_t callbacks_done = 0;
  Status failure;
};

struct AnyWaitEntry {
  AnyWait* wait;
  SemaphoreTimepoint timepoint;
};

void OnAnyTimepoint(void* user_data, HostSemaphore*, Status status) {
  auto* entry = static_cast<AnyWaitEntry*>(user_data);
  AnyWait* wait = entry->wait;
  platform::MutexLock lock(wait->mutex);
  if (status.ok()) {
    wait->reached = true;
  } else if (wait->failure.ok()) {
    wait->failure = std::move(status);
  }
  status.IgnoreError();
  wait->fired = true;
  ++wait->callbacks_done;
  wait->condition.NotifyAll();
}

}  // namespace

Status CpuTaskDevice::WaitSemaphores(hal::WaitMode mode, const hal::SemaphoreList& semaphores,
                                     int64_t deadline_ns) {
  if (mode == hal::WaitMode::kAll || semaphores.size() <= 1) {
    return hal::Device::WaitSemaphores(mode, semaphores, deadline_ns);
  }
  OSPREY_RETURN_IF_ERROR(semaphores.Validate("wait"));
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(host_allocator_->Allocate(sizeof(AnyWaitEntry) * semaphores.size(),
                                                   alignof(AnyWaitEntry), &memory),
                         "waiting for any of %zu semaphores", semaphores.size());
  auto* entries = static_cast<AnyWaitEntry*>(memory);
  AnyWait wait;
  for (size_t i = 0; i < semaphores.size(); ++i) {
    new (&entries[i]) AnyWaitEntry{&wait, SemaphoreTimepoint{}};
    static_cast<HostSemaphore*>(semaphores.semaphores[i])
        ->EnqueueTimepoint(&entries[i].timepoint, semaphores.values[i], &OnAnyTimepoint,
                           &entries[i]);
  }
  bool fired = false;
  {
    platform::MutexLock lock(wait.mutex);
    while (!wait.fired) {
      if (!wait.condition.WaitUntil(wait.mutex, deadline_ns) &&
          platform::MonotonicNanos() >= deadline_ns) {
        break;
      }
    }
    fired = wait.fired;
  }
  // Remove the timepoints that did not fire; wait for callbacks that are
  // running before the entries go away.
  size_t expected_callbacks = 0;
  for (size_t i = 0; i < semaphores.size(); ++i) {
    if (!static_cast<HostSemaphore*>(semaphores.semaphores[i])
             ->CancelTimepoint(&entries[i].timepoint)) {
      ++expected_callbacks;
    }
  }
  Status result;
  {
    platform::MutexLock lock(wait.mutex);
    while (wait.callbacks_done < expected_callbacks) {
      wait.condition.WaitUntil(wait.mutex, platform::kInfiniteFuture);
    }
    if (wait.reached) {
      result = OkStatus();
    } else if (!wait.failure.ok()) {
      result = AbortedError("a semaphore of the wait failed: %s", wait.failure.message());
    } else if (!fired) {
      result = DeadlineExceededError(
          "none of %zu semaphores reached its value before the deadline", semaphores.size());
    }
  }
  host_allocator_->Free(memory);
  return result;
}

}  // namespace osprey::drivers::cpu_task
