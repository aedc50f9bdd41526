// Calibration and accuracy report for osprey-compile --quantize: the float
// graph is compiled for this machine with every activation as an extra
// output, run in-process through the runtime (tools/common/module_runner.h)
// on the calibration inputs, and the int8 module is run on the same inputs
// and compared with the float outputs.
//
// Calibration directory layout:
// - a model with one input: every *.npy file directly in the directory is
//   one sample (in name order);
// - a model with several inputs: every subdirectory is one sample, holding
//   <input name>.npy for each input (characters of the name other than
//   letters, digits, '.', '-' and '_' written as '_').
// Each file must have the input's element type and static shape.
#ifndef OSPREY_COMPILER_TOOLS_CALIBRATION_H_
#define OSPREY_COMPILER_TOOLS_CALIBRATION_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/tools/post_training_quantization.h"

namespace osprey::compiler::ptq {

// One calibration sample: one .npy file per graph input, in input order.
struct CalibrationSample {
  std::vector<std::string> files;
};

// Reads and checks the samples of |dir| for the inputs of |g|. NOT_FOUND when
// |dir| is missing, INVALID_ARGUMENT when it holds no sample or a file does
// not fit its input (naming the file and the expected type).
absl::StatusOr<std::vector<CalibrationSample>>
readCalibrationDir(const std::string &dir, const graph::Graph &g);

// A fresh copy of the float model (imported and prepared), for the graphs
// calibration compiles.
using GraphLoader =
    std::function<absl::StatusOr<std::unique_ptr<graph::Graph>>()>;

struct CalibrationOptions {
  // "minmax" or "percentile".
  std::string method = "minmax";
  double percentile = 99.99;
};

// Per-sample values of the model's outputs (as doubles, row-major).
using OutputValues = std::vector<std::vector<std::vector<double>>>;

struct Calibration {
  std::map<std::string, Range> ranges;
  // floatOutputs[sample][output]
  OutputValues floatOutputs;
};

// Runs the float model on |samples| and records the range of every
// activation (observedValues) by |options.method|.
absl::StatusOr<Calibration>
calibrate(const GraphLoader &load, const std::vector<CalibrationSample> &samples,
          const CalibrationOptions &options);

// Compiles |g| (the default graph pipeline and code generation for this
// machine's CPU) into module bytes.
absl::StatusOr<std::vector<uint8_t>> compileHostModule(graph::Graph &g);

// Writes module |bytes| to a new temporary file and returns its path (the
// caller removes it).
absl::StatusOr<std::string> writeTemporaryModule(llvm::ArrayRef<uint8_t> bytes);

// The error of one output of the int8 module against the float model over
// all samples.
struct OutputError {
  std::string name;
  double snrDb = 0; // +inf when equal
  double maxAbsError = 0;
};

// Runs the module at |modulePath| on |device| ("cpu-sync", "cpu-sync,npu")
// on |samples| and compares its outputs with |floatOutputs|.
absl::StatusOr<std::vector<OutputError>>
measureError(const std::string &modulePath, const std::string &device,
             const std::vector<CalibrationSample> &samples,
             const OutputValues &floatOutputs,
             const std::vector<std::string> &outputNames);

// The report as JSON: method, sample count, per output snr_db (null when
// infinite) and max_abs_error, per quantized tensor range, scale and zero
// point.
std::string reportJson(const CalibrationOptions &options, size_t samples,
                       const std::vector<OutputError> &errors,
                       const std::vector<QuantizedTensor> &tensors);

} // namespace osprey::compiler::ptq

#endif // OSPREY_COMPILER_TOOLS_CALIBRATION_H_
