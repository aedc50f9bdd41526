# lit suite configuration for the compiler tests (compiler/**/test/*.ir, *.test).
import os

import lit.formats

config.name = "osprey-compiler"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir", ".test"]
config.test_source_root = os.path.join(config.osprey_src_root, "compiler")
# compiler/test holds only the suite configuration.
config.excludes = ["CMakeLists.txt", "suite.cfg.py", "lit.site.cfg.py.in"]

config.substitutions.append(("%models", config.osprey_models_dir))
# Our tools first, then FileCheck and not from LLVM 19.
path = [config.osprey_bin_dir, os.path.dirname(config.filecheck),
        os.path.dirname(config.not_tool), config.environment.get("PATH", os.environ.get("PATH", ""))]
config.environment["PATH"] = os.pathsep.join(path)
# Tests that read compiled modules back need osprey-dump (OSPREY_BUILD_TOOLS).
if os.path.exists(os.path.join(config.osprey_bin_dir, "osprey-dump")):
    config.available_features.add("osprey-dump")
# Tests that run compiled modules need osprey-run (OSPREY_BUILD_TOOLS).
if os.path.exists(os.path.join(config.osprey_bin_dir, "osprey-run")):
    config.available_features.add("osprey-run")
# The compile report is checked in a headless browser (Debian's chromium).
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
