// ModuleRunner: instance/device/session set-up, input upload, calls and
// output read-back through the embedding API.
#include "tools/common/module_runner.h"

#include <cstring>

#include "tools/common/npy.h"

namespace osprey::tools {

void RunOptions::AddFlags(FlagParser& parser) {
  parser.AddString("module", &module_path, "Module file (.osp) to load.");
  parser.AddString("device", &device,
                   "Devices, separated by commas: cpu-sync, cpu-task, npu (the first is the "
                   "default; a module compiled for a CPU and the NPU needs both, e.g. "
                   "cpu-sync,npu).");
  parser.AddString("function", &function,
                   "Function to call: 'name' or 'module.name'. Default: main.");
  parser.AddList("input", &inputs,
                 "One function input: @file.npy or an inline tensor such as 2x3xf32=1,2,3,4,5,6 "
                 "(scalars: i32=4). Repeat in argument order.");
  parser.AddOptionalInt("task_workers", &task_workers,
                        "Worker threads of the cpu-task device (at least 1). Default: the "
                        "driver's choice.");
  parser.AddList("device_param", &device_params,
                 "Extra device parameter key=value (first device) or <device>:key=value.");
  parser.AddByteSize("vm_stack_size", &vm_stack_size,
                     "VM stack for bytecode call frames (at least 1K).");
  parser.AddByteSize("max_memory", &max_memory,
                     "Memory the module's bytecode may hold in lists and buffers (not device "
                     "buffers), e.g. 64M. 0: no limit.");
  parser.AddInt("max_instructions", &max_instructions,
                "Bytecode instructions one call may execute. 0: no limit.");
  parser.AddInt("deadline_ms", &deadline_ms,
                "Milliseconds one call may take (checked between bytecode instructions and "
                "device operations). 0: no limit.");
  parser.AddString("verify_digest", &verify_digest,
                   "What to check against the module's digests when loading it: module (every "
                   "byte), executables (the code only) or none (trusted storage).");
}

Status FromEmbedStatus(const embed::Status& status) {
  if (status.ok()) return OkStatus();
  // Drop the "CODE: " prefix the C API adds; Status prints it again.
  const char* message = status.message();
  const char* colon = std::strstr(message, ": ");
  if (colon) message = colon + 2;
  return Status(StatusCode(status.code()), "%s", message);
}

StatusOr<std::unique_ptr<ModuleRunner>> ModuleRunner::Create(const RunOptions& options) {
  if (options.module_path.empty()) return InvalidArgumentError("--module is required");
  std::unique_ptr<ModuleRunner> runner(new ModuleRunner());
  OSPREY_RETURN_IF_ERROR(FromEmbedStatus(embed::Instance::Create(&runner->instance_)),
                         "creating the instance");

  std::vector<std::string> names;
  for (size_t start = 0;;) {
    const size_t comma = options.device.find(',', start);
    names.push_back(options.device.substr(start, comma - start));
    if (names.back().empty()) {
      return InvalidArgumentError("--device='%s' has an empty device id (ids are separated by "
                                  "commas: --device=cpu-sync,npu)",
                                  options.device.c_str());
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  // Parameters per device: unprefixed ones (and --task_workers) go to the
  // first, "<device>:key=value" to the named one.
  std::vector<std::vector<std::pair<std::string, std::string>>> device_params(names.size());
  if (options.task_workers) {
    if (*options.task_workers < 1) {
      return InvalidArgumentError(
          "--task_workers=%lld: a cpu-task device needs at least 1 worker (leave the flag out "
          "for the driver's default)",
          static_cast<long long>(*options.task_workers));
    }
    device_params[0].emplace_back("task_workers", std::to_string(*options.task_workers));
  }
  for (const std::string& param : options.device_params) {
    const size_t equals = param.find('=');
    if (equals == std::string::npos || equals == 0) {
      return InvalidArgumentError("--device_param '%s' is not key=value", param.c_str());
    }
    std::string key = param.substr(0, equals);
    size_t target = 0;
    const size_t colon = key.find(':');
    if (colon != std::string::npos) {
      const std::string name = key.substr(0, colon);
      target = names.size();
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) target = i;
      }
      if (target == names.size()) {
        return InvalidArgumentError("--device_param '%s' names device '%s', which is not in "
                                    "--device='%s'",
                                    param.c_str(), name.c_str(), options.device.c_str());
      }
      key = key.substr(colon + 1);
    }
    device_params[target].emplace_back(key, param.substr(equals + 1));
  }
  for (size_t d = 0; d < names.size(); ++d) {
    std::vector<osprey_device_param_t> params;
    for (const auto& [key, value] : device_params[d]) params.push_back({key.c_str(), value.c_str()});
    embed::Device device;
    OSPREY_RETURN_IF_ERROR(FromEmbedStatus(
        embed::Device::Create(runner->instance_, names[d].c_str(), params, &device)));
    runner->devices_.push_back(std::move(device));
  }

  if (options.max_instructions < 0 || options.deadline_ms < 0) {
    return InvalidArgumentError("--max_instructions=%lld and --deadline_ms=%lld must not be "
                                "negative (0: no limit)",
                                static_cast<long long>(options.max_instructions),
                                static_cast<long long>(options.deadline_ms));
  }
  if (options.deadline_ms > INT64_MAX / 1000000) {
    return InvalidArgumentError("--deadline_ms=%lld is too large",
                                static_cast<long long>(options.deadline_ms));
  }
  osprey_session_options_t session_options = embed::Session::Options();
  session_options.vm_stack_size = size_t(options.vm_stack_size);
  session_options.max_memory = size_t(options.max_memory);
  session_options.max_instructions = uint64_t(options.max_instructions);
  session_options.timeout_ns = uint64_t(options.deadline_ms) * 1000000u;
  if (options.verify_digest == "module") {
    session_options.integrity_check = OSPREY_INTEGRITY_CHECK_MODULE;
  } else if (options.verify_digest == "executables") {
    session_options.integrity_check = OSPREY_INTEGRITY_CHECK_EXECUTABLES;
  } else if (options.verify_digest == "none") {
    session_options.integrity_check = OSPREY_INTEGRITY_CHECK_NONE;
  } else {
    return InvalidArgumentError("--verify_digest='%s' is not module, executables or none",
                                options.verify_digest.c_str());
  }
  OSPREY_RETURN_IF_ERROR(
      FromEmbedStatus(embed::Session::Create(runner->instance_, runner->devices_, session_options,
                                             &runner->session_)),
      "creating the session");
  OSPREY_RETURN_IF_ERROR(
      FromEmbedStatus(runner->session_.LoadModuleFile(options.module_path.c_str())));
  OSPREY_RETURN_IF_ERROR(FromEmbedStatus(
      runner->session_.LookupFunction(options.function.c_str(), &runner->function_)));
  OSPREY_RETURN_IF_ERROR(runner->PrepareInputs(options.inputs));
  return runner;
}

Status ModuleRunner::SetInputs(const std::vector<std::string>& specs) {
  input_values_.clear();
  host_inputs_.clear();
  input_views_.clear();
  return PrepareInputs(specs);
}

Status ModuleRunner::PrepareInputs(const std::vector<std::string>& specs) {
  const std::string signature = function_.signature();
  const std::string arg_types = signature.substr(0, signature.find(':'));
  if (specs.size() != arg_types.size()) {
    return InvalidArgumentError("function '%s' (signature '%s') takes %zu inputs, %zu --input "
                                "flags were given",
                                function_.name(), signature.c_str(), arg_types.size(),
                                specs.size());
  }
  input_views_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    OSPREY_ASSIGN_OR_RETURN(HostTensor tensor, ParseInputArgument(specs[i]), "input %zu", i);
    osprey_value_t value{};
    const char type = arg_types[i];
    if (type == 'r') {
      OSPREY_RETURN_IF_ERROR(
          FromEmbedStatus(embed::BufferView::Create(
              devices_[0], tensor.shape, osprey_element_type_t(tensor.element_type),
              tensor.data.data(), tensor.data.size(), &input_views_[i])),
          "uploading input %zu (%s)", i, tensor.FormatShape().c_str());
      value.type = OSPREY_VALUE_TYPE_BUFFER_VIEW;
      value.u.buffer_view = input_views_[i].get();
    } else {
      // Scalar arguments take a scalar tensor of the matching type.
      const hal::ElementType expected = type == 'i'   ? hal::ElementType::kInt32
                                        : type == 'I' ? hal::ElementType::kInt64
                                        : type == 'f' ? hal::ElementType::kFloat32
                                                      : hal::ElementType::kFloat64;
      if (!tensor.shape.empty() || tensor.element_type != expected) {
        return InvalidArgumentError("input %zu is %s but the function takes a scalar %s here "
                                    "(e.g. --input=%s=1)",
                                    i, tensor.FormatShape().c_str(), ElementTypeSpelling(expected),
                                    ElementTypeSpelling(expected));
      }
      value.type = type == 'i'   ? OSPREY_VALUE_TYPE_I32
                   : type == 'I' ? OSPREY_VALUE_TYPE_I64
                   : type == 'f' ? OSPREY_VALUE_TYPE_F32
                                 : OSPREY_VALUE_TYPE_F64;
      std::memcpy(&value.u, tensor.data.data(), tensor.data.size());
    }
    input_values_.push_back(value);
    host_inputs_.push_back(std::move(tensor));
  }
  return OkStatus();
}

