// Tests of the tools' flag parser.
#include "tools/common/flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::tools {
namespace {

using ::testing::HasSubstr;

struct Args {
  explicit Args(std::vector<std::string> args) : strings(std::move(args)) {
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    argc = int(strings.size());
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  int argc;
  char** argv() { return pointers.data(); }
};

TEST(FlagsTest, ParsesEveryKind) {
  std::string module;
  int64_t workers = 0;
  double tolerance = 0;
  bool verbose = false, quiet = true;
  std::vector<std::string> inputs;
  FlagParser parser("usage");
  parser.AddString("module", &module, "m");
  parser.AddInt("task_workers", &workers, "w");
  parser.AddDouble("tolerance", &tolerance, "t");
  parser.AddBool("verbose", &verbose, "v");
  parser.AddBool("quiet", &quiet, "q");
  parser.AddList("input", &inputs, "i");
  Args args({"tool", "--module=a.osp", "--task_workers", "4", "--tolerance=1e-3", "--verbose",
             "--noquiet", "--input=2xf32=1,2", "positional", "--input=@x.npy"});
  int argc = args.argc;
  ASSERT_TRUE(parser.Parse(&argc, args.argv()).ok());
  EXPECT_EQ(module, "a.osp");
  EXPECT_EQ(workers, 4);
  EXPECT_DOUBLE_EQ(tolerance, 1e-3);
  EXPECT_TRUE(verbose);
  EXPECT_FALSE(quiet);
  EXPECT_EQ(inputs, (std::vector<std::string>{"2xf32=1,2", "@x.npy"}));
  ASSERT_EQ(argc, 2);
  EXPECT_STREQ(args.argv()[1], "positional");
}

TEST(FlagsTest, ReportsErrors) {
  int64_t workers = 0;
  FlagParser parser("usage");
  parser.AddInt("task_workers", &workers, "w");
  {
    Args args({"tool", "--bogus=1"});
    Status status = parser.Parse(&args.argc, args.argv());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("unknown flag --bogus"));
  }
  {
    Args args({"tool", "--task_workers=many"});
    EXPECT_THAT(parser.Parse(&args.argc, args.argv()).message(),
                HasSubstr("--task_workers expects an integer, got 'many'"));
  }
  {
    Args args({"tool", "--task_workers"});
    EXPECT_THAT(parser.Parse(&args.argc, args.argv()).message(), HasSubstr("needs a value"));
  }
}

TEST(FlagsTest, OptionalIntsTellAbsentFromZero) {
  std::optional<int64_t> workers;
  FlagParser parser("usage");
  parser.AddOptionalInt("task_workers", &workers, "w");
  {
    Args args({"tool"});
    ASSERT_TRUE(parser.Parse(&args.argc, args.argv()).ok());
    EXPECT_FALSE(workers.has_value());
  }
  {
    Args args({"tool", "--task_workers=0"});
    ASSERT_TRUE(parser.Parse(&args.argc, args.argv()).ok());
    ASSERT_TRUE(workers.has_value());
    EXPECT_EQ(*workers, 0);
  }
  {
    Args args({"tool", "--task_workers", "-1"});
    ASSERT_TRUE(parser.Parse(&args.argc, args.argv()).ok());
    EXPECT_EQ(*workers, -1);
  }
}

TEST(FlagsTest, ParsesByteSizes) {
  uint64_t bytes = 7;
  FlagParser parser("usage");
  parser.AddByteSize("max_memory", &bytes, "m");
  const std::pair<const char*, uint64_t> good[] = {
      {"0", 0},          {"1048576", 1048576},   {"64K", 64u << 10},    {"64k", 64u << 10},
      {"512M", 512u << 20}, {"512MiB", 512u << 20}, {"2GB", 2ull << 30}, {"100B", 100}};
  for (const auto& [text, value] : good) {
    Args args({"tool", std::string("--max_memory=") + text});
    ASSERT_TRUE(parser.Parse(&args.argc, args.argv()).ok()) << text;
    EXPECT_EQ(bytes, value) << text;
  }
  for (const char* text : {"", "M", "-1", "1.5G", "12X", "3T", "99999999999G", "4Mx"}) {
    Args args({"tool", std::string("--max_memory=") + text});
    Status status = parser.Parse(&args.argc, args.argv());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(status.message(), HasSubstr("expects a byte count")) << text;
  }
}

TEST(FlagsTest, KeepsUnknownFlagsWhenAllowed) {
  std::string module;
  FlagParser parser("usage");
  parser.AddString("module", &module, "m");
  parser.set_allow_unknown(true);
  Args args({"tool", "--benchmark_repetitions=3", "--module=x", "--help"});
  ASSERT_TRUE(parser.Parse(&args.argc, args.argv()).ok());
  EXPECT_TRUE(parser.help_requested());
  ASSERT_EQ(args.argc, 2);
  EXPECT_STREQ(args.argv()[1], "--benchmark_repetitions=3");
  EXPECT_THAT(parser.Usage(), HasSubstr("--module=STRING"));
}

}  // namespace
}  // namespace osprey::tools
