// Umbrella header of the embedded ELF loader (hal/local/loaders/elf).
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_API_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_API_H_

#include "hal/local/loaders/elf/elf_image.h"   // IWYU pragma: export
#include "hal/local/loaders/elf/elf_loader.h"  // IWYU pragma: export

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_API_H_
