// osprey-compile: compiles an ONNX model for a target into an .osp module:
// import, graph passes, partitioning with an accelerator (--accelerator:
// chains of int8 layers become external ops the NPU target builds),
// structured ops and fusion, dispatch regions and memory planning, code
// generation by the targets (targets::Target: the LLVM CPU target for
// --target, npu-v1 for the accelerator) and the VM backend. The CPU code is
// either embedded in the module as an ELF or written beside it as a static
// library (object + C header) for linking into firmware.
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/graph/passes/pass_manager.h"
#include "compiler/import/onnx/importer.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/targets/llvm_cpu/llvm_cpu_target.h"
#include "compiler/targets/npu/npu_target.h"
#include "compiler/targets/npu/offload.h"
#include "compiler/targets/target.h"
#include "compiler/tools/calibration.h"
#include "compiler/tools/compile_report.h"
#include "compiler/tools/cpu_pipeline.h"
#include "compiler/tools/fusion_flags.h"
#include "compiler/tools/llvm_cpu_flags.h"
#include "compiler/vm_backend/module_emitter.h"
#include "tools/common/npy.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <set>
#include <optional>

namespace cl = llvm::cl;
using namespace osprey::compiler;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"));
static cl::opt<std::string>
    target("target", cl::desc("Target: host, x86_64, armv7em, riscv32"),
           cl::init("host"));
static cl::opt<std::string> targetCpu("target-cpu",
                                      cl::desc("CPU name for code generation"),
                                      cl::init(""));
static cl::opt<std::string> outputFormat(
    "output-format",
    cl::desc("embedded-elf (.osp module with the compiled code inside as an "
             "ELF, the default), static-library (.osp module referring to "
             "the code by library name, plus <stem>.o and <stem>.h beside "
             "it for linking into firmware), graph-ir (textual graph IR "
             "after the graph passes), structured (structured ops with "
             "fusion decisions), dispatch (dispatch regions with the memory "
             "plan) or llvm-ir (optimized LLVM IR of the dispatch library)"),
    cl::init("embedded-elf"));
static cl::opt<bool> printIr("print-ir",
                             cl::desc("Print the final graph IR to stderr"));
static cl::list<std::string>
    printIrAfter("print-ir-after",
                 cl::desc("Print the IR to stderr after the named pass or "
                          "stage ('all' for every one; stages: import, "
                          "lower-to-structured, fuse, form-dispatch, "
                          "plan-memory)"),
                 cl::value_desc("name"));
static cl::opt<std::string>
    dumpAfter("dump-after",
              cl::desc("Stop after the named pass ('import' for right after "
                       "import) and write its graph IR to the output"),
              cl::value_desc("pass"), cl::init(""));

static cl::opt<std::string> accelerator(
    "accelerator",
    cl::desc("Offload int8 layers to an accelerator: npu-v1, with its "
             "configuration as npu-v1:pes=64,sram=256KiB,wmem=1MiB,... "
             "(docs/npu.md); the module then runs on a CPU device and the "
             "NPU (osprey-run --device=cpu-sync,npu)"),
    cl::value_desc("name[:key=value,...]"), cl::init(""));
static cl::opt<std::string> offloadMode(
    "offload",
    cl::desc("With --accelerator: auto (each layer where the cost model "
             "says it is faster, the default), all (every layer; fails "
             "listing the nodes that cannot go and why) or none"),
    cl::init(""));
static cl::opt<bool> dumpPartition(
    "dump-partition",
    cl::desc("With --accelerator: print to stderr which node goes to which "
             "device, and why a node stays on the CPU"));

static cl::opt<bool> fallbackToCpu(
    "fallback-to-cpu",
    cl::desc("With --accelerator: the module also carries CPU code for the "
             "whole model, which a call runs when the session has no device "
             "for the accelerator (the weights are stored twice)"));
static cl::opt<std::string> reportFile(
    "report",
    cl::desc("Write a self-contained HTML page on the compilation: the "
             "CPU/NPU split with the reason for each CPU node, every "
             "dispatch with its device, NPU cycles against the peak, SRAM "
             "tiling per layer and the memory plan over time"),
    cl::value_desc("file.html"), cl::init(""));

