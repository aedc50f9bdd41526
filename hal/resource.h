// Base class of every HAL object: a reference-counted resource.
#ifndef OSPREY_HAL_RESOURCE_H_
#define OSPREY_HAL_RESOURCE_H_

#include "runtime/base/ref_ptr.h"

namespace osprey::hal {

class Resource : public RefObject {
 protected:
  Resource() = default;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_RESOURCE_H_
