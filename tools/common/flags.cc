// Command-line flag parsing for host tools.
#include "tools/common/flags.h"

#include <cerrno>
#include <cstdlib>

namespace osprey::tools {

void FlagParser::AddString(const char* name, std::string* value, const char* help) {
  flags_.push_back({name, Kind::kString, value, help});
}
void FlagParser::AddInt(const char* name, int64_t* value, const char* help) {
  flags_.push_back({name, Kind::kInt, value, help});
}
void FlagParser::AddOptionalInt(const char* name, std::optional<int64_t>* value,
                                const char* help) {
  flags_.push_back({name, Kind::kOptionalInt, value, help});
}
void FlagParser::AddByteSize(const char* name, uint64_t* value, const char* help) {
  flags_.push_back({name, Kind::kByteSize, value, help});
}
void FlagParser::AddDouble(const char* name, double* value, const char* help) {
  flags_.push_back({name, Kind::kDouble, value, help});
}
void FlagParser::AddBool(const char* name, bool* value, const char* help) {
  flags_.push_back({name, Kind::kBool, value, help});
}
void FlagParser::AddList(const char* name, std::vector<std::string>* values, const char* help) {
  flags_.push_back({name, Kind::kList, values, help});
}

const FlagParser::Flag* FlagParser::Find(const std::string& name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

Status FlagParser::Apply(const Flag& flag, const std::string& value) {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = value;
      return OkStatus();
    case Kind::kList:
      static_cast<std::vector<std::string>*>(flag.value)->push_back(value);
      return OkStatus();
    case Kind::kInt:
    case Kind::kOptionalInt: {
      char* end = nullptr;
      errno = 0;
      long long parsed = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE) {
        return InvalidArgumentError("--%s expects an integer, got '%s'", flag.name.c_str(),
                                    value.c_str());
      }
      if (flag.kind == Kind::kInt) {
        *static_cast<int64_t*>(flag.value) = parsed;
      } else {
        *static_cast<std::optional<int64_t>*>(flag.value) = parsed;
      }
      return OkStatus();
    }
    case Kind::kByteSize: {
      const size_t digits = value.find_first_not_of("0123456789");
      const std::string suffix = digits == std::string::npos ? "" : value.substr(digits);
      int shift = -1;
      if (suffix.empty() || suffix == "B") {
        shift = 0;
      } else {
        const char unit = char(suffix[0] | 0x20);  // Lower case.
        const std::string rest = suffix.substr(1);
        if (rest.empty() || rest == "B" || rest == "iB") {
          shift = unit == 'k' ? 10 : unit == 'm' ? 20 : unit == 'g' ? 30 : -1;
        }
      }
      errno = 0;
      const unsigned long long parsed =
          digits == 0 ? 0 : std::strtoull(value.substr(0, digits).c_str(), nullptr, 10);
      if (value.empty() || digits == 0 || shift < 0 || errno == ERANGE || (parsed >> (64 - 1 - shift)) != 0) {
        return InvalidArgumentError(
            "--%s expects a byte count such as 1048576, 64K, 512M or 2G, got '%s'",
            flag.name.c_str(), value.c_str());
      }
      *static_cast<uint64_t*>(flag.value) = uint64_t(parsed) << shift;
      return OkStatus();
    }
    case Kind::kDouble: {
      char* end = nullptr;
      double parsed = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') {
        return InvalidArgumentError("--%s expects a number, got '%s'", flag.name.c_str(),
                                    value.c_str());
      }
      *static_cast<double*>(flag.value) = parsed;
      return OkStatus();
    }
    case Kind::kBool:
      if (value == "true" || value == "1") {
        *static_cast<bool*>(flag.value) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(flag.value) = false;
      } else {
        return InvalidArgumentError("--%s expects true or false, got '%s'", flag.name.c_str(),
                                    value.c_str());
      }
      return OkStatus();
  }
  return InternalError("unhandled flag kind");
}

Status FlagParser::Parse(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--helpfull") {
      help_requested_ = true;
      continue;
    }
    if (arg == "--") {
      // Everything after "--" is positional.
      for (++i; i < *argc; ++i) argv[out++] = argv[i];
      break;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      argv[out++] = argv[i];
      continue;
    }
    const size_t equals = arg.find('=');
    std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const Flag* flag = Find(name);
    if (!flag && equals == std::string::npos && name.compare(0, 2, "no") == 0) {
      const Flag* negated = Find(name.substr(2));
      if (negated && negated->kind == Kind::kBool) {
        *static_cast<bool*>(negated->value) = false;
        continue;
      }
    }
    if (!flag) {
      if (allow_unknown_) {
        argv[out++] = argv[i];
        continue;
      }
      return InvalidArgumentError("unknown flag --%s (see --help)", name.c_str());
    }
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (flag->kind == Kind::kBool) {
      value = "true";
    } else if (i + 1 < *argc) {
      value = argv[++i];
    } else {
      return InvalidArgumentError("flag --%s needs a value", name.c_str());
    }
    OSPREY_RETURN_IF_ERROR(Apply(*flag, value));
  }
  *argc = out;
  argv[out] = nullptr;
  return OkStatus();
}

std::string FlagParser::Usage() const {
  std::string text = usage_ + "\n\nFlags:\n";
  for (const Flag& flag : flags_) {
    text += "  --" + flag.name;
    switch (flag.kind) {
      case Kind::kString: text += "=STRING"; break;
      case Kind::kInt:
      case Kind::kOptionalInt: text += "=INT"; break;
      case Kind::kByteSize: text += "=BYTES"; break;
      case Kind::kDouble: text += "=NUMBER"; break;
      case Kind::kBool: break;
      case Kind::kList: text += "=VALUE (repeatable)"; break;
    }
    text += "\n      " + flag.help + "\n";
  }
  return text;
}

}  // namespace osprey::tools
