#include "compiler/targets/npu/npu_config.h"

#include <cctype>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace osprey::compiler::npu {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

absl::Status badValue(absl::string_view key, absl::string_view value,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("npu-v1 option '", key, "': bad value '", value,
                   "' (expected ", expected, ")"));
}

// "262144", "256KiB", "256K", "1MiB", "1M" -> bytes (whole KiB).
absl::StatusOr<uint64_t> parseSize(absl::string_view key,
                                   absl::string_view value, uint64_t min,
                                   uint64_t max) {
  absl::string_view digits = value;
  uint64_t unit = 1;
  size_t end = 0;
  while (end < value.size() &&
         std::isdigit(static_cast<unsigned char>(value[end]))) {
    ++end;
  }
  digits = value.substr(0, end);
  absl::string_view suffix = value.substr(end);
  if (suffix == "KiB" || suffix == "K" || suffix == "k") {
    unit = kKiB;
  } else if (suffix == "MiB" || suffix == "M") {
    unit = kMiB;
  } else if (!suffix.empty()) {
    return badValue(key, value, "a size in bytes, KiB or MiB");
  }
  uint64_t n = 0;
  if (digits.empty() || digits.size() > 12 || !absl::SimpleAtoi(digits, &n)) {
    return badValue(key, value, "a size in bytes, KiB or MiB");
  }
  uint64_t bytes = n * unit;
  if (bytes % kKiB != 0) {
    return badValue(key, value, "a whole number of KiB");
  }
  if (bytes < min || bytes > max) {
    return badValue(key, value,
                    absl::StrCat(min / kKiB, " KiB .. ", max / kKiB, " KiB"));
  }
  return bytes;
}

absl::StatusOr<uint64_t> parseInt(absl::string_view key,
                                  absl::string_view value, uint64_t min,
                                  uint64_t max) {
  uint64_t n = 0;
  if (value.empty() || value.size() > 12 || !absl::SimpleAtoi(value, &n) ||
      !std::isdigit(static_cast<unsigned char>(value[0]))) {
    return badValue(key, value, absl::StrCat("an integer ", min, " .. ", max));
  }
  if (n < min || n > max) {
    return badValue(key, value, absl::StrCat(min, " .. ", max));
  }
  return n;
}

std::string sizeText(uint64_t bytes) {
  if (bytes % kMiB == 0) {
    return absl::StrCat(bytes / kMiB, "MiB");
  }
  return absl::StrCat(bytes / kKiB, "KiB");
}

} // namespace

std::string NpuConfig::toString() const {
  return absl::StrCat(
      "npu-v1:pes=", peCount, ",sram=", sizeText(sramBytes),
      ",pool=", sizeText(poolBytes), ",wmem=", sizeText(weightBytes),
      ",dma_bw=", dmaBytesPerCycle, ",dma_setup=", dmaSetupCycles,
      ",mode=", mapping == PeMapping::OutputParallel ? "output" : "input");
}

absl::StatusOr<NpuConfig> parseNpuConfig(absl::string_view spec) {
  absl::string_view name = spec.substr(0, spec.find(':'));
  if (name != "npu-v1") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown accelerator '", name, "' (supported: npu-v1)"));
  }
  NpuConfig config;
  bool poolSet = false;
  if (name.size() < spec.size()) {
    absl::string_view options = spec.substr(name.size() + 1);
    std::set<std::string, std::less<>> seen;
    for (absl::string_view item : absl::StrSplit(options, ',')) {
      size_t eq = item.find('=');
      if (eq == absl::string_view::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("npu-v1 option '", item, "' is not key=value"));
      }
      absl::string_view key = item.substr(0, eq);
      absl::string_view value = item.substr(eq + 1);
      if (!seen.insert(std::string(key)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("npu-v1 option '", key, "' given twice"));
      }
      if (key == "pes") {
        auto n = parseInt(key, value, 0, 1024);
        if (!n.ok()) {
          return n.status();
        }
        if (*n != 64 && *n != 128 && *n != 256) {
          return badValue(key, value, "64, 128 or 256");
        }
        config.peCount = static_cast<uint32_t>(*n);
      } else if (key == "sram") {
        auto n = parseSize(key, value, 256 * kKiB, 256 * kMiB);
        if (!n.ok()) {
          return n.status();
        }
        config.sramBytes = *n;
      } else if (key == "pool") {
        auto n = parseSize(key, value, 0, 256 * kMiB);
        if (!n.ok()) {
          return n.status();
        }
        config.poolBytes = *n;
        poolSet = true;
      } else if (key == "wmem") {
        auto n = parseSize(key, value, 16 * kKiB, 256 * kMiB);
        if (!n.ok()) {
          return n.status();
        }
        config.weightBytes = *n;
      } else if (key == "dma_bw") {
        auto n = parseInt(key, value, 1, 256);
        if (!n.ok()) {
          return n.status();
        }
        config.dmaBytesPerCycle = static_cast<uint32_t>(*n);
      } else if (key == "dma_setup") {
        auto n = parseInt(key, value, 0, 65536);
        if (!n.ok()) {
          return n.status();
        }
        config.dmaSetupCycles = static_cast<uint32_t>(*n);
      } else if (key == "mode") {
        if (value == "output") {
          config.mapping = PeMapping::OutputParallel;
        } else if (value == "input") {
          config.mapping = PeMapping::InputParallel;
        } else {
          return badValue(key, value, "output or input");
        }
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown npu-v1 option '", key,
            "' (known: pes, sram, pool, wmem, dma_bw, dma_setup, mode)"));
      }
    }
  }
  if (!poolSet) {
    config.poolBytes = config.sramBytes / 4;
  }
  if (config.poolBytes >= config.sramBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "npu-v1 option 'pool': ", sizeText(config.poolBytes),
        " leaves no stream SRAM out of ", sizeText(config.sramBytes)));
  }
  return config;
}

drivers::npu::sim::HardwareConfig toSimConfig(const NpuConfig &config) {
  drivers::npu::sim::HardwareConfig hw;
  hw.pe_count = config.peCount;
  hw.sram_bytes = config.sramBytes;
  hw.weight_memory_bytes = config.weightBytes;
  hw.dma_bytes_per_cycle = config.dmaBytesPerCycle;
  hw.dma_setup_cycles = config.dmaSetupCycles;
  hw.mode = config.mapping == PeMapping::OutputParallel
                ? drivers::npu::sim::ParallelMode::kOutputParallel
                : drivers::npu::sim::ParallelMode::kInputParallel;
  return hw;
}

} // namespace osprey::compiler::npu
