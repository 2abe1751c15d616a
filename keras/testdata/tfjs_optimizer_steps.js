// Keras' optimizer updates from the TensorFlow team's port (@tensorflow/tfjs 4.22):
// applies the given gradients, step by step, to one variable and prints it after
// each step as JSON. The case (argv[2]): {"optimizer": "sgd" | "momentum" | "adam" |
// "rmsprop" | "adagrad", "learning_rate", "momentum", "rho", "param", "grads": [[...]]}.
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node tfjs_optimizer_steps.js case.json
const fs = require('fs');
const tf = require('@tensorflow/tfjs');

function make(c) {
  switch (c.optimizer) {
    case 'sgd': return tf.train.sgd(c.learning_rate);
    case 'momentum': return tf.train.momentum(c.learning_rate, c.momentum, false);
    case 'adam': return tf.train.adam(c.learning_rate, 0.9, 0.999, 1e-7);
    case 'rmsprop': return tf.train.rmsprop(c.learning_rate, c.rho, c.momentum, 1e-7, false);
    case 'adagrad': return tf.train.adagrad(c.learning_rate, 0.1);
    default: throw new Error('unknown optimizer ' + c.optimizer);
  }
}

async function main() {
  const c = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const optimizer = make(c);
  const v = tf.variable(tf.tensor1d(c.param), true, 'w');
  const after = [];
  for (const g of c.grads) {
    optimizer.applyGradients({w: tf.tensor1d(g)});
    after.push(Array.from(await v.data()));
  }
  process.stdout.write(JSON.stringify({after}));
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + '\n');
  process.exit(1);
});