static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Pin the shape of a graph input with dynamic dimensions, as "
             "name:d0xd1x... (repeatable; the name may contain ':', the "
             "last one separates the shape)"),
    cl::value_desc("name:shape"));

static cl::list<std::string> inputValues(
    "input-value",
    cl::desc("Bind a graph input to a value at compile time, as "
             "name=@file.npy or name=DIMSxTYPE=v0,v1,... (osprey-run's "
             "--input syntax; repeatable). The input becomes a constant "
             "the module's function no longer takes, and what is computed "
             "from it folds: an If on a sample rate, a shape, a flag"),
    cl::value_desc("name=value"));

static cl::opt<std::string> quantize(
    "quantize",
    cl::desc("Quantize a float model after training: int8 (activations "
             "asymmetric per tensor from --calibration, weights symmetric "
             "per output channel; docs/quantization.md). Prints the SNR and "
             "largest error of each output against the float model on the "
             "calibration set"),
    cl::value_desc("int8"), cl::init(""));
static cl::opt<std::string> calibrationDir(
    "calibration",
    cl::desc("With --quantize: directory of calibration inputs. One input: "
             "each *.npy file is a sample; several inputs: each "
             "subdirectory is a sample holding <input name>.npy per input "
             "(other characters than letters, digits, '.', '-', '_' as '_')"),
    cl::value_desc("dir"), cl::init(""));
static cl::opt<std::string> calibrationMethod(
    "calibration-method",
    cl::desc("With --quantize: minmax (the default: each activation's "
             "smallest and largest value) or percentile[:P] (the range "
             "holding P % of the values, from a histogram; P defaults to "
             "99.99)"),
    cl::value_desc("method"), cl::init("minmax"));
static cl::list<std::string> quantizeSkip(
    "quantize-skip",
    cl::desc("With --quantize: nodes (ONNX node names) that stay float"),
    cl::value_desc("node,..."), cl::CommaSeparated);
static cl::opt<std::string> quantizeReport(
    "quantize-report",
    cl::desc("With --quantize: write the accuracy report as JSON (method, "
             "sample count, snr_db and max_abs_error per output, scale and "
             "zero point per quantized tensor)"),
    cl::value_desc("file.json"), cl::init(""));

// Parses --input-shape specs (name:d0xd1x...) into |options|.
static absl::Status parseInputShapes(const std::vector<std::string> &specs,
                                     onnximport::ImportOptions &options) {
  for (const std::string &spec : specs) {
    size_t colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return absl::InvalidArgumentError("--input-shape '" + spec +
                                        "': expected name:d0xd1x...");
    }
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(spec).substr(colon + 1).split(parts, 'x');
    std::vector<int64_t> dims;
    for (llvm::StringRef part : parts) {
      int64_t dim = 0;
      if (part.getAsInteger(10, dim) || dim < 0) {
        return absl::InvalidArgumentError(
            "--input-shape '" + spec + "': '" + part.str() +
            "' is not a dimension (a non-negative integer)");
      }
      dims.push_back(dim);
    }
    if (!options.inputShapes.emplace(spec.substr(0, colon), dims).second) {
      return absl::InvalidArgumentError("--input-shape '" + spec +
                                        "': the input's shape is given twice");
    }
  }
  return absl::OkStatus();
}

// Parses --input-value specs (name=SPEC, SPEC as osprey-run's --input:
// @file.npy or DIMSxTYPE=v0,v1,...) into |options|.
static absl::Status parseInputValues(const std::vector<std::string> &specs,
                                     onnximport::ImportOptions &options) {
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return absl::InvalidArgumentError(
          "--input-value '" + spec +
          "': expected name=@file.npy or name=DIMSxTYPE=v0,v1,... (for "
          "example sr=i64=16000)");
    }
    auto tensor = ::osprey::tools::ParseInputArgument(spec.substr(eq + 1));
    if (!tensor.ok()) {
      return absl::InvalidArgumentError("--input-value '" + spec +
                                        "': " + tensor.status().message());
    }
    const char *spelling = ::osprey::tools::ElementTypeSpelling(tensor->element_type);
    auto type = tensor->element_type == ::osprey::hal::ElementType::kBool8
                    ? std::optional(graph::ElementType::Bool)
                    : graph::parseElementType(spelling);
    if (!type) {
      return absl::InvalidArgumentError("--input-value '" + spec +
                                        "': element type " + spelling +
                                        " is not one of the compiler's");
    }
    onnximport::ImportOptions::InputValue value;
    value.elementType = *type;
    value.dims = tensor->shape;
    value.data = graph::DenseData::fromBytes(std::move(tensor->data));
    if (!options.inputValues.emplace(spec.substr(0, eq), std::move(value))
             .second) {
      return absl::InvalidArgumentError("--input-value '" + spec +
                                        "': the input's value is given twice");
    }
  }
  return absl::OkStatus();
}