Status ModuleRunner::Invoke(std::vector<osprey_value_t>* outputs) {
  outputs->assign(function_.output_count(), osprey_value_t{});
  size_t count = 0;
  embed::Status status(osprey_function_call_values(function_.get(), input_values_.data(),
                                                   input_values_.size(), outputs->data(),
                                                   outputs->size(), &count));
  outputs->resize(count);
  return FromEmbedStatus(status);
}

Status ModuleRunner::Call() {
  std::vector<osprey_value_t> outputs;
  OSPREY_RETURN_IF_ERROR(Invoke(&outputs));
  for (osprey_value_t& value : outputs) {
    if (value.type == OSPREY_VALUE_TYPE_BUFFER_VIEW) osprey_buffer_view_release(value.u.buffer_view);
  }
  return OkStatus();
}

StatusOr<HostTensor> ReadBufferView(const embed::BufferView& view) {
  HostTensor tensor;
  tensor.element_type = hal::ElementType(view.element_type());
  for (size_t i = 0; i < view.rank(); ++i) tensor.shape.push_back(view.dim(i));
  tensor.data.resize(view.byte_length());
  OSPREY_RETURN_IF_ERROR(FromEmbedStatus(view.Read(tensor.data.data(), tensor.data.size())));
  return tensor;
}

