/* The firmware's kernels built as an ELF shared object for the CPU the
 * firmware runs on (kernels.c + kernels_elf_entry.c), embedded as bytes by
 * the build (embed_file.cmake). */
#ifndef OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_ELF_H_
#define OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_ELF_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const uint8_t osprey_firmware_kernels_elf[];
extern const size_t osprey_firmware_kernels_elf_size;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_ELF_H_ */
