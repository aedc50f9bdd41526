// Pass registry by name and the pass manager.
#include "compiler/graph/passes/pass_manager.h"

#include "compiler/graph/ir_text.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/graph/verifier.h"
#include "llvm/ADT/SmallVector.h"

namespace osprey::compiler::graph {
namespace {

struct PassEntry {
  const char *name;
  std::unique_ptr<GraphPass> (*create)();
};

template <typename T> std::unique_ptr<GraphPass> make() {
  return std::make_unique<T>();
}

const PassEntry kPasses[] = {
    {"propagate-shapes", make<ShapePropagationPass>},
    {"fold-constants", make<ConstantFoldingPass>},
    {"fold-batch-norm", make<FoldBatchNormPass>},
    {"conv1x1-to-matmul", make<Conv1x1ToMatMulPass>},
    {"fold-transposes", make<FoldTransposesPass>},
    {"remove-identity", make<RemoveIdentityPass>},
    {"fuse-gelu", make<FuseGeluPass>},
    {"fuse-qdq", make<FuseQdqPass>},
    {"dce", make<DeadCodeEliminationPass>},
};

} // namespace

absl::StatusOr<std::unique_ptr<GraphPass>> createPass(llvm::StringRef spec) {
  spec = spec.trim();
  auto [name, rest] = spec.split('{');
  name = name.trim();
  std::map<std::string, std::string> options;
  if (spec.contains('{')) {
    if (!rest.consume_back("}")) {
      return absl::InvalidArgumentError("malformed pass options in '" +
                                        spec.str() + "'");
    }
    llvm::SmallVector<llvm::StringRef> items;
    rest.split(items, ',', -1, false);
    for (llvm::StringRef item : items) {
      auto [key, value] = item.split('=');
      options[key.trim().str()] = value.trim().str();
    }
  }
  if (name == "fold-constants") {
    size_t maxBytes = 1 << 20;
    for (const auto &[key, value] : options) {
      if (key != "max-bytes" || llvm::StringRef(value).getAsInteger(10, maxBytes)) {
        return absl::InvalidArgumentError("unknown or malformed option '" +
                                          key + "' for pass fold-constants");
      }
    }
    return std::unique_ptr<GraphPass>(
        std::make_unique<ConstantFoldingPass>(maxBytes));
  }
  for (const PassEntry &entry : kPasses) {
    if (name == entry.name) {
      if (!options.empty()) {
        return absl::InvalidArgumentError("pass '" + name.str() +
                                          "' takes no options");
      }
      return entry.create();
    }
  }
  return absl::InvalidArgumentError("unknown pass '" + name.str() + "'");
}

std::vector<std::pair<std::string, std::string>> listPasses() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PassEntry &entry : kPasses) {
    auto pass = entry.create();
    out.emplace_back(pass->name().str(), pass->description().str());
  }
  return out;
}

std::vector<std::string> defaultPipeline() {
  // fuse-qdq runs before constant folding, which would turn dequantized
  // constant weights into float ones.
  return {"propagate-shapes",  "fuse-qdq",        "fold-constants",
          "propagate-shapes",  "remove-identity", "fuse-gelu",
          "fold-transposes",   "fold-batch-norm", "conv1x1-to-matmul",
          "fold-constants",    "dce"};
}

absl::Status PassManager::addPasses(llvm::StringRef specs) {
  // Split on commas outside braces so "a{k=v,w=x},b" works.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= specs.size(); ++i) {
    if (i == specs.size() || (specs[i] == ',' && depth == 0)) {
      llvm::StringRef spec = specs.slice(start, i).trim();
      start = i + 1;
      if (spec.empty()) {
        continue;
      }
      auto pass = createPass(spec);
      if (!pass.ok()) {
        return pass.status();
      }
      addPass(std::move(*pass));
    } else if (specs[i] == '{') {
      ++depth;
    } else if (specs[i] == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

bool PassManager::hasPass(llvm::StringRef name) const {
  for (const auto &pass : passes_) {
    if (pass->name() == name) {
      return true;
    }
  }
  return false;
}

absl::Status PassManager::run(Graph &graph) {
  for (const auto &pass : passes_) {
    absl::Status status = pass->run(graph);
    if (status.ok() && verifyEach_) {
      status = verifyGraph(graph);
    }
    if (!status.ok()) {
      return absl::Status(status.code(),
                          std::string(status.message()) +
                              "; while running pass '" + pass->name().str() +
                              "'");
    }
    if (printStream_ &&
        (printAfter_.count("all") || printAfter_.count(pass->name().str()))) {
      *printStream_ << "// ----- IR after " << pass->name() << " ----- //\n";
      PrintOptions options;
      options.elideLargeConstants = true;
      printGraph(graph, *printStream_, options);
    }
    if (pass->name() == stopAfter_) {
      break;
    }
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
