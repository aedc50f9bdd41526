// Error statuses of the ELF loader. In codes-only builds
// (OSPREY_STATUS_MESSAGES=0) the message and its arguments are dropped at
// compile time, so the loader's many diagnostics take no flash there.
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_STATUS_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_STATUS_H_

#include "runtime/base/status.h"

// OSPREY_ELF_ERROR(kDataLoss, "format", args...) -> ::osprey::Status.
#if OSPREY_STATUS_MESSAGES
#define OSPREY_ELF_ERROR(code, ...) ::osprey::Status(::osprey::StatusCode::code, __VA_ARGS__)
#else
#define OSPREY_ELF_ERROR(code, ...) ::osprey::Status(::osprey::StatusCode::code)
#endif

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_STATUS_H_
