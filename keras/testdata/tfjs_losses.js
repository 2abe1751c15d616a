// Keras' losses from the TensorFlow team's port (@tensorflow/tfjs 4.22): the batch's
// mean loss and its gradient with respect to the output, as JSON. The case (argv[2]):
// {"loss": "mae" | "huber" | "categorical_crossentropy", "n", "width", "y_true",
//  "y_pred", "from_logits", "label_smoothing", "delta"}.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node tfjs_losses.js case.json
const fs = require('fs');
const tf = require('@tensorflow/tfjs');

const c = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const y = tf.tensor2d(c.y_true, [c.n, c.width]);
const smoothing = c.label_smoothing || 0;
const smoothed = y.mul(1 - smoothing).add(smoothing / c.width);
function loss(p) {
  switch (c.loss) {
    case 'mae': return tf.metrics.meanAbsoluteError(y, p).mean();
    case 'huber': return tf.losses.huberLoss(y, p, undefined, c.delta, tf.Reduction.NONE).mean();
    case 'categorical_crossentropy':
      return c.from_logits ? tf.losses.softmaxCrossEntropy(smoothed, p, undefined, 0, tf.Reduction.NONE).mean()
                           : tf.metrics.categoricalCrossentropy(smoothed, p).mean();
    default: throw new Error('unknown loss ' + c.loss);
  }
}
const {value, grad} = tf.valueAndGrad(loss)(tf.tensor2d(c.y_pred, [c.n, c.width]));
process.stdout.write(JSON.stringify({value: value.dataSync()[0], grad: Array.from(grad.dataSync())}));
