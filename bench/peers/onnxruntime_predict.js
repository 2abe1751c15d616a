// ONNX Runtime's median time of one batch prediction (npm onnxruntime-node, CPU).
//
//   NODE_PATH=/opt/ringwork-npm/node_modules node onnxruntime_predict.js MODEL.onnx BATCH THREADS REPEATS
//   -> onnxruntime 256 1 1520.3          (batch, threads, median us per batch)
const ort = require('onnxruntime-node');

async function main() {
  const [model, batchText, threadsText, repeatsText] = process.argv.slice(2);
  const batch = Number(batchText), threads = Number(threadsText), repeats = Number(repeatsText);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = new Float32Array(batch * 28 * 28);
  for (let i = 0; i < x.length; ++i) x[i] = 0.5 + 0.5 * Math.sin(0.01 * i);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', x, [batch, 28, 28, 1])};
  const us = [];
  for (let r = 0; r < repeats + 5; ++r) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    const t = Number(process.hrtime.bigint() - start) / 1000;
    if (r >= 5) us.push(t);  // After warming up.
  }
  us.sort((a, b) => a - b);
  console.log(`onnxruntime ${batch} ${threads} ${us[Math.floor(us.length / 2)].toFixed(1)}`);
}

main().catch((e) => {
  console.error(String(e.stack || e));
  process.exit(1);
});
