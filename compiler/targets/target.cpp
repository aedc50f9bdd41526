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

dispatch::DispatchProgram regionSubset(const dispatch::DispatchProgram &program,
                                       const std::vector<unsigned> &regions) {
  dispatch::DispatchProgram subset;
  subset.program = program.program;
  subset.buffers = program.buffers;
  subset.arenaSize = program.arenaSize;
  subset.arenaAlignment = program.arenaAlignment;
  for (unsigned r : regions) {
    subset.commands.push_back(
        {dispatch::HostCommand::Kind::Dispatch,
         static_cast<unsigned>(subset.regions.size())});
    subset.regions.push_back(program.regions[r]);
  }
  return subset;
}

} // namespace osprey::compiler::targets
