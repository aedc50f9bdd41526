// Umbrella header of the host-side HAL pieces shared by CPU-backed drivers.
#ifndef OSPREY_HAL_LOCAL_API_H_
#define OSPREY_HAL_LOCAL_API_H_

#include "hal/local/default_loaders.h"
#include "hal/local/executable_library.h"
#include "hal/local/executable_loader.h"
#include "hal/local/heap_allocator.h"
#include "hal/local/host_semaphore.h"
#include "hal/local/library_executable.h"
#include "hal/local/local_dispatch.h"
#include "hal/local/local_executable.h"
#include "hal/local/local_executable_cache.h"
#include "hal/local/memory_types.h"
#include "hal/local/queue_submission.h"
#include "hal/local/recording_command_buffer.h"
#include "hal/local/static_library_loader.h"

#endif  // OSPREY_HAL_LOCAL_API_H_
