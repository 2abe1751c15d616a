// A custom training loop: your own forward and backward with Ringwork's kernels,
// and the strategy for what is distributed (mirrored variables, the gradient
// all-reduce, the shard of the data, agreed metrics). Linear softmax regression.
// With --min_workers=N it is elastic (RunElastic, strategy/elastic_loop.h): a
// worker's failure is survived, and a worker started again joins.
//
//   bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/examples/custom_training_loop
//   bazel-bin/tools/launch/launch --num_workers=3 --elastic --max_restarts=1 -- \
//       bazel-bin/examples/custom_training_loop --min_workers=2 [--epochs=3]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringwork.h"

int main(int argc, char** argv) {
  using namespace ringwork;
  MultiWorkerMirroredStrategy::Options options;
  int64_t epochs = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--epochs=", 9) == 0) epochs = std::atoll(argv[i] + 9);
    if (std::strncmp(argv[i], "--min_workers=", 14) == 0)
      options.min_workers = std::atoi(argv[i] + 14);
  }
  absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> strategy =
      MultiWorkerMirroredStrategy::Create(options);
  if (!strategy.ok()) ExitWithStatus(strategy.status());
  MultiWorkerMirroredStrategy& s = **strategy;

  // Variables, created identically everywhere, then equal to the chief's.
  const int64_t features = 28 * 28, classes = 10;
  Variable w{"w", Tensor({features, classes})}, b{"b", Tensor({classes})};
  GlorotUniform(w.value, features, classes, /*seed=*/s.rank() + 1, w.name);  // Different...
  if (absl::Status st = s.BroadcastVariables({&w, &b}); !st.ok())
    ExitWithStatus(st);  // ...then not.
  // Adam's moments for w and b.
  Tensor mw(w.value.shape()), vw(w.value.shape()), mb(b.value.shape()), vb(b.value.shape());
  // What survives a change of the ring: taken from the worker that went furthest.
  ElasticState state(&s);
  for (Variable* v : {&w, &b}) state.Track(v);
  state.Track("adam/w/m", &mw);
  state.Track("adam/w/v", &vw);
  state.Track("adam/b/m", &mb);
  state.Track("adam/b/v", &vb);
  int64_t& updates = state.Counter("updates");  // Steps done, over every epoch.
  // One global batch for every ring (the cluster's), so steps mean the same examples.
  const int64_t global_batch = 64 * s.cluster().configured_world_size();
  TrainTest data = SyntheticImages(4096, 512, 3);
  const Dataset examples = Dataset::FromExamples(std::move(data.train));
  float last_loss = 0;
  absl::Status trained = RunElastic(&state, [&]() -> absl::Status {
    // Made for the ring as it is now. The reducer owns the gradient memory and
    // averages it over the replicas; the data is this worker's shard, batched
    // per replica (full batches only: the kernel below is made for one size).
    std::unique_ptr<GradientReducer> reducer = s.MakeGradientReducer({&w, &b});
    RW_ASSIGN_OR_RETURN(DistributedDataset train,
                        s.DistributeDataset(examples, global_batch, AutoShardPolicy::kData,
                                            /*shuffle_seed=*/0, /*prefetch_batches=*/2,
                                            /*drop_remainder=*/true));
    KernelContext kernels({/*intra_op_threads=*/1, Precision::kFloat32});
    const int64_t batch = train.per_replica_batch_size;
    RW_ASSIGN_OR_RETURN(std::unique_ptr<DenseKernel> dense,
                        DenseKernel::Create(kernels, {batch, features, classes}));
    Tensor logits({batch, classes}), dlogits({batch, classes});
    const int64_t steps = train.steps_per_epoch;
    while (updates < epochs * steps) {
      const int64_t epoch = updates / steps;
      auto it = train.local.Iterate(epoch, steps);
      Batch x;
      // From the step reached (after a regroup, mid-epoch).
      for (int64_t skip = 0; skip < updates % steps; ++skip) it->Next(&x);
      double loss_sum = 0;
      int64_t counted = 0;
      while (updates < (epoch + 1) * steps && it->Next(&x)) {
        reducer->BeginStep();
        dense->Forward(kernels, x.features.data(), w.value.data(), b.value.data(), logits.data());
        RW_ASSIGN_OR_RETURN(const float loss,
                            SoftmaxCrossEntropy(logits.data(), x.labels.data(), batch, classes,
                                                nullptr, dlogits.data()));
        dense->BackwardWeights(kernels, x.features.data(), dlogits.data(), w.grad, b.grad);
        reducer->Ready(&b);
        reducer->Ready(&w);
        RW_RETURN_IF_ERROR(reducer->FinishStep());
        // The averaged gradients are the same on every replica: so are the updates.
        const AdamOptions adam{.learning_rate = 0.01f};
        ++updates;
        AdamUpdate(adam, updates, w.value.data(), w.grad, mw.data(), vw.data(), w.size());
        AdamUpdate(adam, updates, b.value.data(), b.grad, mb.data(), vb.data(), b.size());
        loss_sum += loss;
        ++counted;
        RW_RETURN_IF_ERROR(state.Commit());
      }
      // The mean loss over every replica's steps of this epoch (since the last
      // change of the ring).
      double mean = loss_sum / std::max<int64_t>(counted, 1);
      RW_RETURN_IF_ERROR(s.Reduce(ReduceOp::kMean, &mean, 1));
      if (s.is_chief())
        std::printf("custom_training_loop: epoch %lld loss %.4f\n", static_cast<long long>(epoch),
                    mean);
      last_loss = static_cast<float>(mean);
    }
    return absl::OkStatus();
  });
  if (!trained.ok()) ExitWithStatus(trained);
  if (absl::Status st = s.Shutdown(); !st.ok()) ExitWithStatus(st);
  // Every replica ends alike (RunElastic took the furthest state after a change).
  double checksum = 0;
  for (const Variable* v : {&w, &b}) {
    for (int64_t i = 0; i < v->size(); ++i)
      checksum += v->value.data()[i] * static_cast<double>(i + 1);
  }
  std::printf("custom_training_loop: %s weights checksum %a\n",
              s.cluster().task().ToString().c_str(), checksum);
  // Softmax regression learns this data: the loss falls well below ln(10) = 2.30.
  return last_loss < 1.5f ? 0 : 1;
}
