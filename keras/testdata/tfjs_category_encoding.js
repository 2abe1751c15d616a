// TF.js' CategoryEncoding (Keras' port, @tensorflow/tfjs 4.22) on a case given as
// JSON (argv[2]): {"num_tokens", "mode": "oneHot" | "multiHot" | "count", "ids",
// "shape"}; prints the output's values and shape as JSON.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node tfjs_category_encoding.js '{...}'
const tf = require('@tensorflow/tfjs');

const c = JSON.parse(process.argv[2]);
const layer = tf.layers.categoryEncoding({numTokens: c.num_tokens, outputMode: c.mode});
const out = layer.apply(tf.tensor(c.ids, c.shape, 'int32'));
process.stdout.write(JSON.stringify({values: Array.from(out.dataSync()), shape: out.shape}));
