// Times one ONNX model with ONNX Runtime (onnxruntime-node, CPU execution provider): loads the
// model, feeds a float32 or int64 .npy input, runs warm-up iterations, then reports the median
// latency and the median process CPU time of timed runs and the process's peak resident set
// size as one JSON line on stdout.
//
//   node ort_bench.js MODEL.onnx INPUT.npy THREADS [RUNS] [WARMUP]
//   node ort_bench.js --baseline     (only loads onnxruntime-node: the runtime's own RSS)
'use strict';

const fs = require('fs');
const ort = require('onnxruntime-node');

const {readNpy} = require('./npy');

function peakRssKb() {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const m = status.match(/VmHWM:\s*(\d+)\s*kB/);
  return m ? Number(m[1]) : -1;
}

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

async function main() {
  if (process.argv[2] === '--baseline') {
    console.log(JSON.stringify({peak_rss_kb: peakRssKb(), version: ort.env.versions.common}));
    return;
  }
  const [modelPath, inputPath, threadsArg, runsArg, warmupArg] = process.argv.slice(2);
  if (!modelPath || !inputPath || !threadsArg) {
    throw new Error('usage: node ort_bench.js MODEL.onnx INPUT.npy THREADS [RUNS] [WARMUP]');
  }
  const threads = Number(threadsArg);
  const runs = Number(runsArg || 30);
  const warmup = Number(warmupArg || 5);
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const input = readNpy(inputPath);
  const feeds = {[session.inputNames[0]]: new ort.Tensor(input.type, input.data, input.shape)};
  for (let i = 0; i < warmup; ++i) {
    await session.run(feeds);
  }
  const times = [];
  const cpuTimes = [];
  for (let i = 0; i < runs; ++i) {
    const cpuStart = process.cpuUsage();
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    // Process CPU time (user + system, all threads, including ONNX Runtime's thread pool).
    const cpu = process.cpuUsage(cpuStart);
    cpuTimes.push((cpu.user + cpu.system) / 1e3);
  }
  console.log(JSON.stringify({median_ms: median(times), min_ms: Math.min(...times),
                              median_cpu_ms: median(cpuTimes), runs, threads,
                              peak_rss_kb: peakRssKb()}));
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
