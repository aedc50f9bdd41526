// osprey-opt: reads textual graph IR, runs graph passes by name, prints IR.
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/graph/passes/pass_manager.h"
#include "compiler/graph/verifier.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/tools/fusion_flags.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace osprey::compiler::graph;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .ir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"));
static cl::list<std::string>
    passSpecs("pass", cl::desc("Passes to run, comma-separated (repeatable)"),
              cl::value_desc("name[{k=v}],..."));
static cl::list<std::string>
    printIrAfter("print-ir-after",
                 cl::desc("Print the IR to stderr after the named pass "
                          "('all' for every pass)"),
                 cl::value_desc("name"));
static cl::opt<bool> verifyEach("verify-each",
                                cl::desc("Verify the IR after each pass"),
                                cl::init(true));
static cl::opt<bool>
    lowerStructured("lower-to-structured",
                    cl::desc("After the graph passes, lower to structured "
                             "ops and print those instead"));
static cl::opt<bool> fuse("fuse",
                          cl::desc("Lower to structured ops and make fusion "
                                   "and tiling decisions"));
// The target's matrix-product microkernel for fusion's target-dependent
// decisions (structured::FusionOptions; the defaults are scalar code).
static cl::opt<unsigned>
    fuseVectorWidth("fuse-vector-width",
                    cl::desc("f32 lanes per vector of the target (1: scalar)"),
                    cl::init(1));
static cl::opt<unsigned>
    fuseKernelRows("fuse-kernel-rows",
                   cl::desc("Rows per block of the target's GEMM kernel"),
                   cl::init(1));
static cl::opt<unsigned>
    fuseKernelVectors("fuse-kernel-vectors",
                      cl::desc("Vectors per row of the target's GEMM kernel"),
                      cl::init(1));
static cl::opt<bool>
    fuseMatVecRows("fuse-matvec-rows",
                   cl::desc("The target has a two-pair integer multiply-add "
                            "(Arm DSP): int8 matrix-vector products read "
                            "their weights as rows"),
                   cl::init(false));
static cl::opt<bool>
    formDispatch("form-dispatch",
                 cl::desc("Lower, fuse and form dispatch regions; print the "
                          "dispatch program"));
static cl::opt<bool>
    planMemoryFlag("plan-memory",
                   cl::desc("Like --form-dispatch, then plan transient "
                            "memory and insert barriers"));
static cl::opt<bool> listPassesFlag("list-passes",
                                    cl::desc("List the available passes"));

static int fail(const absl::Status &status) {
  llvm::errs() << "osprey-opt: error: " << std::string(status.message()) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "Osprey graph IR optimizer\n");
  if (listPassesFlag) {
    for (const auto &[name, description] : listPasses()) {
      llvm::outs() << "  " << name << " - " << description << "\n";
    }
    return 0;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer) {
    llvm::errs() << "osprey-opt: error: cannot read '" << inputFile
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  auto graph = parseGraph((*buffer)->getBuffer(), inputFile);
  if (!graph.ok()) {
    return fail(graph.status());
  }
  if (absl::Status s = verifyGraph(**graph); !s.ok()) {
    return fail(s);
  }
  PassManager pm;
  pm.setVerifyEach(verifyEach);
  for (const std::string &spec : passSpecs) {
    if (absl::Status s = pm.addPasses(spec); !s.ok()) {
      return fail(s);
    }
  }
  pm.setPrintIrAfter({printIrAfter.begin(), printIrAfter.end()},
                     &llvm::errs());
  if (absl::Status s = pm.run(**graph); !s.ok()) {
    return fail(s);
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(outputFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::errs() << "osprey-opt: error: cannot open '" << outputFile
                 << "': " << ec.message() << "\n";
    return 1;
  }
  if (lowerStructured || fuse || formDispatch || planMemoryFlag) {
    auto program =
        osprey::compiler::structured::lowering::lowerToStructured(**graph);
    if (!program.ok()) {
      return fail(program.status());
    }
    if (fuse || formDispatch || planMemoryFlag) {
      osprey::compiler::structured::FusionOptions fusion =
          osprey::compiler::tools::fusionOptionsFromFlags();
      fusion.vectorWidth = fuseVectorWidth;
      fusion.kernelRows = fuseKernelRows;
      fusion.kernelVectors = fuseKernelVectors;
      fusion.matVecRows = fuseMatVecRows;
      if (absl::Status s =
              osprey::compiler::structured::fuseAndTile(*program, fusion);
          !s.ok()) {
        return fail(s);
      }
    }
    if (formDispatch || planMemoryFlag) {
      namespace dispatch = osprey::compiler::dispatch;
      auto d = dispatch::formDispatchRegions(std::move(*program));
      if (!d.ok()) {
        return fail(d.status());
      }
      if (planMemoryFlag) {
        if (absl::Status s = dispatch::planMemory(
                *d, osprey::compiler::tools::planOptionsFromFlags());
            !s.ok()) {
          return fail(s);
        }
      }
      dispatch::printDispatchProgram(*d, os);
      return 0;
    }
    osprey::compiler::structured::printProgram(*program, os);
    return 0;
  }
  printGraph(**graph, os);
  return 0;
}
