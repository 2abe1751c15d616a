// Keras' semantics from the TensorFlow team's port of Keras' layers (@tensorflow/tfjs
// 4.22, pure JavaScript): the reference for a model of two outputs, each with its own
// loss. Reads a JSON case (argv[2]) with the model's weights and a batch, builds the
// same model, and prints each output's loss and their sum, the metric names, and the
// weights after one SGD trainOnBatch, as JSON. tfjs 4.22 has no loss weights (a TODO
// in tfjs-layers' engine/training.js): the losses count alike.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node keras_reference.js case.json
const fs = require('fs');
const tf = require('@tensorflow/tfjs');

async function main() {
  const c = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const x = tf.input({shape: [c.features], name: 'x'});
  const h = tf.layers.dense({units: c.hidden, activation: 'tanh'}).apply(x);
  const price = tf.layers.dense({units: 1, name: 'price'}).apply(h);
  const joined = tf.layers.concatenate().apply([h, price]);
  const kind = tf.layers.dense({units: c.classes, activation: 'softmax', name: 'kind'}).apply(joined);
  const model = tf.model({inputs: x, outputs: [price, kind]});
  model.compile({
    optimizer: tf.train.sgd(c.learning_rate),
    loss: {price: 'meanSquaredError', kind: 'sparseCategoricalCrossentropy'},
  });
  model.setWeights(c.weights.map((w, i) => tf.tensor(w, c.shapes[i])));
  const n = c.price.length;
  const xs = tf.tensor(c.x, [n, c.features]);
  const ys = [tf.tensor(c.price, [n, 1]), tf.tensor(c.kind, [n, 1])];
  const evaluated = model.evaluate(xs, ys, {batchSize: n});
  const values = await Promise.all(evaluated.map((t) => t.data()));
  await model.trainOnBatch(xs, ys);
  const after = await Promise.all(model.getWeights().map((w) => w.data()));
  // For two outputs tfjs 4.22's evaluate gives [the first output's loss, the sum of
  // both, then each output's loss] (makeTestFunction).
  process.stdout.write(JSON.stringify({
    loss: values[1][0],
    price_loss: values[2][0],
    kind_loss: values[3][0],
    metrics_names: model.metricsNames,
    weights_after: after.map((w) => Array.from(w)),
  }));
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + '\n');
  process.exit(1);
});