// |text| with every byte that would not print as itself written as \xNN:
// control characters other than newline and tab, DEL, C1 controls and bytes
// outside well-formed UTF-8. Error messages echo names from the model file,
// which may hold anything (terminal escape sequences included).
static std::string printable(llvm::StringRef text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const auto *p = reinterpret_cast<const llvm::UTF8 *>(text.data() + i);
    const unsigned char c = *p;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
        escape(c);
      } else {
        out += char(c);
      }
      ++i;
      continue;
    }
    const unsigned length = llvm::getNumBytesForUTF8(c);
    const bool c1Control = c == 0xc2 && i + 1 < text.size() &&
                           static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (i + length <= text.size() && llvm::isLegalUTF8Sequence(p, p + length) &&
        !c1Control) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

// |text| made a C identifier: other characters become '_', and |prefix|
// goes in front of an empty name or one starting with a digit.
static std::string cIdentifier(llvm::StringRef text, llvm::StringRef prefix) {
  std::string name = text.str();
  for (char &c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      c = '_';
    }
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    name = prefix.str() + name;
  }
  return name;
}

// The code generator for --target with the tuning flags. Every --target
// value names a CPU of the LLVM CPU target; a target for another device
// (compiler/targets/<name>/) is chosen here by its name.
static absl::StatusOr<std::unique_ptr<targets::Target>> makeTarget() {
  llvm_cpu::LlvmCpuTargetOptions options;
  options.staticLibrary = outputFormat == "static-library";
  options.fusion = tools::fusionOptionsFromFlags();
  options.codegen = tools::codegenOptionsFromFlags(options.fusion);
  auto cpu = llvm_cpu::LlvmCpuTarget::create(target, targetCpu,
                                             std::move(options));
  if (!cpu.ok()) {
    return cpu.status();
  }
  return std::unique_ptr<targets::Target>(std::move(*cpu));
}

static int fail(const absl::Status &status) {
  llvm::errs() << "osprey-compile: error: "
               << absl::StatusCodeToString(status.code()) << ": "
               << printable(std::string(status.message())) << "\n";
  return 1;
}

static int writeIr(const graph::Graph &g) {
  std::error_code ec;
  llvm::raw_fd_ostream os(outputFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::errs() << "osprey-compile: error: cannot open '" << outputFile
                 << "': " << ec.message() << "\n";
    return 1;
  }
  graph::printGraph(g, os);
  return 0;
}

// --quantize and its companion flags, checked and copied.
struct QuantizeSettings {
  std::string calibrationDir;
  ptq::CalibrationOptions calibration;
  std::set<std::string> skip;
  std::string reportFile;
};

