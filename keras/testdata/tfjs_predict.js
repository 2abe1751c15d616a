// Loads a TF.js layers model from DIR (model.json and its weight shards, as
// tf.loadLayersModel reads them from a server) into @tensorflow/tfjs 4.22 and
// writes its predictions for a float32 input as raw float32 (a model of several
// inputs reads them side by side from each example, as Ringwork's do).
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node tfjs_predict.js DIR INPUT.f32 DIMS_JSON OUT.f32
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

async function main() {
  const [dir, input, dimsJson, output] = process.argv.slice(2);
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const specs = [], buffers = [];
  for (const group of json.weightsManifest) {
    for (const p of group.paths) buffers.push(fs.readFileSync(path.join(dir, p)));
    specs.push(...group.weights);
  }
  const all = Buffer.concat(buffers);
  const model = await tf.loadLayersModel(tf.io.fromMemory({
    modelTopology: json.modelTopology,
    weightSpecs: specs,
    weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.length),
  }));
  const bytes = fs.readFileSync(input);
  const x = tf.tensor(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4),
                      JSON.parse(dimsJson));
  // A model of several inputs: each example holds them side by side.
  let feed = x;
  if (model.inputs.length > 1) {
    const flat = x.reshape([x.shape[0], -1]);
    let at = 0;
    feed = model.inputs.map((input) => {
      const shape = input.shape.slice(1);
      const size = shape.reduce((a, b) => a * b, 1);
      at += size;
      return flat.slice([0, at - size], [-1, size]).reshape([x.shape[0], ...shape]);
    });
  }
  const y = await model.predict(feed).data();
  fs.writeFileSync(output, Buffer.from(new Float32Array(y).buffer));
  process.stdout.write(JSON.stringify({layers: model.layers.map((l) => l.getClassName())}) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + '\n');
  process.exit(1);
});
