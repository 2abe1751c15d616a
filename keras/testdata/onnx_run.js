// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node, its CPU library) on
// float32 inputs, and writes each output's values as raw float32.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node onnx_run.js MODEL.onnx INPUT.f32 DIMS_JSON OUT_PREFIX
//
// INPUT.f32 holds the input's values (little-endian float32) of shape DIMS_JSON
// ("[10, 4, 4, 1]"); writes OUT_PREFIX.NAME.f32 per output and prints
// {"outputs": {"NAME": [dims]}}.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, input, dimsJson, prefix] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1});
  const bytes = fs.readFileSync(input);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, JSON.parse(dimsJson))};
  const results = await session.run(feeds);
  const outputs = {};
  for (const name of session.outputNames) {
    const t = results[name];
    fs.writeFileSync(`${prefix}.${name.replace(/\//g, '_')}.f32`, Buffer.from(t.data.buffer));
    outputs[name] = t.dims;
  }
  process.stdout.write(JSON.stringify({outputs}) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + '\n');
  process.exit(1);
});
