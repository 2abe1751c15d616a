#include "tools/train_flags.h"

#include "absl/strings/str_cat.h"

namespace ringwork {

void RegisterTrainFlags(FlagSet* flags, TrainFlags* f) {
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
             "2 or more: all-reduce gradients on a second thread while the backward pass "
             "runs; 1: after it; 0: 2 when each worker on this host has 2 cores or more, else 1",
             "RINGWORK_INTER_OP_THREADS");
  flags->String("precision", &f->precision, "float32 or bfloat16 (float32 master weights)");
  flags->String("shard_policy", &f->shard_policy, "auto-shard policy: data, file or off");
  flags->String("metrics_json", &f->metrics_json,
                "the chief writes its results here");
  flags->Int("steps_per_epoch", &f->steps_per_epoch,
             "epochs of this many steps of one stream over the data, pass after pass "
             "(Keras' steps_per_epoch); 0: an epoch is one pass");
  flags->Int("replica_check_steps", &f->replica_check_steps,
             "every N steps and at each checkpoint the workers compare a hash of their "
             "weights; replicas that differ stop the job (exit 7); 0: never",
             "RINGWORK_REPLICA_CHECK_STEPS");
  flags->String("resume_policy", &f->resume_policy,
                "a backup written with another global batch, steps per epoch, or (file, off) "
                "shard policy or worker count: exact refuses it (exit 7), epoch resumes at "
                "the next epoch boundary", "RINGWORK_RESUME_POLICY");
  flags->Int("synthetic_examples", &f->synthetic_examples, "training examples of --dataset=synthetic");
  flags->Int("bytes_per_pack", &f->bytes_per_pack, "gradient pack size for the all-reduce (0: auto)");
  flags->String("allreduce_compression", &f->allreduce_compression,
                "none, or bf16: gradients travel as bfloat16 (half the bytes; float32 sums at "
                "every hop; replicas stay identical)",
                "RINGWORK_ALLREDUCE_COMPRESSION");
  flags->Int("verbose", &f->verbose, "1: progress bar on the chief; 0: quiet");
  flags->Bool("validate_each_epoch", &f->validate_each_epoch, "evaluate the test set every epoch");
  flags->String("checkpoint_dir", &f->checkpoint_dir,
                "the chief keeps checkpoints here (ModelCheckpoint); an evaluator task watches it",
                "RINGWORK_CHECKPOINT_DIR");
  flags->Int("checkpoint_freq_steps", &f->checkpoint_freq_steps,
             "checkpoint every N steps (0: every epoch); a final one is always written");
  flags->Int("keep_checkpoints", &f->keep_checkpoints, "how many checkpoints to keep");
  flags->String("backup_dir", &f->backup_dir,
                "BackupAndRestore: resume from the backup here after a failure; removed when "
                "training completes", "RINGWORK_BACKUP_DIR");
  flags->Int("backup_freq_steps", &f->backup_freq_steps, "back up every N steps (0: every epoch)");
  flags->String("evaluator_metrics", &f->evaluator_metrics,
                "an evaluator task appends one JSON line per checkpoint here "
                "(default: <checkpoint_dir>/evaluations.jsonl)");
  flags->Double("evaluator_timeout_s", &f->evaluator_timeout_s,
                "an evaluator task fails (exit 4) when no new checkpoint appears for this long",
                "RINGWORK_EVALUATOR_TIMEOUT_S");
  flags->Double("evaluator_poll_s", &f->evaluator_poll_s, "how often an evaluator looks for checkpoints");
  flags->String("tensorboard_dir", &f->tensorboard_dir,
                "TensorBoard event files: the chief writes DIR/train (and DIR/validation with "
                "--validate_each_epoch), an evaluator task DIR/validation",
                "RINGWORK_TENSORBOARD_DIR");
  flags->Int("tensorboard_update_freq", &f->tensorboard_update_freq,
             "also write batch_loss and batch_<metric> every N steps (0: per epoch only)");
  flags->Int("tensorboard_histogram_freq", &f->tensorboard_histogram_freq,
             "write a histogram of every variable every N epochs (0: never)");
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

absl::StatusOr<CompileOptions> MakeCompileOptions(const TrainFlags& f) {
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
  return compile;
}

absl::StatusOr<TrainTest> LoadData(const TrainFlags& f) {
  if (f.dataset == "fashion_mnist") return LoadFashionMnist(f.data_dir);
  if (f.dataset == "synthetic") return SyntheticImages(f.synthetic_examples, f.synthetic_examples / 4, 1234);
  return absl::InvalidArgumentError(
      absl::StrCat("--dataset=", f.dataset, ": expected fashion_mnist or synthetic"));
}

}  // namespace ringwork
