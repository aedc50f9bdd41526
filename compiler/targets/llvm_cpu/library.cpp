// Executable library emission: regions, tables, query, optimization, object.
#include "compiler/targets/llvm_cpu/library.h"

#include "compiler/graph/status.h"
#include "compiler/targets/llvm_cpu/dispatch_codegen.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"

namespace osprey::compiler::llvm_cpu {
namespace {

llvm::Constant *cString(llvm::Module &m, llvm::StringRef s,
                        const llvm::Twine &name) {
  llvm::Constant *data =
      llvm::ConstantDataArray::getString(m.getContext(), s, true);
  auto *g = new llvm::GlobalVariable(m, data->getType(), true,
                                     llvm::GlobalValue::PrivateLinkage, data,
                                     name);
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return g;
}

llvm::GlobalVariable *constantGlobal(llvm::Module &m, llvm::Constant *init,
                                     const llvm::Twine &name) {
  return new llvm::GlobalVariable(m, init->getType(), true,
                                  llvm::GlobalValue::InternalLinkage, init,
                                  name);
}

void emitTables(llvm::Module &m, const dispatch::DispatchProgram &program,
                llvm::ArrayRef<llvm::Function *> fns, llvm::StringRef name) {
  llvm::LLVMContext &c = m.getContext();
  AbiTypes abi(m);
  llvm::Type *ptr = llvm::PointerType::get(c, 0);
  llvm::Type *i32 = llvm::Type::getInt32Ty(c);
  llvm::Type *i16 = llvm::Type::getInt16Ty(c);
  llvm::Type *i64 = llvm::Type::getInt64Ty(c);
  llvm::Constant *header = constantGlobal(
      m,
      llvm::ConstantStruct::get(
          abi.header, {llvm::ConstantInt::get(i32, 1),
                       cString(m, name, "library_name")}),
      "library_header");
  std::vector<llvm::Constant *> ptrs, attrs, names;
  for (size_t i = 0; i < fns.size(); ++i) {
    const dispatch::DispatchRegion &r = program.regions[i];
    ptrs.push_back(fns[i]);
    uint64_t writeMask = 0;
    for (size_t b = 0; b < r.bindings.size(); ++b) {
      if (r.bindings[b].write) {
        writeMask |= b < 64 ? uint64_t(1) << b : 0;
      }
    }
    llvm::Constant *one = llvm::ConstantInt::get(i32, 1);
    attrs.push_back(llvm::ConstantStruct::get(
        abi.dispatchAttrs,
        {llvm::ConstantInt::get(i16, r.bindings.size()),
         llvm::ConstantInt::get(i16, 0), llvm::ConstantInt::get(i64, writeMask),
         llvm::ConstantInt::get(i32, 0),
         llvm::ConstantArray::get(llvm::ArrayType::get(i32, 3),
                                  {one, one, one})}));
    names.push_back(cString(m, r.name, "export_name"));
  }
  auto array = [&](llvm::Type *elem, std::vector<llvm::Constant *> &v,
                   const char *n) {
    return constantGlobal(
        m, llvm::ConstantArray::get(llvm::ArrayType::get(elem, v.size()), v),
        n);
  };
  llvm::StructType *importsTy =
      llvm::cast<llvm::StructType>(abi.library->getElementType(1));
  llvm::StructType *exportsTy =
      llvm::cast<llvm::StructType>(abi.library->getElementType(2));
  llvm::Constant *library = constantGlobal(
      m,
      llvm::ConstantStruct::get(
          abi.library,
          {header,
           llvm::ConstantStruct::get(
               importsTy, {llvm::ConstantInt::get(i32, 0),
                           llvm::ConstantPointerNull::get(
                               llvm::PointerType::get(c, 0))}),
           llvm::ConstantStruct::get(
               exportsTy,
               {llvm::ConstantInt::get(i32, fns.size()),
                array(ptr, ptrs, "export_ptrs"),
                array(abi.dispatchAttrs, attrs, "export_attrs"),
                array(ptr, names, "export_names")})}),
      "library");
  // const header* const* osprey_executable_library_query(uint32_t, env*)
  auto *queryTy = llvm::FunctionType::get(ptr, {i32, ptr}, false);
  auto *query = llvm::Function::Create(queryTy,
                                       llvm::GlobalValue::ExternalLinkage,
                                       "osprey_executable_library_query", m);
  query->setVisibility(llvm::GlobalValue::DefaultVisibility);
  query->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", query));
  llvm::Value *ok = b.CreateICmpUGE(query->getArg(0), b.getInt32(1));
  b.CreateRet(b.CreateSelect(ok, library,
                             llvm::ConstantPointerNull::get(
                                 llvm::PointerType::get(c, 0))));
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  // No library calls may appear (memcpy/memset idioms included): the library
  // links against nothing.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  tlii.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

} // namespace

absl::StatusOr<std::vector<uint8_t>>
buildExecutableLibrary(const dispatch::DispatchProgram &program,
                       const CpuTarget &target, const LibraryOptions &options) {
  COMPILER_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm,
                            createTargetMachine(target));
  llvm::LLVMContext context;
  llvm::Module module(options.name.empty() ? program.program.name
                                           : options.name,
                      context);
  module.setTargetTriple(target.triple);
  module.setDataLayout(tm->createDataLayout());
  std::vector<llvm::Function *> fns;
  for (const dispatch::DispatchRegion &region : program.regions) {
    COMPILER_ASSIGN_OR_RETURN(llvm::Function * fn,
                              emitDispatchFunction(program, region, module));
    fn->addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty()) {
      fn->addFnAttr("target-features", target.features);
    }
    fns.push_back(fn);
  }
  emitTables(module, program, fns,
             options.name.empty() ? program.program.name : options.name);
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (llvm::verifyModule(module, &errorStream)) {
    return absl::InternalError("generated LLVM IR is invalid: " + error);
  }
  optimize(module, *tm);
  if (options.llvmIr) {
    llvm::raw_string_ostream os(*options.llvmIr);
    module.print(os, nullptr);
  }
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::ObjectFile)) {
    return absl::InternalError("target '" + target.triple +
                               "' cannot emit object files");
  }
  pm.run(module);
  return linkSharedLibrary(object, target);
}

} // namespace osprey::compiler::llvm_cpu
