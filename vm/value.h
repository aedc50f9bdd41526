// Value: one typed VM value (i32, i64, f32, f64 or ref) as passed across the
// invocation API and the native-module calling convention.
#ifndef OSPREY_VM_VALUE_H_
#define OSPREY_VM_VALUE_H_

#include <cstdint>
#include <cstring>

#include "vm/opcodes.h"
#include "vm/ref.h"

namespace osprey::vm {

enum class ValueType : uint8_t { kNone = 0, kI32, kI64, kF32, kF64, kRef };

// "none", "i32", "i64", "f32", "f64", "ref".
const char* ValueTypeName(ValueType type);
// The value type of a register bank.
inline ValueType ValueTypeOfBank(Bank bank) { return ValueType(uint8_t(bank) + 1); }

// Copyable; copying a ref value retains it.
struct Value {
  ValueType type = ValueType::kNone;
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  };
  Ref ref;

  Value() : i64(0) {}
  static Value I32(int32_t v) { Value x; x.type = ValueType::kI32; x.i32 = v; return x; }
  static Value I64(int64_t v) { Value x; x.type = ValueType::kI64; x.i64 = v; return x; }
  static Value F32(float v) { Value x; x.type = ValueType::kF32; x.f32 = v; return x; }
  static Value F64(double v) { Value x; x.type = ValueType::kF64; x.f64 = v; return x; }
  static Value FromRef(Ref r) {
    Value x;
    x.type = ValueType::kRef;
    x.ref = static_cast<Ref&&>(r);
    return x;
  }
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_VALUE_H_
