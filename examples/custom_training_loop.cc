// A custom training loop: your own forward and backward with Ringwork's kernels,
// and the strategy for what is distributed (mirrored variables, the gradient
// all-reduce, the shard of the data, agreed metrics). Linear softmax regression.
//
//   bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/examples/custom_training_loop
#include <cstdio>

#include "ringwork.h"

int main() {
  using namespace ringwork;
  absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> strategy =
      MultiWorkerMirroredStrategy::Create();
  if (!strategy.ok()) ExitWithStatus(strategy.status());
  MultiWorkerMirroredStrategy& s = **strategy;

  // Variables, created identically everywhere, then equal to the chief's.
  const int64_t features = 28 * 28, classes = 10;
  Variable w{"w", Tensor({features, classes})}, b{"b", Tensor({classes})};
  GlorotUniform(w.value, features, classes, /*seed=*/s.rank() + 1, w.name);  // Different...
  if (absl::Status st = s.BroadcastVariables({&w, &b}); !st.ok())
    ExitWithStatus(st);  // ...then not.
  // The reducer owns the gradient memory and averages it over the replicas.
  std::unique_ptr<GradientReducer> reducer = s.MakeGradientReducer({&w, &b});

  // Data: this worker's shard, batched per replica; the same steps everywhere.
  TrainTest data = SyntheticImages(4096, 512, 3);
  const int64_t global_batch = 64 * s.num_replicas_in_sync();
  // Full batches only (drop_remainder): the kernel below is made for one batch size.
  absl::StatusOr<DistributedDataset> train =
      s.DistributeDataset(Dataset::FromExamples(std::move(data.train)), global_batch,
                          AutoShardPolicy::kData, /*shuffle_seed=*/0, /*prefetch_batches=*/2,
                          /*drop_remainder=*/true);
  if (!train.ok()) ExitWithStatus(train.status());

  KernelContext kernels({/*intra_op_threads=*/1, Precision::kFloat32});
  const int64_t batch = train->per_replica_batch_size;
  absl::StatusOr<std::unique_ptr<DenseKernel>> dense =
      DenseKernel::Create(kernels, {batch, features, classes});
  if (!dense.ok()) ExitWithStatus(dense.status());
  Tensor logits({batch, classes}), dlogits({batch, classes});
  // Adam's moments for w and b.
  Tensor mw(w.value.shape()), vw(w.value.shape()), mb(b.value.shape()), vb(b.value.shape());
  int64_t updates = 0;
  float last_loss = 0;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    auto it = train->local.Iterate(epoch, train->steps_per_epoch);
    Batch x;
    double loss_sum = 0;
    for (int64_t step = 0; step < train->steps_per_epoch && it->Next(&x); ++step) {
      reducer->BeginStep();
      (*dense)->Forward(kernels, x.features.data(), w.value.data(), b.value.data(), logits.data());
      absl::StatusOr<float> loss = SoftmaxCrossEntropy(logits.data(), x.labels.data(), batch,
                                                       classes, nullptr, dlogits.data());
      if (!loss.ok()) ExitWithStatus(loss.status());
      (*dense)->BackwardWeights(kernels, x.features.data(), dlogits.data(), w.grad, b.grad);
      reducer->Ready(&b);
      reducer->Ready(&w);
      if (absl::Status st = reducer->FinishStep(); !st.ok()) ExitWithStatus(st);
      // The averaged gradients are the same on every replica: so are the updates.
      const AdamOptions adam{.learning_rate = 0.01f};
      ++updates;
      AdamUpdate(adam, updates, w.value.data(), w.grad, mw.data(), vw.data(), w.size());
      AdamUpdate(adam, updates, b.value.data(), b.grad, mb.data(), vb.data(), b.size());
      loss_sum += *loss;
    }
    // The mean loss over every replica's steps.
    double mean = loss_sum / train->steps_per_epoch;
    if (absl::Status st = s.Reduce(ReduceOp::kMean, &mean, 1); !st.ok()) ExitWithStatus(st);
    if (s.is_chief())
      std::printf("custom_training_loop: epoch %lld loss %.4f\n", static_cast<long long>(epoch),
                  mean);
    last_loss = static_cast<float>(mean);
  }
  if (absl::Status st = s.Shutdown(); !st.ok()) ExitWithStatus(st);
  // Softmax regression learns this data: the loss falls well below ln(10) = 2.30.
  return last_loss < 1.5f ? 0 : 1;
}
