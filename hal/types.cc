// Names of HAL value types.
#include "hal/types.h"

namespace osprey::hal {

const char* ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kInt8: return "i8";
    case ElementType::kInt16: return "i16";
    case ElementType::kInt32: return "i32";
    case ElementType::kInt64: return "i64";
    case ElementType::kUint8: return "u8";
    case ElementType::kUint16: return "u16";
    case ElementType::kUint32: return "u32";
    case ElementType::kUint64: return "u64";
    case ElementType::kFloat16: return "f16";
    case ElementType::kFloat32: return "f32";
    case ElementType::kFloat64: return "f64";
    case ElementType::kBFloat16: return "bf16";
    case ElementType::kBool8: return "i1";
    case ElementType::kNone: break;
  }
  return "unknown";
}

}  // namespace osprey::hal