StatusOr<std::vector<HostTensor>> ModuleRunner::CallAndRead() {
  std::vector<osprey_value_t> outputs;
  OSPREY_RETURN_IF_ERROR(Invoke(&outputs));
  // Adopt every view first so they are all released even if a read fails.
  std::vector<embed::BufferView> views(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].type == OSPREY_VALUE_TYPE_BUFFER_VIEW) {
      views[i] = embed::BufferView(outputs[i].u.buffer_view);
    }
  }
  std::vector<HostTensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const osprey_value_t& value = outputs[i];
    HostTensor tensor;
    switch (value.type) {
      case OSPREY_VALUE_TYPE_BUFFER_VIEW: {
        if (!views[i]) return FailedPreconditionError("output %zu is a null buffer view", i);
        OSPREY_ASSIGN_OR_RETURN(tensor, ReadBufferView(views[i]), "reading output %zu", i);
        break;
      }
      case OSPREY_VALUE_TYPE_I32:
        tensor.element_type = hal::ElementType::kInt32;
        tensor.data.resize(4);
        std::memcpy(tensor.data.data(), &value.u.i32, 4);
        break;
      case OSPREY_VALUE_TYPE_I64:
        tensor.element_type = hal::ElementType::kInt64;
        tensor.data.resize(8);
        std::memcpy(tensor.data.data(), &value.u.i64, 8);
        break;
      case OSPREY_VALUE_TYPE_F32:
        tensor.element_type = hal::ElementType::kFloat32;
        tensor.data.resize(4);
        std::memcpy(tensor.data.data(), &value.u.f32, 4);
        break;
      case OSPREY_VALUE_TYPE_F64:
        tensor.element_type = hal::ElementType::kFloat64;
        tensor.data.resize(8);
        std::memcpy(tensor.data.data(), &value.u.f64, 8);
        break;
      default:
        return InternalError("output %zu has no value", i);
    }
    results.push_back(std::move(tensor));
  }
  return results;
}

}  // namespace osprey::tools
