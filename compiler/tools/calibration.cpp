// Calibration runs and the accuracy report of osprey-compile --quantize.
//
// The float model is evaluated by compiling it for this machine with the
// normal pipeline and running it through the runtime, so calibration sees
// exactly the values the float module computes, for every operator the
// compiler supports (the graph evaluator used by constant folding has no
// convolution or pooling).
#include "compiler/tools/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/passes/pass_manager.h"
#include "compiler/targets/llvm_cpu/llvm_cpu_target.h"
#include "compiler/tools/cpu_pipeline.h"
#include "compiler/tools/fusion_flags.h"
#include "compiler/tools/llvm_cpu_flags.h"
#include "compiler/vm_backend/module_emitter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "tools/common/module_runner.h"
#include "tools/common/npy.h"
#include "vm/opcodes.h"

namespace osprey::compiler::ptq {

namespace rt = ::osprey::tools;

namespace {

absl::Status fromRuntime(const ::osprey::Status &status,
                         const std::string &context) {
  if (status.ok()) {
    return absl::OkStatus();
  }
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      context + ": " + status.message());
}

std::string fileNameFor(const std::string &inputName) {
  std::string name = inputName;
  for (char &c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_') {
      c = '_';
    }
  }
  return name + ".npy";
}

std::string typeText(const graph::TensorType &type) {
  std::string text;
  for (int64_t d : type.dims()) {
    text += std::to_string(d) + "x";
  }
  return text + graph::elementTypeName(type.elementType()).str();
}

absl::Status checkSampleFile(const std::string &path, const graph::Value &input) {
  auto tensor = rt::ReadNpyFile(path);
  if (!tensor.ok()) {
    return fromRuntime(tensor.status(), "calibration file '" + path + "'");
  }
  const graph::TensorType &type = input.type();
  const std::string expected = typeText(type);
  std::string actual = tensor->FormatShape();
  const bool shapeMatches =
      std::vector<int64_t>(type.dims().begin(), type.dims().end()) ==
      tensor->shape;
  const bool typeMatches =
      graph::elementTypeName(type.elementType()) ==
      llvm::StringRef(rt::ElementTypeSpelling(tensor->element_type));
  if (!shapeMatches || !typeMatches) {
    return absl::InvalidArgumentError(
        "calibration file '" + path + "' is " + actual + "; input '" +
        input.name() + "' of the model is " + expected);
  }
  return absl::OkStatus();
}

// The values of |tensor| as doubles.
std::vector<double> toDoubles(const rt::HostTensor &tensor) {
  std::vector<double> values(tensor.element_count());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = rt::ElementAsDouble(tensor, i);
  }
  return values;
}

absl::StatusOr<std::unique_ptr<rt::ModuleRunner>>
openModule(const std::string &path, const std::string &device,
           const CalibrationSample &first) {
  rt::RunOptions options;
  options.module_path = path;
  options.device = device;
  options.max_memory = 0;
  for (const std::string &file : first.files) {
    options.inputs.push_back("@" + file);
  }
  auto runner = rt::ModuleRunner::Create(options);
  if (!runner.ok()) {
    return fromRuntime(runner.status(), "loading module '" + path + "'");
  }
  return std::move(*runner);
}

absl::StatusOr<std::vector<rt::HostTensor>>
runSample(rt::ModuleRunner &runner, const CalibrationSample &sample) {
  std::vector<std::string> specs;
  for (const std::string &file : sample.files) {
    specs.push_back("@" + file);
  }
  if (auto s = runner.SetInputs(specs); !s.ok()) {
    return fromRuntime(s, "calibration sample " + sample.files[0]);
  }
  auto outputs = runner.CallAndRead();
  if (!outputs.ok()) {
    return fromRuntime(outputs.status(),
                       "running on calibration sample " + sample.files[0]);
  }
  return std::move(*outputs);
}

} // namespace

