// The target interface's shared pieces.
#include "compiler/targets/target.h"

namespace osprey::compiler::targets {

Target::~Target() = default;

dispatch::PlanOptions planOptionsFor(const Target &target) {
  BindingLayout layout = target.bindingLayout();
  dispatch::PlanOptions options;
  options.maxBindings = layout.maxBindings;
  options.maxEmbeddedConstantBytes = layout.maxEmbeddedConstantBytes;
  return options;
}

} // namespace osprey::compiler::targets
