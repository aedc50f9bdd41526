// The few C++ runtime entry points a bare-metal image needs, for a firmware
// that never uses the heap.
//
// The runtime creates every object through an osprey::Allocator and never
// uses new/delete expressions, but the compiler still emits references to
// operator delete (from deleting destructors in vtables) and to
// __cxa_pure_virtual (from vtables of abstract classes). Defining them here
// keeps malloc/free and the C++ terminate machinery out of the image on Arm,
// and supplies them on RISC-V, where Debian has no C++ runtime library.
// Reaching any of them is a bug, so they stop the program.
#include <stdio.h>
#include <stdlib.h>

#include <cstddef>

namespace {
[[noreturn]] void Unreachable(const char* what) {
  printf("firmware: unexpected call to %s\n", what);
  abort();
}
}  // namespace

void operator delete(void*) noexcept { Unreachable("operator delete"); }
void operator delete(void*, size_t) noexcept { Unreachable("operator delete"); }
void operator delete[](void*) noexcept { Unreachable("operator delete[]"); }
void operator delete[](void*, size_t) noexcept { Unreachable("operator delete[]"); }

extern "C" void __cxa_pure_virtual() { Unreachable("a pure virtual function"); }
