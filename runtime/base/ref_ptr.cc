// Reference counting: the out-of-line release.
#include "runtime/base/ref_ptr.h"

namespace osprey {

void RefObject::Release() const {
  if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const_cast<RefObject*>(this)->Destroy();
  }
}

}  // namespace osprey
