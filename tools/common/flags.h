// Command-line flags for host tools: --name=value, --name value, repeated
// flags collected in order, --help/-h usage text.
#ifndef OSPREY_TOOLS_COMMON_FLAGS_H_
#define OSPREY_TOOLS_COMMON_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace osprey::tools {

// Declare flags, then Parse(). Pointers passed to Add* are borrowed and
// must outlive Parse(); they keep their value when the flag is absent.
class FlagParser {
 public:
  explicit FlagParser(std::string usage) : usage_(std::move(usage)) {}

  void AddString(const char* name, std::string* value, const char* help);
  void AddInt(const char* name, int64_t* value, const char* help);
  // An integer that stays empty unless the flag is given, so that a tool
  // can tell "not given" from every value (and reject 0 or negatives).
  void AddOptionalInt(const char* name, std::optional<int64_t>* value, const char* help);
  // A byte count: a non-negative integer with an optional K, M or G suffix
  // (powers of 1024, optionally followed by "iB" or "B"): 65536, 64K, 512MiB.
  void AddByteSize(const char* name, uint64_t* value, const char* help);
  void AddDouble(const char* name, double* value, const char* help);
  // --name, --name=true/false/1/0, --noname.
  void AddBool(const char* name, bool* value, const char* help);
  // May be given any number of times; values are appended in order.
  void AddList(const char* name, std::vector<std::string>* values, const char* help);

  // When set, flags that are not declared stay in |argv| (for tools that
  // hand them on, e.g. to Google Benchmark) instead of being an error.
  void set_allow_unknown(bool allow) { allow_unknown_ = allow; }

  // Parses and removes recognized flags from |argc|/|argv| (argv[0] stays;
  // positional arguments are kept in order). INVALID_ARGUMENT naming the
  // flag for unknown flags (unless allowed), missing or malformed values.
  // Sets help_requested() for --help/-h instead of failing.
  Status Parse(int* argc, char** argv);

  bool help_requested() const { return help_requested_; }
  std::string Usage() const;

 private:
  enum class Kind { kString, kInt, kOptionalInt, kByteSize, kDouble, kBool, kList };
  struct Flag {
    std::string name;
    Kind kind;
    void* value;
    std::string help;
  };
  const Flag* Find(const std::string& name) const;
  Status Apply(const Flag& flag, const std::string& value);

  std::string usage_;
  std::vector<Flag> flags_;
  bool allow_unknown_ = false;
  bool help_requested_ = false;
};

}  // namespace osprey::tools

#endif  // OSPREY_TOOLS_COMMON_FLAGS_H_
