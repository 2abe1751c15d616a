// train: the same binary on every host. Reads TF_CONFIG (or Slurm's environment),
// joins the ring, and trains a model on Fashion-MNIST with
// MultiWorkerMirroredStrategy: one replica per worker, gradients averaged every
// step, the chief's progress bar, test accuracy at the end.
//
//   launch --num_workers=2 -- bazel-bin/tools/train --model=mlp --epochs=5
//   TF_CONFIG='{...}' bazel-bin/tools/train --global_batch_size=512   # on each host
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/sequential.h"
#include "runtime/config/cluster_source.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {
namespace {

struct TrainFlags {
  std::string model = "mlp";
  std::string dataset = "fashion_mnist";
  std::string data_dir = kFashionMnistDir;
  int64_t epochs = 5;
  int64_t global_batch_size = 256;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  int64_t seed = 42;
  int64_t intra_op_threads = 0;
  int64_t inter_op_threads = 2;
  std::string precision = "float32";
  std::string shard_policy = "data";
  std::string metrics_json;
  int64_t steps_per_epoch = 0;
  int64_t synthetic_examples = 8192;
  int64_t bytes_per_pack = 0;
  int64_t verbose = 1;
  bool validate_each_epoch = false;
};

void Register(FlagSet* flags, TrainFlags* f) {
  flags->String("model", &f->model, "mlp (784-256-128-10, ReLU) or cnn (a small conv net)");
  flags->String("dataset", &f->dataset, "fashion_mnist or synthetic");
  flags->String("data_dir", &f->data_dir, "where the Fashion-MNIST IDX files are");
  flags->Int("epochs", &f->epochs, "passes over the training data");
  flags->Int("global_batch_size", &f->global_batch_size,
             "examples per step over all workers (each takes global / workers)");
  flags->String("optimizer", &f->optimizer, "sgd, adam or adamw");
  flags->Double("learning_rate", &f->learning_rate, "the optimizer's learning rate");
  flags->Int("seed", &f->seed, "initialisation, shuffling and dropout seed");
  flags->Int("intra_op_threads", &f->intra_op_threads,
             "threads per kernel (0: this process's cores / workers on this host)",
             "RINGWORK_INTRA_OP_THREADS");
  flags->Int("inter_op_threads", &f->inter_op_threads,
             "2 or more: all-reduce gradients while the backward pass runs; 1: after it",
             "RINGWORK_INTER_OP_THREADS");
  flags->String("precision", &f->precision, "float32 or bfloat16 (float32 master weights)");
  flags->String("shard_policy", &f->shard_policy, "auto-shard policy: data, file or off");
  flags->String("metrics_json", &f->metrics_json, "the chief writes its results here");
  flags->Int("steps_per_epoch", &f->steps_per_epoch, "at most this many steps per epoch (0: all)");
  flags->Int("synthetic_examples", &f->synthetic_examples, "training examples of --dataset=synthetic");
  flags->Int("bytes_per_pack", &f->bytes_per_pack, "gradient pack size for the all-reduce (0: auto)");
  flags->Int("verbose", &f->verbose, "1: progress bar on the chief; 0: quiet");
  flags->Bool("validate_each_epoch", &f->validate_each_epoch, "evaluate the test set every epoch");
}

absl::StatusOr<Sequential> BuildModel(const std::string& name) {
  Sequential model;
  if (name == "mlp") {
    model.Add(Flatten());
    model.Add(Dense(256, {.activation = "relu"}));
    model.Add(Dense(128, {.activation = "relu"}));
    model.Add(Dense(10));
  } else if (name == "cnn") {
    model.Add(Conv2D(16, 3, {.padding = "same", .activation = "relu"}));
    model.Add(MaxPool2D(2));
    model.Add(Conv2D(32, 3, {.padding = "same", .activation = "relu"}));
    model.Add(MaxPool2D(2));
    model.Add(Flatten());
    model.Add(Dense(128, {.activation = "relu"}));
    model.Add(Dense(10));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--model=", name, ": expected mlp or cnn"));
  }
  return model;
}

// FNV-1a over every variable's bytes: equal on every replica when they are in sync.
uint64_t WeightsFingerprint(const Sequential& model) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const Variable* v : model.variables()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(v->value.data());
    for (size_t i = 0; i < v->value.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

absl::Status Run(const TrainFlags& f, const ClusterConfig& cluster, const StrategyOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", /*from_logits=*/true};
  compile.optimizer.name = f.optimizer;
  compile.optimizer.learning_rate = static_cast<float>(f.learning_rate);
  compile.metrics = {"accuracy"};
  compile.intra_op_threads = static_cast<int>(f.intra_op_threads);
  compile.seed = static_cast<uint64_t>(f.seed);
  if (f.precision == "bfloat16") {
    compile.precision = Precision::kBFloat16;
  } else if (f.precision != "float32") {
    return absl::InvalidArgumentError(absl::StrCat("--precision=", f.precision,
                                                   ": expected float32 or bfloat16"));
  }
  AutoShardPolicy policy;
  if (!ParseAutoShardPolicy(f.shard_policy, &policy)) {
    return absl::InvalidArgumentError(absl::StrCat("--shard_policy=", f.shard_policy,
                                                   ": expected data, file or off"));
  }
  if (f.epochs < 1) return absl::InvalidArgumentError("--epochs must be at least 1");
  if (f.global_batch_size <= 0 || f.global_batch_size % cluster.world_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--global_batch_size=", f.global_batch_size, ": the global batch size ",
        f.global_batch_size, " must be a positive multiple of the ", cluster.world_size(),
        " replicas (each gets global / replicas examples per step)"));
  }
  RW_ASSIGN_OR_RETURN(Sequential model, BuildModel(f.model));  // Validates --model early.
  TrainTest data;
  if (f.dataset == "fashion_mnist") {
    RW_ASSIGN_OR_RETURN(data, LoadFashionMnist(f.data_dir));
  } else if (f.dataset == "synthetic") {
    data = SyntheticImages(f.synthetic_examples, f.synthetic_examples / 4, 1234);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--dataset=", f.dataset, ": expected fashion_mnist or synthetic"));
  }
  // Every check a user can trip is done; now join the cluster.
  RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
                      MultiWorkerMirroredStrategy::Create(cluster, options));
  const bool chief = strategy->is_chief();
  {
    auto scope = strategy->scope();
    RW_ASSIGN_OR_RETURN(model, BuildModel(f.model));
  }
  RW_RETURN_IF_ERROR(model.Compile(compile));
  RW_RETURN_IF_ERROR(model.Build(data.train.example_shape()));
  const int workers = strategy->num_replicas_in_sync();
  if (chief && f.verbose > 0) {
    std::printf("%s", model.Summary().c_str());
    std::printf("Training on %d worker%s (%s), global batch %lld (%lld per worker), %s, %s, "
                "%d intra-op thread%s per worker\n",
                workers, workers == 1 ? "" : "s",
                strategy->communicator()->world_size() > 1 ? "MultiWorkerMirroredStrategy" : "local",
                static_cast<long long>(f.global_batch_size),
                static_cast<long long>(f.global_batch_size / std::max(1, workers)),
                f.optimizer.c_str(), f.precision.c_str(), model.kernel_context()->threads(),
                model.kernel_context()->threads() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  Dataset train = Dataset::FromExamples(std::move(data.train));
  Dataset test = Dataset::FromExamples(std::move(data.test));
  FitOptions fit;
  fit.epochs = f.epochs;
  fit.batch_size = f.global_batch_size;
  fit.verbose = static_cast<int>(f.verbose);
  fit.shard_policy = policy;
  fit.steps_per_epoch = f.steps_per_epoch;
  if (f.validate_each_epoch) fit.validation_data = &test;
  const auto train_start = std::chrono::steady_clock::now();
  RW_ASSIGN_OR_RETURN(History history, model.Fit(train, fit));
  const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
  RW_ASSIGN_OR_RETURN(EvaluateResult result, model.Evaluate(test, f.global_batch_size));
  const int64_t steps = static_cast<int64_t>(history["loss"].size()) > 0
                            ? (f.steps_per_epoch > 0 ? f.steps_per_epoch : train.examples().count() / f.global_batch_size)
                            : 0;
  const double samples_per_s = static_cast<double>(steps * f.epochs * f.global_batch_size) / train_s;
  const uint64_t fingerprint = WeightsFingerprint(model);
  RW_LOG(INFO) << absl::StrFormat("test accuracy %.4f, test loss %.4f, %.0f train samples/s, "
                                  "weights fingerprint %016x",
                                  result.metrics["accuracy"], result.loss, samples_per_s, fingerprint);
  if (chief) {
    std::printf("Test accuracy: %.4f - test loss: %.4f - %.0f samples/s over %d worker%s\n",
                result.metrics["accuracy"], result.loss, samples_per_s, workers,
                workers == 1 ? "" : "s");
    std::fflush(stdout);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (chief && !f.metrics_json.empty()) {
    nlohmann::json j = {{"test_accuracy", result.metrics["accuracy"]},
                        {"test_loss", result.loss},
                        {"train_samples_per_second", samples_per_s},
                        {"wall_seconds", wall_s},
                        {"num_workers", workers},
                        {"model", f.model},
                        {"epochs", f.epochs},
                        {"global_batch_size", f.global_batch_size},
                        {"precision", f.precision},
                        {"final_train_loss", history["loss"].back()},
                        {"final_train_accuracy", history["accuracy"].back()},
                        {"weights_fingerprint", absl::StrFormat("%016x", fingerprint)}};
    const std::string tmp = f.metrics_json + ".tmp";
    {
      std::ofstream out(tmp);
      out << j.dump(2) << "\n";
      if (!out) return absl::InvalidArgumentError(absl::StrCat("--metrics_json=", f.metrics_json, ": cannot write"));
    }
    if (std::rename(tmp.c_str(), f.metrics_json.c_str()) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("--metrics_json=", f.metrics_json, ": cannot write"));
    }
  }
  return strategy->Shutdown();
}

int Main(int argc, char** argv) {
  FlagSet flags(
      "train: trains a model on every worker of a cluster with MultiWorkerMirroredStrategy.\n"
      "Run the same command on every host (TF_CONFIG says which task it is), or\n"
      "  launch --num_workers=N -- train [flags]");
  ClusterSourceFlags source;
  source.Register(&flags);
  StrategyOptions options;
  options.runtime.Register(&flags);
  TrainFlags f;
  Register(&flags, &f);
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (!args->empty()) {
    ExitWithStatus(absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", (*args)[0], "\"")));
  }
  absl::Status status = options.runtime.Finish();
  if (!status.ok()) ExitWithStatus(status);
  options.inter_op_threads = static_cast<int>(f.inter_op_threads);
  options.communication.bytes_per_pack = f.bytes_per_pack;
  absl::StatusOr<ClusterConfig> cluster = ResolveCluster(source, EnvFromProcess());
  if (!cluster.ok()) ExitWithStatus(cluster.status());
  SetLogTask(cluster->task().ToString());
  if (!cluster->in_ring()) {
    ExitWithStatus(absl::InvalidArgumentError(absl::StrCat(
        cluster->task().ToString(), ": the sidecar evaluator is not available yet; run train "
        "only as chief or worker tasks")));
  }
  ExitWithStatus(Run(f, *cluster, options));
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
