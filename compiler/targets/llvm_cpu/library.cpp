// Executable library emission: regions, tables, query, optimization, object,
// and the static-library form (object + C header).
#include "compiler/targets/llvm_cpu/library.h"

#include <cctype>

#include "compiler/graph/status.h"
#include "compiler/targets/llvm_cpu/dispatch_codegen.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Object/ObjectFile.h"
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
                llvm::ArrayRef<llvm::Function *> fns, llvm::StringRef name,
                llvm::StringRef queryName) {
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
  auto *query = llvm::Function::Create(
      queryTy, llvm::GlobalValue::ExternalLinkage,
      queryName.empty() ? "osprey_executable_library_query" : queryName, m);
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

bool isCIdentifier(llvm::StringRef s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return llvm::all_of(s, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Undefined symbols of the relocatable |object|: anything the firmware
// would have to provide, which a library must not need.
absl::StatusOr<std::vector<std::string>>
undefinedSymbols(llvm::ArrayRef<uint8_t> object) {
  llvm::MemoryBufferRef ref(
      llvm::StringRef(reinterpret_cast<const char *>(object.data()),
                      object.size()),
      "library.o");
  auto file = llvm::object::ObjectFile::createObjectFile(ref);
  if (!file) {
    return absl::InternalError("cannot read back the library object: " +
                               llvm::toString(file.takeError()));
  }
  std::vector<std::string> undefined;
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto flags = symbol.getFlags();
    auto name = symbol.getName();
    if (!flags || !name) {
      llvm::consumeError(flags.takeError());
      llvm::consumeError(name.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) && !name->empty()) {
      undefined.push_back(name->str());
    }
  }
  return undefined;
}

std::string staticLibraryHeader(llvm::StringRef name,
                                llvm::StringRef queryName,
                                llvm::StringRef triple) {
  std::string guard = "OSPREY_STATIC_LIBRARY_" + name.upper() + "_H_";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* Osprey static executable library '" << name << "' (" << triple
     << "), generated by osprey-compile.\n"
     << " *\n"
     << " * Link " << name << ".o into the application and register the query\n"
     << " * function under the library name before creating the CPU device:\n"
     << " *\n"
     << " *   osprey::hal::local::StaticLibraryRegistry libraries;\n"
     << " *   libraries.Register(" << name << "_LIBRARY_NAME, " << queryName
     << ");\n"
     << " *   options.static_libraries = &libraries;  // CpuSyncDeviceOptions\n"
     << " *\n"
     << " * The module compiled with it (format \"static\") names this library;\n"
     << " * the static loader looks the name up in the registry.\n"
     << " */\n"
     << "#ifndef " << guard << "\n"
     << "#define " << guard << "\n\n"
     << "#include \"hal/local/executable_library.h\"\n\n"
     << "#ifdef __cplusplus\n"
     << "extern \"C\" {\n"
     << "#endif\n\n"
     << "/* Name the module refers to the library by. */\n"
     << "#define " << name << "_LIBRARY_NAME \"" << name << "\"\n\n"
     << "/* Has the type osprey_executable_library_query_fn_t. */\n"
     << "const osprey_executable_library_header_t* const* " << queryName
     << "(\n"
     << "    uint32_t max_version, const osprey_executable_environment_v1_t* "
        "environment);\n\n"
     << "#ifdef __cplusplus\n"
     << "}  /* extern \"C\" */\n"
     << "#endif\n\n"
     << "#endif  /* " << guard << " */\n";
  return text;
}

} // namespace

absl::StatusOr<std::vector<uint8_t>>
buildExecutableObject(const dispatch::DispatchProgram &program,
                      const CpuTarget &target, const LibraryOptions &options,
                      bool positionIndependent) {
  COMPILER_ASSIGN_OR_RETURN(
      std::unique_ptr<llvm::TargetMachine> tm,
      createTargetMachine(target, positionIndependent));
  llvm::LLVMContext context;
  std::string name =
      options.name.empty() ? program.program.name : options.name;
  llvm::Module module(name, context);
  module.setTargetTriple(target.triple);
  module.setDataLayout(tm->createDataLayout());
  // Code generators pick vector widths from the target's features.
  module.addModuleFlag(llvm::Module::Warning, kTargetFeaturesFlag,
                       llvm::MDString::get(context, target.features));
  std::vector<llvm::Function *> fns;
  for (const dispatch::DispatchRegion &region : program.regions) {
    COMPILER_ASSIGN_OR_RETURN(
        llvm::Function * fn,
        emitDispatchFunction(program, region, module, options.codegen));
    fn->addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty()) {
      fn->addFnAttr("target-features", target.features);
    }
    if (unsigned bits = preferredVectorBits(target.triple, target.features)) {
      fn->addFnAttr("prefer-vector-width", std::to_string(bits));
      fn->addFnAttr("min-legal-vector-width", std::to_string(bits));
    }
    fns.push_back(fn);
  }
  // Helpers the regions call (microkernels) get the same target attributes,
  // so they compile for the same CPU and can be inlined.
  for (llvm::Function &f : module) {
    if (!f.isDeclaration() && !f.hasFnAttribute("target-cpu")) {
      f.addFnAttr("target-cpu", target.cpu);
      if (!target.features.empty()) {
        f.addFnAttr("target-features", target.features);
      }
    }
  }
  emitTables(module, program, fns, name, options.queryName);
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
  return std::vector<uint8_t>(object.begin(), object.end());
}

absl::StatusOr<std::vector<uint8_t>>
buildExecutableLibrary(const dispatch::DispatchProgram &program,
                       const CpuTarget &target, const LibraryOptions &options) {
  COMPILER_ASSIGN_OR_RETURN(
      std::vector<uint8_t> object,
      buildExecutableObject(program, target, options,
                            /*positionIndependent=*/true));
  return linkSharedLibrary(
      llvm::ArrayRef<char>(reinterpret_cast<const char *>(object.data()),
                           object.size()),
      target);
}

absl::StatusOr<StaticLibrary>
buildStaticLibrary(const dispatch::DispatchProgram &program,
                   const CpuTarget &target, const LibraryOptions &options) {
  if (!isCIdentifier(options.name)) {
    return absl::InvalidArgumentError(
        "static library name '" + options.name +
        "' is not a C identifier (it names the query function)");
  }
  StaticLibrary library;
  library.queryName = options.name + "_library_query";
  LibraryOptions objectOptions = options;
  objectOptions.queryName = library.queryName;
  // Host objects go into PIE programs; firmware is linked at fixed addresses.
  COMPILER_ASSIGN_OR_RETURN(
      library.object, buildExecutableObject(program, target, objectOptions,
                                            /*positionIndependent=*/
                                            !target.embedded));
  COMPILER_ASSIGN_OR_RETURN(std::vector<std::string> undefined,
                            undefinedSymbols(library.object));
  if (!undefined.empty()) {
    return absl::InternalError("static library '" + options.name +
                               "' would need undefined symbol '" +
                               undefined.front() +
                               "' (libraries link against nothing)");
  }
  library.header =
      staticLibraryHeader(options.name, library.queryName, target.triple);
  return library;
}

} // namespace osprey::compiler::llvm_cpu