absl::StatusOr<std::vector<CalibrationSample>>
readCalibrationDir(const std::string &dir, const graph::Graph &g) {
  if (!llvm::sys::fs::is_directory(dir)) {
    return absl::NotFoundError("--calibration='" + dir +
                               "' is not a directory");
  }
  const size_t inputs = g.inputs().size();
  std::vector<std::string> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    const std::string path = it->path();
    const bool isDir = llvm::sys::fs::is_directory(path);
    if (inputs == 1 ? (!isDir && llvm::sys::path::extension(path) == ".npy")
                    : isDir) {
      entries.push_back(path);
    }
  }
  if (ec) {
    return absl::NotFoundError("--calibration='" + dir + "': " + ec.message());
  }
  std::sort(entries.begin(), entries.end());
  if (entries.empty()) {
    return absl::InvalidArgumentError(
        "--calibration='" + dir + "' holds no calibration sample (" +
        (inputs == 1 ? std::string("expected one .npy file per sample")
                     : "the model has " + std::to_string(inputs) +
                           " inputs: expected one subdirectory per sample "
                           "holding <input name>.npy for each") +
        ")");
  }
  std::vector<CalibrationSample> samples;
  for (const std::string &entry : entries) {
    CalibrationSample sample;
    for (const graph::Value *input : g.inputs()) {
      if (!input->type().hasStaticShape()) {
        return absl::InvalidArgumentError(
            "--quantize: input '" + input->name() + "' has the dynamic type " +
            input->type().str() + " (pin it with --input-shape)");
      }
      std::string file = entry;
      if (inputs != 1) {
        llvm::SmallString<256> path(entry);
        llvm::sys::path::append(path, fileNameFor(input->name()));
        file = path.str().str();
        if (!llvm::sys::fs::exists(file)) {
          return absl::InvalidArgumentError("calibration sample '" + entry +
                                            "' has no file '" + file +
                                            "' for input '" +
                                            input->name() + "'");
        }
      }
      if (absl::Status s = checkSampleFile(file, *input); !s.ok()) {
        return s;
      }
      sample.files.push_back(file);
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

absl::StatusOr<std::string> writeTemporaryModule(llvm::ArrayRef<uint8_t> bytes) {
  llvm::SmallString<128> path;
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("osprey-quantize", "osp", fd, path)) {
    return absl::InternalError("cannot create a temporary module file: " +
                               ec.message());
  }
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  out.close();
  if (out.has_error()) {
    return absl::InternalError("cannot write '" + path.str().str() + "'");
  }
  return path.str().str();
}

absl::StatusOr<std::vector<uint8_t>> compileHostModule(graph::Graph &g) {
  graph::PassManager pm;
  for (const std::string &name : graph::defaultPipeline()) {
    if (absl::Status s = pm.addPasses(name); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = pm.run(g); !s.ok()) {
    return s;
  }
  llvm_cpu::LlvmCpuTargetOptions options;
  options.fusion = tools::fusionOptionsFromFlags();
  options.codegen = tools::codegenOptionsFromFlags(options.fusion);
  auto target = llvm_cpu::LlvmCpuTarget::create("host", "", std::move(options));
  if (!target.ok()) {
    return target.status();
  }
  auto dispatchProgram = tools::lowerToDispatch(
      g, **target,
      tools::planOptionsFromFlags(targets::planOptionsFor(**target)));
  if (!dispatchProgram.ok()) {
    return dispatchProgram.status();
  }
  targets::BuildOptions build;
  build.name = "quantize_host";
  auto executable = (*target)->buildExecutable(*dispatchProgram, build);
  if (!executable.ok()) {
    return executable.status();
  }
  return vm_backend::emitModule(*dispatchProgram, *executable, build.name);
}

absl::StatusOr<Calibration>
calibrate(const GraphLoader &load, const std::vector<CalibrationSample> &samples,
          const CalibrationOptions &options) {
  // A VM function takes and returns at most vm::kMaxSignatureValues values
  // per side: the activations are observed by several modules, each
  // returning the model's outputs and as many activations as fit.
  constexpr size_t kMaxValues = vm::kMaxSignatureValues;
  auto first = load();
  if (!first.ok()) {
    return first.status();
  }
  std::vector<std::string> observed;
  for (graph::Value *v : observedValues(**first)) {
    observed.push_back(v->name());
  }
  const size_t inputCount = (*first)->inputs().size();
  const size_t outputCount = (*first)->outputs().size();
  if (inputCount > kMaxValues || outputCount >= kMaxValues) {
    return absl::UnimplementedError(
        "--quantize: the model has " + std::to_string(inputCount) +
        " inputs and " + std::to_string(outputCount) +
        " outputs; calibration needs at most " + std::to_string(kMaxValues) +
        " inputs and fewer than " + std::to_string(kMaxValues) + " outputs");
  }
  const size_t perModule = kMaxValues - outputCount;

  // Which value each output of each calibration module holds.
  struct Observer {
    std::string path;
    llvm::FileRemover remover;
    std::unique_ptr<rt::ModuleRunner> runner;
    std::vector<std::string> outputValues;
  };
  std::vector<std::unique_ptr<Observer>> observers;
  std::set<std::string> inputNames;
  for (graph::Value *v : (*first)->inputs()) {
    inputNames.insert(v->name());
  }
  std::vector<std::string> inputOrder;
  for (graph::Value *v : (*first)->inputs()) {
    inputOrder.push_back(v->name());
  }
  const size_t modelOutputs = (*first)->outputs().size();
  std::vector<std::string> pending;
  for (const std::string &name : observed) {
    if (!inputNames.count(name)) {
      pending.push_back(name);
    }
  }
  size_t next = 0;
  do {
    std::unique_ptr<graph::Graph> owned;
    if (observers.empty()) {
      owned = std::move(*first);
    } else {
      auto loaded = load();
      if (!loaded.ok()) {
        return loaded.status();
      }
      owned = std::move(*loaded);
    }
    graph::Graph &cg = *owned;
    std::map<std::string, graph::Value *> byName;
    for (graph::Value *v : observedValues(cg)) {
      byName[v->name()] = v;
    }
    auto obs = std::make_unique<Observer>();
    std::vector<graph::Value *> outputs(cg.outputs().begin(),
                                        cg.outputs().end());
    std::vector<std::string> names(cg.outputNames().begin(),
                                   cg.outputNames().end());
    for (graph::Value *v : outputs) {
      obs->outputValues.push_back(v->name());
    }
    std::set<std::string> present(obs->outputValues.begin(),
                                  obs->outputValues.end());
    for (size_t added = 0; next < pending.size() && added < perModule; ++next) {
      if (present.count(pending[next]) || !byName.count(pending[next])) {
        continue;
      }
      outputs.push_back(byName[pending[next]]);
      names.push_back("observe." + pending[next]);
      obs->outputValues.push_back(pending[next]);
      ++added;
    }
    cg.setOutputs(outputs, names);
    auto bytes = compileHostModule(cg);
    if (!bytes.ok()) {
      return absl::Status(bytes.status().code(),
                          "compiling the float model for calibration: " +
                              std::string(bytes.status().message()));
    }
    auto path = writeTemporaryModule(*bytes);
    if (!path.ok()) {
      return path.status();
    }
    obs->path = *path;
    obs->remover.setFile(obs->path);
    auto runner = openModule(obs->path, "cpu-sync", samples[0]);
    if (!runner.ok()) {
      return runner.status();
    }
    obs->runner = std::move(*runner);
    observers.push_back(std::move(obs));
  } while (next < pending.size());

  // Calls |visit(name, values, count)| for every observed value of every
  // sample (graph inputs from the files); the first pass keeps the float
  // model's outputs.
  Calibration result;
  auto pass = [&](bool keepOutputs,
                  const std::function<void(const std::string &,
                                           const float *, size_t)> &visit)
      -> absl::Status {
    for (const CalibrationSample &sample : samples) {
      for (size_t i = 0; i < sample.files.size(); ++i) {
        auto tensor = rt::ReadNpyFile(sample.files[i]);
        if (!tensor.ok()) {
          return fromRuntime(tensor.status(), sample.files[i]);
        }
        if (tensor->element_type == hal::ElementType::kFloat32) {
          visit(inputOrder[i],
                reinterpret_cast<const float *>(tensor->data.data()),
                tensor->element_count());
        }
      }
      for (size_t m = 0; m < observers.size(); ++m) {
        auto outputs = runSample(*observers[m]->runner, sample);
        if (!outputs.ok()) {
          return outputs.status();
        }
        const auto &values = observers[m]->outputValues;
        if (outputs->size() != values.size()) {
          return absl::InternalError("calibration module returned " +
                                     std::to_string(outputs->size()) +
                                     " outputs, expected " +
                                     std::to_string(values.size()));
        }
        for (size_t o = 0; o < outputs->size(); ++o) {
          const rt::HostTensor &t = (*outputs)[o];
          if (t.element_type == hal::ElementType::kFloat32) {
            visit(values[o], reinterpret_cast<const float *>(t.data.data()),
                  t.element_count());
          }
        }
        if (keepOutputs && m == 0) {
          std::vector<std::vector<double>> modelValues;
          for (size_t o = 0; o < modelOutputs; ++o) {
            modelValues.push_back(toDoubles((*outputs)[o]));
          }
          result.floatOutputs.push_back(std::move(modelValues));
        }
      }
    }
    return absl::OkStatus();
  };
  std::map<std::string, Range> &ranges = result.ranges;
  absl::Status s = pass(true, [&](const std::string &name, const float *v,
                                  size_t n) {
    auto [it, inserted] = ranges.try_emplace(
        name, Range{std::numeric_limits<double>::infinity(),
                    -std::numeric_limits<double>::infinity()});
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(v[i])) {
        it->second.lo = std::min(it->second.lo, double(v[i]));
        it->second.hi = std::max(it->second.hi, double(v[i]));
      }
    }
  });
  if (!s.ok()) {
    return s;
  }
  for (auto &[name, range] : ranges) {
    if (range.lo > range.hi) { // no finite value at all
      range = Range{0, 0};
    }
  }
  if (options.method == "percentile") {
    std::map<std::string, Histogram> histograms;
    for (const auto &[name, range] : ranges) {
      histograms.emplace(name, Histogram(range));
    }
    s = pass(false, [&](const std::string &name, const float *v, size_t n) {
      histograms[name].add(v, n);
    });
    if (!s.ok()) {
      return s;
    }
    for (auto &[name, range] : ranges) {
      range = histograms[name].percentileRange(options.percentile);
    }
  }
  return result;
}

