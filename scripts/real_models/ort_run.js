// Runs one ONNX model with ONNX Runtime (onnxruntime-node, CPU execution provider, one thread,
// basic graph optimizations) on several input sets and writes every output as .npy: the reference
// that scripts/real_models/run.py compares Osprey against.
//
//   node ort_run.js JOB.json
//
// JOB.json: {"model": "m.onnx", "cases": [{"inputs": {"name": "in.npy", ...},
//                                          "outputs": ["out0.npy", ...]}, ...]}
// Outputs are written in the model's output order. Prints {"outputs": [names]} on stdout.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require(path.join(__dirname, '..', 'bench', 'npy'));

async function main() {
  const jobPath = process.argv[2];
  if (!jobPath) {
    throw new Error('usage: node ort_run.js JOB.json');
  }
  const job = JSON.parse(fs.readFileSync(jobPath, 'utf8'));
  const session = await ort.InferenceSession.create(job.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'basic',
  });
  for (const c of job.cases) {
    const feeds = {};
    for (const name of session.inputNames) {
      if (!(name in c.inputs)) {
        throw new Error(`${job.model}: no value for input '${name}'`);
      }
      const t = readNpy(c.inputs[name]);
      feeds[name] = new ort.Tensor(t.type, t.data, t.shape);
    }
    const results = await session.run(feeds);
    session.outputNames.forEach((name, i) => {
      const t = results[name];
      writeNpy(c.outputs[i], t.type, t.dims, t.data);
    });
  }
  console.log(JSON.stringify({outputs: session.outputNames, version: ort.env.versions.common}));
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
