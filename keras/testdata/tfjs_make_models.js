// Held-out models from TensorFlow.js (@tensorflow/tfjs 4.22, the TensorFlow team's
// port of Keras' layers), with non-trivial weights (batch normalization's moving
// statistics included), saved as TF.js layers models: OUT/NAME/model.json and
// weights.bin, with an input OUT/NAME/x.f32 and TF.js' predictions OUT/NAME/y.f32.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node tfjs_make_models.js OUT
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

function randomize(model, seed) {
  for (const layer of model.layers) {
    const weights = layer.getWeights();
    if (weights.length === 0) continue;
    layer.setWeights(weights.map((w, i) => {
      const r = tf.randomUniform(w.shape, -0.5, 0.5, 'float32', seed + 17 * i);
      // Variances stay positive.
      return w.name && w.name.includes('moving_variance') ? r.abs().add(0.5) : r;
    }));
    seed += 101;
  }
}

// DIR/model.json and DIR/weights.bin.
async function writeModel(model, dir) {
  fs.mkdirSync(dir, {recursive: true});
  await model.save(tf.io.withSaveHandler(async (a) => {
    fs.writeFileSync(path.join(dir, 'weights.bin'), Buffer.from(a.weightData));
    fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify({
      format: 'layers-model',
      modelTopology: a.modelTopology,
      weightsManifest: [{paths: ['weights.bin'], weights: a.weightSpecs}],
    }));
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
}

// `vocabulary`: the input holds ids in [0, vocabulary) (an Embedding reads it).
// `padding` ([4, steps] of 0 and 1): the steps where it is 0 are padding, ids 0 or
// features 0.
async function save(model, dir, inputShape, seed, vocabulary, padding) {
  await writeModel(model, dir);
  let x = vocabulary ? tf.floor(tf.randomUniform([4, ...inputShape], padding ? 1 : 0, vocabulary,
                                                 'float32', seed))
                     : tf.randomUniform([4, ...inputShape], -1, 1, 'float32', seed);
  if (padding) {
    const keep = tf.tensor2d(padding, [4, inputShape[0]]);
    x = x.mul(inputShape.length === 1 ? keep : keep.expandDims(2));
  }
  const y = model.predict(x);
  fs.writeFileSync(path.join(dir, 'x.f32'), Buffer.from((await x.data()).buffer));
  fs.writeFileSync(path.join(dir, 'y.f32'), Buffer.from((await y.data()).buffer));
}

async function main() {
  const out = process.argv[2];
  // Convolutions with batch normalization (tf.keras 2's Sequential format).
  const cnn = tf.sequential();
  cnn.add(tf.layers.conv2d({inputShape: [10, 10, 2], filters: 8, kernelSize: 3, padding: 'same',
                            activation: 'relu'}));
  cnn.add(tf.layers.batchNormalization());
  cnn.add(tf.layers.maxPooling2d({poolSize: 2}));
  cnn.add(tf.layers.conv2d({filters: 4, kernelSize: 3, strides: 2, padding: 'same'}));
  cnn.add(tf.layers.batchNormalization({epsilon: 0.01}));
  cnn.add(tf.layers.flatten());
  cnn.add(tf.layers.dropout({rate: 0.3}));
  cnn.add(tf.layers.dense({units: 5, activation: 'softmax'}));
  randomize(cnn, 1);
  await save(cnn, path.join(out, 'cnn'), [10, 10, 2], 7);
  // A regression MLP of two branches (the functional format).
  const x = tf.input({shape: [6]});
  const a = tf.layers.dense({units: 16, activation: 'tanh'}).apply(x);
  const b = tf.layers.dense({units: 16, activation: 'relu'}).apply(x);
  const joined = tf.layers.concatenate().apply([a, b]);
  const y = tf.layers.dense({units: 3}).apply(tf.layers.layerNormalization().apply(joined));
  const mlp = tf.model({inputs: x, outputs: y});
  randomize(mlp, 50);
  await save(mlp, path.join(out, 'regression'), [6], 9);
  // Convolutions and pools over sequences.
  const seq = tf.sequential();
  seq.add(tf.layers.conv1d({inputShape: [12, 3], filters: 6, kernelSize: 3, padding: 'same',
                            activation: 'relu'}));
  seq.add(tf.layers.maxPooling1d({poolSize: 2}));
  seq.add(tf.layers.conv1d({filters: 5, kernelSize: 2, strides: 2, activation: 'tanh'}));
  seq.add(tf.layers.averagePooling1d({poolSize: 2, strides: 1, padding: 'same'}));
  seq.add(tf.layers.globalMaxPooling1d());
  seq.add(tf.layers.dense({units: 4}));
  randomize(seq, 200);
  await save(seq, path.join(out, 'sequence'), [12, 3], 11);
  const pools = tf.sequential();
  pools.add(tf.layers.conv1d({inputShape: [7, 2], filters: 4, kernelSize: 2}));
  pools.add(tf.layers.globalAveragePooling1d());
  pools.add(tf.layers.reshape({targetShape: [2, 2, 1]}));
  pools.add(tf.layers.globalMaxPooling2d({}));
  randomize(pools, 300);
  await save(pools, path.join(out, 'global_pools'), [7, 2], 13);
  // Recurrent layers over an Embedding: an LSTM with return_sequences, then a GRU
  // (TF.js' GRU has reset_after false only).
  const text = tf.sequential();
  text.add(tf.layers.embedding({inputDim: 20, outputDim: 5, inputLength: 7}));
  text.add(tf.layers.lstm({units: 6, returnSequences: true, recurrentActivation: 'sigmoid'}));
  text.add(tf.layers.gru({units: 4, recurrentActivation: 'sigmoid'}));
  text.add(tf.layers.dense({units: 3, activation: 'softmax'}));
  randomize(text, 400);
  await save(text, path.join(out, 'recurrent'), [7], 17, 20);
  // A GRU returning sequences, pooled.
  const gru = tf.sequential();
  gru.add(tf.layers.gru({inputShape: [5, 3], units: 4, returnSequences: true,
                         recurrentActivation: 'sigmoid'}));
  gru.add(tf.layers.globalAveragePooling1d());
  randomize(gru, 500);
  await save(gru, path.join(out, 'gru_sequences'), [5, 3], 19);
  // SimpleRNNs, a stack.
  const rnn = tf.sequential();
  rnn.add(tf.layers.simpleRNN({inputShape: [6, 3], units: 5, returnSequences: true}));
  rnn.add(tf.layers.simpleRNN({units: 4}));
  rnn.add(tf.layers.dense({units: 2}));
  randomize(rnn, 600);
  await save(rnn, path.join(out, 'simple_rnn'), [6, 3], 21);
  // Masks: Embedding(mask_zero) ids 0 as padding at the ends and inside, one
  // sequence all padding; the mask passes through an LSTM returning sequences to a GRU.
  const padding = [[1, 1, 1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1, 1, 1],
                   [0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1, 1, 1]];
  const masked = tf.sequential();
  masked.add(tf.layers.embedding({inputDim: 20, outputDim: 5, inputLength: 8, maskZero: true}));
  masked.add(tf.layers.lstm({units: 6, returnSequences: true, recurrentActivation: 'sigmoid'}));
  masked.add(tf.layers.gru({units: 4, recurrentActivation: 'sigmoid'}));
  masked.add(tf.layers.dense({units: 3, activation: 'softmax'}));
  randomize(masked, 700);
  await save(masked, path.join(out, 'masked_recurrent'), [8], 23, 20, padding);
  // Masking over features, through a Dense and a Dropout per step, into SimpleRNNs.
  const masking = tf.sequential();
  masking.add(tf.layers.masking({inputShape: [8, 3], maskValue: 0}));
  masking.add(tf.layers.dense({units: 4, activation: 'tanh'}));
  masking.add(tf.layers.dropout({rate: 0.2}));
  masking.add(tf.layers.simpleRNN({units: 5, returnSequences: true}));
  masking.add(tf.layers.lstm({units: 3, recurrentActivation: 'sigmoid'}));
  randomize(masking, 800);
  await save(masking, path.join(out, 'masking'), [8, 3], 29, 0, padding);
  // Bidirectional layers (concat and ave), over a mask.
  const both = tf.sequential();
  both.add(tf.layers.embedding({inputDim: 20, outputDim: 5, inputLength: 8, maskZero: true}));
  both.add(tf.layers.bidirectional({
    layer: tf.layers.lstm({units: 4, returnSequences: true, recurrentActivation: 'sigmoid'}),
    mergeMode: 'concat'}));
  both.add(tf.layers.bidirectional({
    layer: tf.layers.gru({units: 3, recurrentActivation: 'sigmoid'}), mergeMode: 'ave'}));
  both.add(tf.layers.dense({units: 2}));
  randomize(both, 900);
  await save(both, path.join(out, 'bidirectional'), [8], 31, 20, padding);
  const mul = tf.sequential();
  mul.add(tf.layers.bidirectional({
    inputShape: [6, 3], layer: tf.layers.simpleRNN({units: 3, returnSequences: true}),
    mergeMode: 'mul'}));
  mul.add(tf.layers.bidirectional({layer: tf.layers.lstm({units: 2,
    recurrentActivation: 'sigmoid'}), mergeMode: 'sum'}));
  randomize(mul, 1000);
  await save(mul, path.join(out, 'bidirectional_merges'), [6, 3], 37);
  // Rectangular kernels and strides, dilated convolutions (2D and 1D).
  const dilated = tf.sequential();
  dilated.add(tf.layers.conv2d({inputShape: [9, 8, 2], filters: 4, kernelSize: [3, 2],
                                dilationRate: [2, 3], padding: 'same', activation: 'relu'}));
  dilated.add(tf.layers.conv2d({filters: 3, kernelSize: [1, 3], strides: [2, 1]}));
  dilated.add(tf.layers.reshape({targetShape: [30, 3]}));
  dilated.add(tf.layers.conv1d({filters: 2, kernelSize: 3, dilationRate: 4}));
  dilated.add(tf.layers.flatten());
  dilated.add(tf.layers.dense({units: 3}));
  randomize(dilated, 1100);
  await save(dilated, path.join(out, 'dilated'), [9, 8, 2], 41);
  // TimeDistributed convolutions over frames, then per-step Dense layers (one
  // under a mask) into an LSTM.
  const frames = tf.sequential();
  frames.add(tf.layers.timeDistributed({inputShape: [4, 6, 6, 2],
    layer: tf.layers.conv2d({filters: 3, kernelSize: 3, activation: 'relu'})}));
  frames.add(tf.layers.timeDistributed({layer: tf.layers.maxPooling2d({poolSize: 2})}));
  frames.add(tf.layers.timeDistributed({layer: tf.layers.flatten()}));
  frames.add(tf.layers.timeDistributed({layer: tf.layers.dense({units: 5, activation: 'tanh'})}));
  frames.add(tf.layers.lstm({units: 3, recurrentActivation: 'sigmoid'}));
  randomize(frames, 1200);
  await save(frames, path.join(out, 'time_distributed'), [4, 6, 6, 2], 43);
  const steps = tf.sequential();
  steps.add(tf.layers.masking({inputShape: [8, 3]}));
  steps.add(tf.layers.timeDistributed({layer: tf.layers.dense({units: 4})}));
  steps.add(tf.layers.gru({units: 2, recurrentActivation: 'sigmoid'}));
  randomize(steps, 1300);
  await save(steps, path.join(out, 'time_distributed_masked'), [8, 3], 47, 0, padding);
  // Shared layers: a siamese pair of id sequences through one Embedding, one LSTM
  // and one Dense (each layer called twice), and a Dense called on its own
  // transformed output.
  const left = tf.input({shape: [5], name: 'left'}), right = tf.input({shape: [5], name: 'right'});
  const embed = tf.layers.embedding({inputDim: 12, outputDim: 4});
  const encoder = tf.layers.lstm({units: 3, recurrentActivation: 'sigmoid'});
  const tower = tf.layers.dense({units: 4, activation: 'tanh'});
  const pair = tf.layers.concatenate().apply([tower.apply(encoder.apply(embed.apply(left))),
                                              tower.apply(encoder.apply(embed.apply(right)))]);
  const siamese = tf.model({inputs: [left, right],
                            outputs: tf.layers.dense({units: 2}).apply(pair)});
  randomize(siamese, 1400);
  await saveTwoInputs(siamese, path.join(out, 'shared_siamese'), [5], 53, 12);
  const features = tf.input({shape: [4]});
  const again = tf.layers.dense({units: 4, activation: 'tanh'});
  const between = tf.layers.dense({units: 4, activation: 'relu'});
  const twice = tf.model({inputs: features, outputs: tf.layers.dense({units: 2}).apply(
      again.apply(between.apply(again.apply(features))))});
  randomize(twice, 1500);
  await save(twice, path.join(out, 'shared_twice'), [4], 59);
  console.log('saved');
}

// A model of two inputs of `inputShape` ids in [0, vocabulary): x.f32 holds each
// example's two inputs side by side, as a Ringwork model of two inputs reads them.
async function saveTwoInputs(model, dir, inputShape, seed, vocabulary) {
  await writeModel(model, dir);
  const a = tf.floor(tf.randomUniform([4, ...inputShape], 0, vocabulary, 'float32', seed));
  const b = tf.floor(tf.randomUniform([4, ...inputShape], 0, vocabulary, 'float32', seed + 1));
  const y = model.predict([a, b]);
  fs.writeFileSync(path.join(dir, 'x.f32'), Buffer.from((await tf.concat([a, b], 1).data()).buffer));
  fs.writeFileSync(path.join(dir, 'y.f32'), Buffer.from((await y.data()).buffer));
}

main().catch((e) => {
  console.error(String(e.stack || e));
  process.exit(1);
});
