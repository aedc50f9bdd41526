#include "compiler/tools/compile_report.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "compiler/targets/npu/offload.h"

namespace osprey::compiler::tools {
namespace {

std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default:
      out += static_cast<unsigned char>(c) < 0x20 && c != '\n' ? '?' : c;
    }
  }
  return out;
}

std::string number(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return out;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %%", v);
  return buf;
}

const char *blockingName(npu::WeightBlocking b) {
  switch (b) {
  case npu::WeightBlocking::None: return "none";
  case npu::WeightBlocking::Whole: return "whole";
  case npu::WeightBlocking::PerChannel: return "per channel tile";
  case npu::WeightBlocking::PerStep: return "per step";
  }
  return "?";
}

const npu::NpuKernel *kernelOf(const dispatch::DispatchProgram &d,
                               const dispatch::DispatchRegion &r) {
  const structured::StructuredOp &root = d.program.ops[r.ops[0]];
  if (!root.external || root.external->format() != npu::kNpuFormat) {
    return nullptr;
  }
  return static_cast<const npu::NpuKernel *>(root.external.get());
}

int64_t chainMacs(const npu::NpuKernel &k) {
  int64_t macs = 0;
  for (const npu::NpuLayer &l : k.chain().layers) {
    macs += l.macs();
  }
  return macs;
}

constexpr const char *kStyle = R"(
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.device { font-weight: bold; border-radius: 3px; padding: 1px 5px; }
.device.npu { background: #cfe8ff; } .device.cpu { background: #f3e2c7; }
tr.layer td { color: #555; background: #fafafa; }
#memory-plot rect.buffer { fill: #9cc7ea; stroke: #3a6f99; stroke-width: 0.5; }
#memory-plot rect.buffer.npu { fill: #b8e0b0; stroke: #3f7f36; }
.split span { display: inline-block; width: 10px; height: 18px; margin-right: 1px; }
.split .npu { background: #5aa0e0; } .split .cpu { background: #e0a050; }
)";

// Draws the memory plan (x: dispatch index, y: arena offset) from the JSON
// in #memory-data into #memory-plot, and writes what it drew into
// #plot-summary.
constexpr const char *kScript = R"(
(function () {
  var data = JSON.parse(document.getElementById('memory-data').textContent);
  var svg = document.getElementById('memory-plot');
  var ns = 'http://www.w3.org/2000/svg';
  var width = 900, height = 320, left = 60, bottom = 24;
  var steps = Math.max(1, data.dispatches);
  var arena = Math.max(1, data.arena);
  svg.setAttribute('viewBox', '0 0 ' + (width + left) + ' ' + (height + bottom));
  var drawn = 0;
  data.buffers.forEach(function (b) {
    var r = document.createElementNS(ns, 'rect');
    r.setAttribute('class', 'buffer' + (b.npu ? ' npu' : ''));
    r.setAttribute('x', left + b.first / steps * width);
    r.setAttribute('width', Math.max(1, (b.last - b.first + 1) / steps * width));
    r.setAttribute('y', b.offset / arena * height);
    r.setAttribute('height', Math.max(1, b.bytes / arena * height));
    var t = document.createElementNS(ns, 'title');
    t.textContent = b.name + ': ' + b.bytes + ' bytes at ' + b.offset +
        ', dispatches ' + b.first + '-' + b.last;
    r.appendChild(t);
    svg.appendChild(r);
    drawn++;
  });
  var axis = document.createElementNS(ns, 'text');
  axis.setAttribute('x', left);
  axis.setAttribute('y', height + bottom - 6);
  axis.textContent = 'dispatch 0 .. ' + (steps - 1) + ' (x), arena offset 0 .. ' +
      arena + ' bytes (y, down)';
  svg.appendChild(axis);
  document.getElementById('plot-summary').textContent =
      drawn + ' buffers drawn over ' + steps + ' dispatches in an arena of ' +
      arena + ' bytes';
})();
)";

} // namespace

