// Loads a module through the embedding API and calls one of its functions
// with host tensors: the shared core of osprey-run and osprey-benchmark.
#ifndef OSPREY_TOOLS_COMMON_MODULE_RUNNER_H_
#define OSPREY_TOOLS_COMMON_MODULE_RUNNER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/embed/osprey.hpp"
#include "tools/common/flags.h"
#include "tools/common/host_tensor.h"

namespace osprey::tools {

struct RunOptions {
  std::string module_path;
  // Device ids separated by commas ("cpu-sync,npu"); the first is the
  // session's default device.
  std::string device = "cpu-sync";
  std::string function = "main";
  // "@file.npy" or inline specs, one per function input.
  std::vector<std::string> inputs;
  // cpu-task worker count; empty leaves the driver default.
  std::optional<int64_t> task_workers;
  // Extra device parameters: "key=value" for the first device,
  // "<device>:key=value" for a named one.
  std::vector<std::string> device_params;
  // Session limits (osprey_session_options_t); 0 means no limit, except
  // for the stack size.
  uint64_t vm_stack_size = 64 * 1024;
  uint64_t max_memory = uint64_t(64) << 20;
  int64_t max_instructions = 0;
  int64_t deadline_ms = 0;
  // Digest checks at load: "module", "executables" or "none".
  std::string verify_digest = "module";

  // Declares --module, --device, --function, --input, --task_workers,
  // --device_param and the limit flags (--vm_stack_size, --max_memory,
  // --max_instructions, --deadline_ms) and --verify_digest on |parser|.
  void AddFlags(FlagParser& parser);
};

// Converts an embedding-API status into a runtime Status (same code and
// message).
Status FromEmbedStatus(const embed::Status& status);

class ModuleRunner {
 public:
  // Creates the instance, device and session, loads the module, looks up
  // the function and uploads the inputs. Errors name the failing step.
  static StatusOr<std::unique_ptr<ModuleRunner>> Create(const RunOptions& options);

  // Replaces the prepared inputs (same forms as RunOptions::inputs), e.g. to
  // call the loaded module on another sample.
  Status SetInputs(const std::vector<std::string>& specs);

  // Calls the function once with the prepared inputs and reads every
  // output back.
  StatusOr<std::vector<HostTensor>> CallAndRead();
  // Calls the function once and drops the outputs (for benchmarking).
  Status Call();

  const embed::Function& function() const { return function_; }
  // The first (default) device.
  const embed::Device& device() const { return devices_[0]; }
  const std::vector<embed::Device>& devices() const { return devices_; }

 private:
  ModuleRunner() = default;
  Status PrepareInputs(const std::vector<std::string>& specs);
  Status Invoke(std::vector<osprey_value_t>* outputs);

  embed::Instance instance_;
  std::vector<embed::Device> devices_;
  embed::Session session_;
  embed::Function function_;
  std::vector<HostTensor> host_inputs_;
  std::vector<embed::BufferView> input_views_;
  std::vector<osprey_value_t> input_values_;
};

// Reads a buffer view back into a host tensor.
StatusOr<HostTensor> ReadBufferView(const embed::BufferView& view);

}  // namespace osprey::tools

#endif  // OSPREY_TOOLS_COMMON_MODULE_RUNNER_H_
