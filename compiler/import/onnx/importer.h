// ONNX importer: ModelProto (opsets 11-18) -> graph IR.
#ifndef OSPREY_COMPILER_IMPORT_ONNX_IMPORTER_H_
#define OSPREY_COMPILER_IMPORT_ONNX_IMPORTER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::onnximport {

struct ImportOptions {
  // Run onnx::shape_inference::InferShapes before converting (its results
  // refine the types computed by the graph shape rules).
  bool onnxShapeInference = true;
  // Static shapes for graph inputs, by name: each replaces the declared
  // shape, whose rank and static dims it must repeat.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  // Graph inputs bound to a value at compile time, by name: the input
  // becomes a constant (and the graph no longer takes it), so everything
  // computed from it folds, including If conditions on it. The element
  // type must be the declared one and the dims agree with the declared (or
  // pinned) shape.
  struct InputValue {
    graph::ElementType elementType = graph::ElementType::F32;
    std::vector<int64_t> dims;
    graph::DenseData data;
  };
  std::map<std::string, InputValue> inputValues;
};

// Reads the model at |path| (external tensor data is resolved relative to its
// folder and mapped, not copied) and converts it. Returns INVALID_ARGUMENT for
// unreadable or malformed models, unsupported opsets, every unsupported op at
// once (with node names and op types), bad attributes (naming the node) and
// external data that is missing, out of bounds or outside the model folder.
absl::StatusOr<std::unique_ptr<graph::Graph>>
importOnnxFile(llvm::StringRef path, const ImportOptions &options = {});

// As importOnnxFile, from serialized ModelProto bytes; |baseDir| locates
// external data files.
absl::StatusOr<std::unique_ptr<graph::Graph>>
importOnnxBytes(std::string bytes, llvm::StringRef baseDir,
                const ImportOptions &options = {});

// ONNX op types the importer accepts (default domain).
std::vector<std::string> supportedOnnxOps();

} // namespace osprey::compiler::onnximport

#endif // OSPREY_COMPILER_IMPORT_ONNX_IMPORTER_H_