std::string renderCompileReport(const ReportInput &in) {
  const dispatch::DispatchProgram &d = *in.program;
  std::string h;
  absl::StrAppend(&h, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                      "<title>Osprey compile report: ",
                  escape(in.model), "</title><style>", kStyle,
                  "</style></head><body>\n");
  absl::StrAppend(&h, "<h1>", escape(in.model), "</h1>\n<p>target <b>",
                  escape(in.target), "</b>");
  if (in.config) {
    absl::StrAppend(&h, ", accelerator <b>", escape(in.config->toString()),
                    "</b>");
  }
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", in.compileSeconds);
  absl::StrAppend(&h, ", compiled in ", seconds, " s; ", d.regions.size(),
                  " dispatches, arena ", number(uint64_t(d.arenaSize)),
                  " bytes</p>\n");

  // The split.
  if (in.partition) {
    const npu::Partition &p = *in.partition;
    int npuOps = 0;
    for (const npu::OpPlacement &o : p.ops) {
      npuOps += o.onNpu;
    }
    absl::StrAppend(
        &h, "<h2>Graph: CPU / NPU split</h2>\n<p id=\"split-summary\">",
        npuOps, " of ", p.ops.size(), " nodes on the NPU in ", p.chains.size(),
        " chains; ", number(uint64_t(p.npuMacs)), " of ",
        number(uint64_t(p.totalMacs)), " MACs (",
        percent(p.totalMacs ? 100.0 * double(p.npuMacs) / double(p.totalMacs)
                            : 0.0),
        ")</p>\n<div class=\"split\">");
    for (const npu::OpPlacement &o : p.ops) {
      absl::StrAppend(&h, "<span class=\"", o.onNpu ? "npu" : "cpu",
                      "\" title=\"", escape(o.op->nodeName()), "\"></span>");
    }
    absl::StrAppend(&h, "</div>\n<table id=\"nodes\"><tr><th>node</th><th>op"
                        "</th><th>device</th><th>chain</th><th>MACs</th><th>"
                        "NPU cycles (alone)</th><th>CPU cycles (model)</th>"
                        "<th>why on the CPU</th></tr>\n");
    for (const npu::OpPlacement &o : p.ops) {
      absl::StrAppend(
          &h, "<tr><td>", escape(o.op->nodeName()), "</td><td>",
          escape(o.op->kind()), "</td><td><span class=\"device ",
          o.onNpu ? "npu\">npu" : "cpu\">cpu", "</span></td><td class=\"num\">",
          o.chain >= 0 ? std::to_string(o.chain) : "", "</td><td class=\"num\">",
          number(uint64_t(o.macs)), "</td><td class=\"num\">",
          o.onNpu ? number(o.npuCycles) : "", "</td><td class=\"num\">",
          number(o.cpuCycles), "</td><td>", escape(o.reason), "</td></tr>\n");
    }
    absl::StrAppend(&h, "</table>\n");
  }

  // Dispatches.
  absl::StrAppend(&h, "<h2>Dispatches in execution order</h2>\n"
                      "<table id=\"dispatches\"><tr><th>#</th><th>dispatch"
                      "</th><th>device</th><th>nodes</th><th>bindings</th>"
                      "<th>workgroups</th><th>NPU cycles</th><th>peak "
                      "cycles</th><th>over peak</th></tr>\n");
  uint64_t npuCycles = 0, npuPeak = 0;
  for (size_t i = 0; i < d.regions.size(); ++i) {
    const dispatch::DispatchRegion &r = d.regions[i];
    const npu::NpuKernel *k = kernelOf(d, r);
    absl::StrAppend(&h, "<tr class=\"dispatch\"><td class=\"num\">", i,
                    "</td><td>", escape(r.name), "</td><td><span class=\"device ",
                    k ? "npu\">npu" : "cpu\">cpu", "</span></td><td>",
                    escape(r.loc), "</td><td class=\"num\">",
                    r.bindings.size(), "</td><td class=\"num\">",
                    r.workgroupCount[0], "x", r.workgroupCount[1], "x",
                    r.workgroupCount[2], "</td>");
    if (!k) {
      absl::StrAppend(&h, "<td></td><td></td><td></td></tr>\n");
      continue;
    }
    const uint64_t cycles = k->trial().estimatedCycles;
    const int64_t macs = chainMacs(*k);
    const uint64_t pes = k->config().peCount;
    const uint64_t peak = uint64_t((macs + int64_t(pes) - 1) / int64_t(pes));
    npuCycles += cycles;
    npuPeak += peak;
    absl::StrAppend(&h, "<td class=\"num\">", number(cycles),
                    "</td><td class=\"num\">", peak ? number(peak) : "",
                    "</td><td class=\"num\">",
                    peak ? percent(100.0 * (double(cycles) / double(peak) - 1))
                         : "",
                    "</td></tr>\n");
    for (const npu::LayerReport &l : k->trial().layers) {
      const npu::Tiling &t = l.tiling;
      absl::StrAppend(
          &h, "<tr class=\"layer\"><td></td><td colspan=\"2\">", escape(l.name),
          "</td><td colspan=\"3\">tile ", t.rowTile, "x", t.colTile, " px x ",
          t.chanTile, " ch", t.icSplits > 1 ? absl::StrCat(" x ", t.icTile, " in")
                                             : "",
          "; ", t.steps(), " steps; SRAM half ", number(t.halfBytes),
          " B; weights ", blockingName(t.blocking),
          l.inputResident ? "; input resident" : "",
          l.outputResident ? "; output resident" : "",
          "</td><td class=\"num\">", number(l.estimate.totalCycles),
          "</td><td colspan=\"2\">MAC ", number(l.estimate.macCycles),
          ", DMA ", number(l.estimate.dmaCycles), " cycles</td></tr>\n");
    }
  }
  absl::StrAppend(&h, "</table>\n");
  if (npuPeak) {
    absl::StrAppend(&h, "<p id=\"npu-summary\">NPU: ", number(npuCycles),
                    " cycles for a peak of ", number(npuPeak), " (",
                    percent(100.0 * (double(npuCycles) / double(npuPeak) - 1)),
                    " over peak). Cycles are the code generator's schedule "
                    "under the documented cycle model (docs/npu.md, section "
                    "5), which the simulator reproduces exactly; osprey-run "
                    "--npu_stats reports the simulator's count for a whole "
                    "call.</p>\n");
  }

  // The memory plan.
  std::vector<int> writer(d.buffers.size(), -1);
  for (size_t i = 0; i < d.regions.size(); ++i) {
    for (const dispatch::Binding &b : d.regions[i].bindings) {
      if (b.write) {
        writer[d.storageOf(b.tensor)] = static_cast<int>(i);
      }
    }
  }
  std::string json = absl::StrCat("{\"arena\": ", d.arenaSize,
                                   ", \"dispatches\": ", d.regions.size(),
                                   ", \"buffers\": [");
  int count = 0;
  for (const dispatch::Buffer &b : d.buffers) {
    if (b.kind != dispatch::BufferKind::Transient || b.firstUse < 0 ||
        b.offset < 0) {
      continue;
    }
    bool npuWrites = writer[b.tensor] >= 0 &&
                     kernelOf(d, d.regions[size_t(writer[b.tensor])]);
    std::string name;
    for (char c : d.program.tensors[b.tensor].name) {
      name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    }
    absl::StrAppend(&json, count++ ? ", " : "", "{\"name\": \"", name,
                    "\", \"offset\": ", b.offset, ", \"bytes\": ", b.byteSize,
                    ", \"first\": ", b.firstUse, ", \"last\": ", b.lastUse,
                    ", \"npu\": ", npuWrites ? "true" : "false", "}");
  }
  absl::StrAppend(&json, "]}");
  absl::StrAppend(
      &h, "<h2>Memory plan over time</h2>\n<p>", count,
      " intermediate values share an arena of ", number(uint64_t(d.arenaSize)),
      " bytes (green: written by the NPU). <span id=\"plot-summary\">"
      "(the plot needs JavaScript)</span></p>\n"
      "<svg id=\"memory-plot\" width=\"960\" height=\"344\"></svg>\n"
      "<script type=\"application/json\" id=\"memory-data\">",
      json, "</script>\n<script>", kScript, "</script>\n</body></html>\n");
  return h;
}

} // namespace osprey::compiler::tools