static absl::StatusOr<std::optional<QuantizeSettings>> parseQuantizeFlags() {
  if (quantize.empty()) {
    if (!calibrationDir.empty() || !quantizeSkip.empty() ||
        !quantizeReport.empty() || calibrationMethod.getNumOccurrences()) {
      return absl::InvalidArgumentError(
          "--calibration, --calibration-method, --quantize-skip and "
          "--quantize-report need --quantize=int8");
    }
    return std::nullopt;
  }
  if (quantize != "int8") {
    return absl::InvalidArgumentError("unknown --quantize='" + quantize +
                                      "' (expected int8)");
  }
  if (calibrationDir.empty()) {
    return absl::InvalidArgumentError(
        "--quantize=int8 needs --calibration=DIR, a directory of .npy "
        "inputs to measure the activation ranges on");
  }
  QuantizeSettings settings;
  settings.calibrationDir = calibrationDir;
  llvm::StringRef method = calibrationMethod.getValue();
  if (method == "minmax") {
    settings.calibration.method = "minmax";
  } else if (method.consume_front("percentile")) {
    settings.calibration.method = "percentile";
    if (method.consume_front(":")) {
      double p = 0;
      if (method.getAsDouble(p) || !(p > 50 && p <= 100)) {
        return absl::InvalidArgumentError(
            "--calibration-method: percentile '" + method.str() +
            "' is not a number in (50, 100]");
      }
      settings.calibration.percentile = p;
    } else if (!method.empty()) {
      return absl::InvalidArgumentError("unknown --calibration-method='" +
                                        calibrationMethod + "'");
    }
  } else {
    return absl::InvalidArgumentError(
        "unknown --calibration-method='" + calibrationMethod +
        "' (expected minmax or percentile[:P])");
  }
  settings.skip.insert(quantizeSkip.begin(), quantizeSkip.end());
  settings.reportFile = quantizeReport;
  if (!settings.reportFile.empty() && outputFormat != "embedded-elf" &&
      outputFormat != "static-library") {
    return absl::InvalidArgumentError(
        "--quantize-report needs a module output (--output-format="
        "embedded-elf or static-library)");
  }
  return settings;
}

// What --quantize found: the calibration results and the quantized tensors.
struct QuantizeRun {
  QuantizeSettings settings;
  std::vector<ptq::CalibrationSample> samples;
  ptq::Calibration calibration;
  std::vector<ptq::QuantizedTensor> tensors;
  std::vector<std::string> outputNames;
};

// The float model prepared for quantization: shapes, constants and
// BatchNormalization folded into its Conv or Gemm (so the folded weights are
// the ones quantized).
static absl::StatusOr<std::unique_ptr<graph::Graph>>
loadPrepared(const ptq::GraphLoader &load) {
  auto g = load();
  if (!g.ok()) {
    return g.status();
  }
  graph::PassManager pm;
  if (absl::Status s = pm.addPasses(
          "propagate-shapes,fold-constants,propagate-shapes,remove-identity,"
          "fold-batch-norm,fold-constants,dce");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = pm.run(**g); !s.ok()) {
    return s;
  }
  return std::move(*g);
}

// Calibrates the float model and returns it in |model| with its Q/DQ pairs.
static absl::StatusOr<QuantizeRun>
quantizeModel(const ptq::GraphLoader &load, const QuantizeSettings &settings,
              std::unique_ptr<graph::Graph> &model) {
  ptq::GraphLoader prepared = [&]() { return loadPrepared(load); };
  auto g = prepared();
  if (!g.ok()) {
    return g.status();
  }
  if (absl::Status s = ptq::checkFloatModel(**g); !s.ok()) {
    return s;
  }
  if (absl::Status s = ptq::checkSkipNodes(**g, settings.skip); !s.ok()) {
    return s;
  }
  QuantizeRun run;
  run.settings = settings;
  auto samples = ptq::readCalibrationDir(settings.calibrationDir, **g);
  if (!samples.ok()) {
    return samples.status();
  }
  run.samples = std::move(*samples);
  auto calibration =
      ptq::calibrate(prepared, run.samples, settings.calibration);
  if (!calibration.ok()) {
    return calibration.status();
  }
  run.calibration = std::move(*calibration);
  auto tensors = ptq::insertQdq(**g, run.calibration.ranges, settings.skip);
  if (!tensors.ok()) {
    return tensors.status();
  }
  run.tensors = std::move(*tensors);
  run.outputNames.assign((*g)->outputNames().begin(),
                         (*g)->outputNames().end());
  model = std::move(*g);
  return run;
}

