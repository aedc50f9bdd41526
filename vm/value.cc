// Value helpers.
#include "vm/value.h"

namespace osprey::vm {

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kNone: return "none";
    case ValueType::kI32: return "i32";
    case ValueType::kI64: return "i64";
    case ValueType::kF32: return "f32";
    case ValueType::kF64: return "f64";
    case ValueType::kRef: return "ref";
  }
  return "none";
}

}  // namespace osprey::vm
