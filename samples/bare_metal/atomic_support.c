/* 64-bit atomic operations for single-core bare-metal targets.
 *
 * Cortex-M and RV32 have no 64-bit atomic instructions, so the compilers
 * turn std::atomic<uint64_t> operations into __atomic_*_8 library calls,
 * and Debian's bare-metal toolchains ship no libatomic. On a single core,
 * masking interrupts around a plain access makes it atomic with respect to
 * everything else that can run. The memory-order argument needs nothing
 * more: interrupt masking is also a compiler barrier, and a single core
 * observes its own accesses in order. */
#include <stdbool.h>
#include <stdint.h>

typedef uint64_t u64;

#if defined(__arm__)
static inline uint32_t MaskInterrupts(void) {
  uint32_t primask;
  __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask)::"memory");
  return primask;
}
static inline void RestoreInterrupts(uint32_t primask) {
  __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
}
#elif defined(__riscv)
/* Machine mode: clear mstatus.MIE, then put back its previous value. */
static inline uint32_t MaskInterrupts(void) {
  uint32_t mstatus;
  __asm__ volatile("csrrci %0, mstatus, 8" : "=r"(mstatus)::"memory");
  return mstatus & 8u;
}
static inline void RestoreInterrupts(uint32_t mie) {
  __asm__ volatile("csrs mstatus, %0" ::"r"(mie) : "memory");
}
#else
#error "atomic_support.c: no interrupt masking for this architecture"
#endif

u64 __atomic_load_8(const volatile void* ptr, int order) {
  (void)order;
  uint32_t state = MaskInterrupts();
  u64 value = *(const volatile u64*)ptr;
  RestoreInterrupts(state);
  return value;
}

void __atomic_store_8(volatile void* ptr, u64 value, int order) {
  (void)order;
  uint32_t state = MaskInterrupts();
  *(volatile u64*)ptr = value;
  RestoreInterrupts(state);
}

u64 __atomic_exchange_8(volatile void* ptr, u64 value, int order) {
  (void)order;
  uint32_t state = MaskInterrupts();
  u64 old = *(volatile u64*)ptr;
  *(volatile u64*)ptr = value;
  RestoreInterrupts(state);
  return old;
}

bool __atomic_compare_exchange_8(volatile void* ptr, void* expected, u64 desired, bool weak,
                                 int success_order, int failure_order) {
  (void)weak;
  (void)success_order;
  (void)failure_order;
  uint32_t state = MaskInterrupts();
  u64 current = *(volatile u64*)ptr;
  bool equal = current == *(u64*)expected;
  if (equal) {
    *(volatile u64*)ptr = desired;
  } else {
    *(u64*)expected = current;
  }
  RestoreInterrupts(state);
  return equal;
}

/* __atomic_fetch_<op>_8 returns the old value, __atomic_<op>_fetch_8 the new. */
#define OSPREY_ATOMIC_RMW_8(name, op)                                 \
  u64 __atomic_fetch_##name##_8(volatile void* ptr, u64 value, int order) { \
    (void)order;                                                      \
    uint32_t state = MaskInterrupts();                                \
    u64 old = *(volatile u64*)ptr;                                    \
    *(volatile u64*)ptr = old op value;                               \
    RestoreInterrupts(state);                                         \
    return old;                                                       \
  }                                                                   \
  u64 __atomic_##name##_fetch_8(volatile void* ptr, u64 value, int order) { \
    (void)order;                                                      \
    uint32_t state = MaskInterrupts();                                \
    u64 result = *(volatile u64*)ptr op value;                        \
    *(volatile u64*)ptr = result;                                     \
    RestoreInterrupts(state);                                         \
    return result;                                                    \
  }

OSPREY_ATOMIC_RMW_8(add, +)
OSPREY_ATOMIC_RMW_8(sub, -)
OSPREY_ATOMIC_RMW_8(and, &)
OSPREY_ATOMIC_RMW_8(or, |)
OSPREY_ATOMIC_RMW_8(xor, ^)