absl::StatusOr<std::vector<OutputError>>
measureError(const std::string &modulePath, const std::string &device,
             const std::vector<CalibrationSample> &samples,
             const OutputValues &floatOutputs,
             const std::vector<std::string> &outputNames) {
  auto runner = openModule(modulePath, device, samples[0]);
  if (!runner.ok()) {
    return runner.status();
  }
  std::vector<double> signal(outputNames.size()), noise(outputNames.size());
  std::vector<OutputError> errors(outputNames.size());
  for (size_t k = 0; k < samples.size(); ++k) {
    auto outputs = runSample(**runner, samples[k]);
    if (!outputs.ok()) {
      return outputs.status();
    }
    if (outputs->size() != outputNames.size()) {
      return absl::InternalError("the quantized module returned " +
                                 std::to_string(outputs->size()) +
                                 " outputs, the float model " +
                                 std::to_string(outputNames.size()));
    }
    for (size_t o = 0; o < outputs->size(); ++o) {
      const std::vector<double> q = toDoubles((*outputs)[o]);
      const std::vector<double> &f = floatOutputs[k][o];
      if (q.size() != f.size()) {
        return absl::InternalError("output '" + outputNames[o] +
                                   "' of the quantized module has " +
                                   std::to_string(q.size()) +
                                   " elements, the float model's " +
                                   std::to_string(f.size()));
      }
      for (size_t i = 0; i < q.size(); ++i) {
        const double d = q[i] - f[i];
        signal[o] += f[i] * f[i];
        noise[o] += d * d;
        errors[o].maxAbsError =
            std::max(errors[o].maxAbsError, std::fabs(d));
      }
    }
  }
  for (size_t o = 0; o < errors.size(); ++o) {
    errors[o].name = outputNames[o];
    errors[o].snrDb = noise[o] == 0
                          ? std::numeric_limits<double>::infinity()
                          : 10 * std::log10(signal[o] / noise[o]);
  }
  return errors;
}

std::string reportJson(const CalibrationOptions &options, size_t samples,
                       const std::vector<OutputError> &errors,
                       const std::vector<QuantizedTensor> &tensors) {
  llvm::json::Array outputs, quantized;
  for (const OutputError &e : errors) {
    outputs.push_back(llvm::json::Object{
        {"name", e.name},
        {"snr_db", std::isfinite(e.snrDb) ? llvm::json::Value(e.snrDb)
                                          : llvm::json::Value(nullptr)},
        {"max_abs_error", e.maxAbsError}});
  }
  for (const QuantizedTensor &t : tensors) {
    quantized.push_back(llvm::json::Object{{"name", t.name},
                                           {"min", t.range.lo},
                                           {"max", t.range.hi},
                                           {"scale", double(t.params.scale)},
                                           {"zero_point", t.params.zeroPoint}});
  }
  llvm::json::Object method{{"name", options.method}};
  if (options.method == "percentile") {
    method["percentile"] = options.percentile;
  }
  llvm::json::Object root{{"method", std::move(method)},
                          {"calibration_samples", int64_t(samples)},
                          {"outputs", std::move(outputs)},
                          {"tensors", std::move(quantized)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

} // namespace osprey::compiler::ptq