// Runs the int8 module and compares it with the float model on the
// calibration samples: the module written when it runs here (host CPU code
// in a module file, with the NPU when it has one), else the quantized graph
// compiled for this machine's CPU.
static absl::Status reportQuantization(const QuantizeRun &run,
                                       const ptq::GraphLoader &load,
                                       const std::string &outputPath,
                                       const std::string &format,
                                       const std::string &targetName,
                                       bool withNpu) {
  std::string modulePath = outputPath, device = withNpu ? "cpu-sync,npu"
                                                        : "cpu-sync";
  llvm::FileRemover remover;
  const bool runsHere =
      targetName == "host" && format == "embedded-elf" && outputPath != "-";
  if (!runsHere) {
    auto g = loadPrepared(load);
    if (!g.ok()) {
      return g.status();
    }
    auto tensors =
        ptq::insertQdq(**g, run.calibration.ranges, run.settings.skip);
    if (!tensors.ok()) {
      return tensors.status();
    }
    auto bytes = ptq::compileHostModule(**g);
    if (!bytes.ok()) {
      return bytes.status();
    }
    auto path = ptq::writeTemporaryModule(*bytes);
    if (!path.ok()) {
      return path.status();
    }
    modulePath = *path;
    remover.setFile(modulePath);
    device = "cpu-sync";
  }
  auto errors = ptq::measureError(modulePath, device, run.samples,
                                  run.calibration.floatOutputs,
                                  run.outputNames);
  if (!errors.ok()) {
    return absl::Status(errors.status().code(),
                        "measuring the int8 module: " +
                            std::string(errors.status().message()));
  }
  const ptq::CalibrationOptions &method = run.settings.calibration;
  llvm::errs() << "osprey-compile: int8 against float on "
               << run.samples.size() << " calibration sample"
               << (run.samples.size() == 1 ? "" : "s") << " ("
               << method.method;
  if (method.method == "percentile") {
    llvm::errs() << " " << llvm::format("%g", method.percentile);
  }
  llvm::errs() << (runsHere ? "" : "; this machine's CPU") << "):\n";
  for (const ptq::OutputError &e : *errors) {
    llvm::errs() << "  output '" << printable(e.name) << "': SNR "
                 << llvm::format("%.1f", e.snrDb) << " dB, max abs error "
                 << llvm::format("%.6g", e.maxAbsError) << "\n";
  }
  if (!run.settings.reportFile.empty()) {
    std::string json = ptq::reportJson(method, run.samples.size(), *errors,
                                       run.tensors);
    std::error_code ec;
    llvm::raw_fd_ostream os(run.settings.reportFile, ec,
                            llvm::sys::fs::OF_Text);
    if (ec) {
      return absl::InvalidArgumentError("cannot open '" +
                                        run.settings.reportFile +
                                        "': " + ec.message());
    }
    os << json;
  }
  return absl::OkStatus();
}

