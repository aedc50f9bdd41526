// Reads and writes .npy files (C order, little-endian float32 or int64) for the scripts that drive
// ONNX Runtime under node.
'use strict';

const fs = require('fs');

// numpy descr -> ONNX Runtime tensor type and typed array.
const kNpyTypes = {
  '<f4': {type: 'float32', array: Float32Array},
  '<i8': {type: 'int64', array: BigInt64Array},
};

// Returns {type, shape, data} with data a Float32Array or BigInt64Array.
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
    throw new Error(
        `${path}: only C-order little-endian float32 or int64 is supported (${header})`);
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

// Writes a float32 or int64 tensor (type as in kNpyTypes, dims, typed array) as a version 1 .npy.
function writeNpy(path, type, dims, data) {
  const descr = Object.keys(kNpyTypes).find((d) => kNpyTypes[d].type === type);
  if (!descr) {
    throw new Error(`${path}: cannot write element type ${type}`);
  }
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

module.exports = {readNpy, writeNpy};
