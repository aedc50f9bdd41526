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

// Element types the benchmark feeds: numpy descr -> ONNX Runtime tensor type and typed array.
const kNpyTypes = {
  '<f4': {type: 'float32', array: Float32Array},
  '<i8': {type: 'int64', array: BigInt64Array},
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const major = buf[6];
  const headerLen = major >= 2 ? buf.readUInt32LE(8) : buf.readUInt16LE(8);
  const headerStart = major >= 2 ? 12 : 10;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = (header.match(/'descr':\s*'([^']*)'/) || [])[1];
  const npyType = kNpyTypes[descr];
  if (!npyType || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${path}: only C-order little-endian float32 or int64 is supported (${header})`);
  }
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',')
                    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const dataStart = headerStart + headerLen;
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new npyType.array(count);
  const bytes = count * npyType.array.BYTES_PER_ELEMENT;
  if (buf.length < dataStart + bytes) {
    throw new Error(`${path}: ${buf.length - dataStart} data bytes, expected ${bytes}`);
  }
  Buffer.from(data.buffer).set(buf.subarray(dataStart, dataStart + bytes));
  return {type: npyType.type, shape, data};
}

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