int main(int argc, char **argv) {
  const auto started = std::chrono::steady_clock::now();
  cl::ParseCommandLineOptions(argc, argv, "Osprey ONNX compiler\n");
  static const char *kTargets[] = {"host", "x86_64", "armv7em", "riscv32"};
  if (std::find(std::begin(kTargets), std::end(kTargets), target.getValue()) ==
      std::end(kTargets)) {
    return fail(absl::InvalidArgumentError(
        "unknown target '" + target + "' (expected host, x86_64, armv7em or "
                                      "riscv32)"));
  }
  static const char *kFormats[] = {"embedded-elf", "static-library",
                                   "graph-ir",     "structured",
                                   "dispatch",     "llvm-ir"};
  if (std::find(std::begin(kFormats), std::end(kFormats),
                outputFormat.getValue()) == std::end(kFormats)) {
    return fail(absl::InvalidArgumentError(
        "unknown output format '" + outputFormat +
        "' (expected embedded-elf, static-library, graph-ir, structured, "
        "dispatch or llvm-ir)"));
  }
  if (outputFormat == "static-library") {
    // The default target is this machine; asking for a library to link into
    // firmware without naming the firmware's CPU is almost certainly a
    // mistake that would otherwise surface as a confusing link error.
    if (target == "host") {
      return fail(absl::InvalidArgumentError(
          "--output-format=static-library needs an explicit --target "
          "(armv7em, riscv32 or x86_64); 'host' is only for modules run on "
          "this machine"));
    }
    if (outputFile == "-") {
      return fail(absl::InvalidArgumentError(
          "--output-format=static-library writes three files and needs "
          "-o <path>.osp (the object and header go beside it)"));
    }
  }
  // The model, with --input-shape and --input-value applied. The flags are
  // read first: the linker resets them, and --quantize compiles before the
  // main pipeline.
  onnximport::ImportOptions importOptions;
  if (absl::Status s = parseInputShapes(
          std::vector<std::string>(inputShapes.begin(), inputShapes.end()),
          importOptions);
      !s.ok()) {
    return fail(s);
  }
  if (absl::Status s = parseInputValues(
          std::vector<std::string>(inputValues.begin(), inputValues.end()),
          importOptions);
      !s.ok()) {
    return fail(s);
  }
  const std::string modelFile = inputFile;
  auto loadModel = [&]() -> absl::StatusOr<std::unique_ptr<graph::Graph>> {
    return onnximport::importOnnxFile(modelFile, importOptions);
  };
  auto quantizeSettings = parseQuantizeFlags();
  if (!quantizeSettings.ok()) {
    return fail(quantizeSettings.status());
  }
  std::optional<QuantizeRun> quantized;
  std::unique_ptr<graph::Graph> model;
  if (*quantizeSettings) {
    auto run = quantizeModel(loadModel, **quantizeSettings, model);
    if (!run.ok()) {
      return fail(run.status());
    }
    quantized = std::move(*run);
    // Calibration linked modules, which reset every flag: read them again.
    cl::ResetAllOptionOccurrences();
    cl::ParseCommandLineOptions(argc, argv, "Osprey ONNX compiler\n");
  } else {
    auto loaded = loadModel();
    if (!loaded.ok()) {
      return fail(loaded.status());
    }
    model = std::move(*loaded);
  }
  graph::Graph &g = *model;
  std::set<std::string> printAfter(printIrAfter.begin(), printIrAfter.end());
  if (printAfter.count("import") || printAfter.count("all")) {
    llvm::errs() << "// ----- IR after import ----- //\n";
    graph::PrintOptions options;
    options.elideLargeConstants = true;
    graph::printGraph(g, llvm::errs(), options);
  }
  if (dumpAfter == "import") {
    return writeIr(g);
  }
  graph::PassManager pm;
  for (const std::string &name : graph::defaultPipeline()) {
    if (absl::Status s = pm.addPasses(name); !s.ok()) {
      return fail(s);
    }
  }
  if (!dumpAfter.empty()) {
    if (!pm.hasPass(dumpAfter)) {
      return fail(absl::InvalidArgumentError(
          "--dump-after: pass '" + dumpAfter + "' is not in the pipeline"));
    }
    pm.setStopAfter(dumpAfter);
  }
  pm.setPrintIrAfter(printAfter, &llvm::errs());
  if (absl::Status s = pm.run(g); !s.ok()) {
    return fail(s);
  }
  if (printIr) {
    graph::PrintOptions options;
    options.elideLargeConstants = true;
    graph::printGraph(g, llvm::errs(), options);
  }
  if (!dumpAfter.empty() || outputFormat == "graph-ir") {
    return writeIr(g);
  }
  // The accelerator: which chains of layers go to it, lowered to external
  // ops in place of their graph ops.
  std::unique_ptr<npu::NpuOffload> offload;
  std::optional<npu::NpuConfig> npuConfig;
  if (accelerator.empty() &&
      (!offloadMode.empty() || dumpPartition || fallbackToCpu)) {
    return fail(absl::InvalidArgumentError(
        "--offload, --dump-partition and --fallback-to-cpu need "
        "--accelerator (e.g. --accelerator=npu-v1)"));
  }
  if (fallbackToCpu && outputFormat == "static-library") {
    return fail(absl::UnimplementedError(
        "--fallback-to-cpu with --output-format=static-library is not "
        "implemented (firmware links the code it runs; compile one module "
        "with --accelerator and one without)"));
  }
  if (!accelerator.empty()) {
    auto config = npu::parseNpuConfig(accelerator);
    if (!config.ok()) {
      return fail(config.status());
    }
    auto mode = npu::parseOffloadMode(offloadMode.empty() ? std::string("auto")
                                                          : offloadMode.getValue());
    if (!mode.ok()) {
      return fail(mode.status());
    }
    auto planned = npu::NpuOffload::plan(g, *config, *mode);
    if (!planned.ok()) {
      return fail(planned.status());
    }
    offload = std::move(*planned);
    npuConfig = *config;
    if (dumpPartition) {
      llvm::errs() << npu::formatPartition(offload->partition());
    }
  }
  structured::lowering::OpOverride lowerOverride;
  if (offload) {
    lowerOverride = [&](structured::lowering::LoweringContext &ctx,
                        const graph::Op &op) { return offload->lower(ctx, op); };
  }
  auto program = structured::lowering::lowerToStructured(g, lowerOverride);
  if (!program.ok()) {
    return fail(program.status());
  }
  auto printStage = [&](const char *stage, auto print) {
    if (printAfter.count(stage) || printAfter.count("all")) {
      llvm::errs() << "// ----- IR after " << stage << " ----- //\n";
      print(llvm::errs());
    }
  };
  printStage("lower-to-structured", [&](llvm::raw_ostream &os) {
    structured::printProgram(*program, os);
  });
  // The code generator, configured from the flags; fusion makes its
  // target-dependent decisions (the Winograd weights replace the 3x3 ones in
  // the module).
  auto codeTarget = makeTarget();
  if (!codeTarget.ok()) {
    return fail(codeTarget.status());
  }
  targets::Target &tgt = **codeTarget;
  if (absl::Status s = structured::fuseAndTile(*program, tgt.fusionOptions());
      !s.ok()) {
    return fail(s);
  }
  printStage("fuse", [&](llvm::raw_ostream &os) {
    structured::printProgram(*program, os);
  });
  auto openText = [&](std::unique_ptr<llvm::raw_fd_ostream> &os,
                      const std::string &path) {
    std::error_code ec;
    os = std::make_unique<llvm::raw_fd_ostream>(path, ec,
                                                llvm::sys::fs::OF_Text);
    if (ec) {
      llvm::errs() << "osprey-compile: error: cannot open '" << path
                   << "': " << ec.message() << "\n";
      return false;
    }
    return true;
  };
  std::unique_ptr<llvm::raw_fd_ostream> os;
  if (outputFormat == "structured") {
    if (!openText(os, outputFile)) {
      return 1;
    }
    structured::printProgram(*program, *os);
    return 0;
  }
  auto dispatchProgram = dispatch::formDispatchRegions(std::move(*program));
  if (!dispatchProgram.ok()) {
    return fail(dispatchProgram.status());
  }
  printStage("form-dispatch", [&](llvm::raw_ostream &os) {
    dispatch::printDispatchProgram(*dispatchProgram, os);
  });
  const dispatch::PlanOptions planOptions =
      tools::planOptionsFromFlags(targets::planOptionsFor(tgt));
  if (absl::Status s = dispatch::planMemory(*dispatchProgram, planOptions);
      !s.ok()) {
    return fail(s);
  }
  printStage("plan-memory", [&](llvm::raw_ostream &os) {
    dispatch::printDispatchProgram(*dispatchProgram, os);
  });
  if (outputFormat == "dispatch") {
    if (!openText(os, outputFile)) {
      return 1;
    }
    dispatch::printDispatchProgram(*dispatchProgram, *os);
    return 0;
  }
  std::string moduleName =
      cIdentifier(dispatchProgram->program.name, "m_");
  // lld resets every LLVM command-line option to its default when a link
  // finishes, so read the options this tool still needs first.
  const std::string format = outputFormat, outputPath = outputFile;
  const bool withFallback = fallbackToCpu;
  const std::string reportPath = reportFile, modelPath = inputFile,
                    targetName = target;
  auto writeBinary = [&](const std::string &path,
                         llvm::ArrayRef<uint8_t> bytes) {
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
    if (ec) {
      llvm::errs() << "osprey-compile: error: cannot open '" << path
                   << "': " << ec.message() << "\n";
      return false;
    }
    out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return true;
  };
  std::string irText;
  targets::BuildOptions build;
  build.name = moduleName;
  if (format == "static-library") {
    // Files and library are named after the output (two models exported
    // with the same graph name can then live in one firmware image).
    build.name = cIdentifier(llvm::sys::path::stem(outputPath), "m");
  }
  if (format == "llvm-ir") {
    build.irText = &irText;
  }
  // The regions of each device: external ops' regions are the NPU's.
  std::vector<unsigned> cpuRegions, npuRegions;
  for (unsigned r = 0; r < dispatchProgram->regions.size(); ++r) {
    const auto &root =
        dispatchProgram->program.ops[dispatchProgram->regions[r].ops[0]];
    (root.external ? npuRegions : cpuRegions).push_back(r);
  }
  // The CPU's executable (none when the NPU computes everything).
  absl::StatusOr<targets::Executable> executable = targets::Executable();
  const bool cpuExecutable = !cpuRegions.empty() || npuRegions.empty();
  if (cpuExecutable) {
    executable = npuRegions.empty()
                     ? tgt.buildExecutable(*dispatchProgram, build)
                     : tgt.buildExecutable(
                           targets::regionSubset(*dispatchProgram, cpuRegions),
                           build);
  }
  if (!executable.ok()) {
    return fail(executable.status());
  }
  std::optional<targets::Executable> npuExecutable;
  if (!npuRegions.empty()) {
    npu::NpuTarget npuTarget(*npuConfig);
    auto built = npuTarget.buildExecutable(
        targets::regionSubset(*dispatchProgram, npuRegions), build);
    if (!built.ok()) {
      return fail(built.status());
    }
    npuExecutable = std::move(*built);
  }
  if (format == "llvm-ir") {
    if (!openText(os, outputPath)) {
      return 1;
    }
    *os << irText;
    return 0;
  }
  std::vector<vm_backend::ModuleExecutable> executables;
  if (cpuExecutable) {
    executables.push_back({&*executable, cpuRegions, false});
  }
  if (npuExecutable) {
    executables.push_back({&*npuExecutable, npuRegions, true});
  }
  std::vector<vm_backend::ModuleVariant> variants = {
      {&*dispatchProgram, executables}};
  // --fallback-to-cpu: the whole model compiled again for the CPU alone,
  // the variant a call runs when the session has no NPU.
  std::optional<dispatch::DispatchProgram> cpuProgram;
  std::optional<targets::Executable> cpuOnly;
  if (withFallback && !npuRegions.empty()) {
    auto formed = tools::lowerToDispatch(g, tgt, planOptions);
    if (!formed.ok()) {
      return fail(formed.status());
    }
    cpuProgram = std::move(*formed);
    targets::BuildOptions cpuBuild = build;
    cpuBuild.name = build.name + "_cpu";
    auto built = tgt.buildExecutable(*cpuProgram, cpuBuild);
    if (!built.ok()) {
      return fail(built.status());
    }
    cpuOnly = std::move(*built);
    vm_backend::ModuleExecutable all{&*cpuOnly, {}, false};
    for (unsigned r = 0; r < cpuProgram->regions.size(); ++r) {
      all.regions.push_back(r);
    }
    variants.push_back({&*cpuProgram, {all}});
  }
  auto module = vm_backend::emitModule(variants, moduleName);
  if (!module.ok()) {
    return fail(module.status());
  }
  if (!writeBinary(outputPath, *module)) {
    return 1;
  }
  for (const targets::Executable::File &file : executable->files) {
    llvm::SmallString<256> path(outputPath);
    llvm::sys::path::replace_extension(path, file.extension);
    if (!writeBinary(path.str().str(), file.bytes)) {
      return 1;
    }
  }
  if (quantized) {
    if (absl::Status s = reportQuantization(*quantized, loadModel, outputPath,
                                            format, targetName,
                                            offload != nullptr);
        !s.ok()) {
      return fail(s);
    }
  }
  if (!reportPath.empty()) {
    tools::ReportInput report;
    report.model = llvm::sys::path::filename(modelPath).str();
    report.target = targetName;
    report.compileSeconds = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - started)
                                .count();
    if (offload) {
      report.partition = &offload->partition();
      report.config = &*npuConfig;
    }
    report.program = &*dispatchProgram;
    std::string html = tools::renderCompileReport(report);
    if (!writeBinary(reportPath, llvm::ArrayRef<uint8_t>(
                                     reinterpret_cast<const uint8_t *>(html.data()),
                                     html.size()))) {
      return 1;
    }
  }
  return 0;
}
