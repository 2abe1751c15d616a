#include "tools/train_flags.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "data/synthetic_clicks.h"
#include "data/synthetic_sequences.h"
#include "keras/applications.h"
#include "keras/keras_import.h"
#include "keras/saved_model.h"
#include "keras/training_callbacks.h"

namespace ringwork {

void RegisterTrainFlags(FlagSet* flags, TrainFlags* f) {
  flags->String(
      "model", &f->model,
      "mlp (784-256-128-10, ReLU), cnn (a small conv net), resnet (a residual network "
      "with batch normalization: a stem and three stages of two blocks, 16/32/64 filters) "
      "or wide_deep (Wide & Deep over --dataset=synthetic_clicks); over "
      "--dataset=synthetic_sequences: lstm, gru (an Embedding of 32, the recurrent layer of 64), "
      "transformer (an Embedding of 32 with positions, two encoder blocks of 2 heads) or "
      "bag_of_embeddings (the embeddings' mean, Dense 64: blind to order)");
  flags->String(
      "dataset", &f->dataset,
      "fashion_mnist, synthetic (images), synthetic_clicks (a seeded click log of "
      "user and item ids and 3 numbers with a known best AUC; for --model=wide_deep) "
      "or synthetic_sequences (seeded token sequences whose class is the order of "
      "four markers, with a known best accuracy; for lstm, gru, transformer, bag_of_embeddings)");
  flags->String("data_dir", &f->data_dir, "where the Fashion-MNIST IDX files are");
  flags->String("train_data", &f->train_data,
                "your training files instead of --dataset, streamed: tfrecord:GLOB (TFRecord "
                "files of tf.train.Example, plain, GZIP or ZLIB), csv:GLOB (a header row, then "
                "numbers), npz:GLOB (NumPy archives: arrays by name, a row per example) or "
                "images:DIR (a folder per class of PNG or JPEG files)");
  flags->String("validation_data", &f->validation_data,
                "with --train_data: files evaluated after every epoch (as --train_data)");
  flags->String("test_data", &f->test_data,
                "with --train_data: files evaluated after training (as --train_data)");
  flags->String("features", &f->features,
                "with --train_data: NAME[:SHAPE] of the feature the model reads, e.g. "
                "image:28x28x1 (default: the one feature that is not a target; CSV: every "
                "column but the targets; images: image, at the first image's size and "
                "channels, or resized to HxWxC)");
  flags->String("targets", &f->targets,
                "with --train_data: the features the model learns: integer class ids, or "
                "numbers (several side by side); images: label, the class folder's index");
  flags->String("loss", &f->loss,
                "the loss (default: sparse_categorical_crossentropy for class ids, "
                "mean_squared_error for number targets; binary_crossentropy for multi-label "
                "targets in [0, 1], from logits)");
  flags->Int("num_classes", &f->num_classes,
             "with --train_data: the classes of the target (0: counted from the training files)");
  flags->Int("shuffle_buffer", &f->shuffle_buffer,
             "with --train_data: examples shuffled through a buffer of this many each epoch "
             "(tf.data's shuffle; images: the whole file list; 0: file order)");
  flags->Bool("ignore_errors", &f->ignore_errors,
              "skip records that cannot be read or parsed, and count them, instead of "
              "stopping with exit 8 (tf.data's ignore_errors)");
  flags->Int("epochs", &f->epochs, "passes over the training data");
  flags->Int("global_batch_size", &f->global_batch_size,
             "examples per step over all workers (each takes global / workers; when they do "
             "not divide it, shares that differ by one: 256 on 3 is 86, 85, 85)");
  flags->String("optimizer", &f->optimizer, "sgd, adam, adamw, rmsprop or adagrad");
  flags->Double(
      "learning_rate", &f->learning_rate,
      "the optimizer's learning rate (0: the model's with adam and adamw: 0.001; resnet 0.002, "
      "wide_deep and transformer 0.003; 0.01 with sgd, Keras' default)");
  flags->Int("seed", &f->seed, "initialisation, shuffling and dropout seed");
  flags->Int("intra_op_threads", &f->intra_op_threads,
             "threads per kernel (0: this process's cores / workers on this host)",
             "RINGWORK_INTRA_OP_THREADS");
  flags->Int("inter_op_threads", &f->inter_op_threads,
             "2 or more: all-reduce gradients on a second thread while the backward pass "
             "runs; 1: after it; 0: 2 when each worker on this host has 2 cores or more, else 1",
             "RINGWORK_INTER_OP_THREADS");
  flags->Int("min_workers", &f->min_workers,
             "elastic training: when a worker fails, the others go on without it while they "
             "are more than half of the cluster and at least this many, and a worker that "
             "starts again joins them at a step (0: every worker is needed, a failure ends "
             "the job)",
             "RINGWORK_MIN_WORKERS");
  flags->String("elastic_batch", &f->elastic_batch,
                "elastic training, when the ring changes size: global (the global batch is split "
                "over the workers there are) or per_replica (each worker keeps global / workers "
                "examples per step; the global batch and the learning rate scale with the "
                "workers, and an epoch takes the steps its data then needs)",
                "RINGWORK_ELASTIC_BATCH");
  flags->Double("regroup_discovery_s", &f->regroup_discovery_s,
                "elastic training: how long the workers left after a failure look for each "
                "other (they must all notice the failure within it)",
                "RINGWORK_REGROUP_DISCOVERY_S");
  flags->Double("regroup_timeout_s", &f->regroup_timeout_s,
                "elastic training: how long the workers found may take to form the new ring",
                "RINGWORK_REGROUP_TIMEOUT_S");
  flags->String("precision", &f->precision, "float32 or bfloat16 (float32 master weights)");
  flags->String("shard_policy", &f->shard_policy,
                "auto-shard policy: auto (--train_data: FILE with at least as many files as "
                "workers, else DATA; a built-in data set: DATA), data, file or off");
  flags->String("metrics_json", &f->metrics_json, "the chief writes its results here");
  flags->String("initial_weights", &f->initial_weights,
                "start from these weights (.npz, .safetensors or a Ringwork checkpoint; every "
                "name and shape must match the model's): fine-tuning");
  flags->String("export_onnx", &f->export_onnx,
                "after training the chief writes the inference graph here as ONNX (opset 17)");
  flags->String("model_config", &f->model_config,
                "train the model this Keras JSON describes instead of --model: tf.keras 2's "
                "model.to_json(), Keras 3's config.json or .keras archive, or a TF.js "
                "model.json (their weights: --initial_weights=the same file)");
  flags->String("export_tfjs", &f->export_tfjs,
                "after training the chief writes the model here for TensorFlow.js (a "
                "directory: model.json and its weights)");
  flags->String("save_model", &f->save_model,
                "after training the chief saves the whole model here: a .keras archive (Keras "
                "3's, with the compile settings), else a directory (model.json and its "
                "weights, TF.js' layers format); for LoadModel, Keras and TensorFlow.js");
  flags->String("save_weights", &f->save_weights,
                "after training the chief writes the weights here under Keras' names "
                "(.npz for NumPy, .safetensors) or in Keras 3's layout (.weights.h5)");
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
                "the next epoch boundary",
                "RINGWORK_RESUME_POLICY");
  flags->Int("synthetic_examples", &f->synthetic_examples,
             "training examples of --dataset=synthetic (test: a quarter)");
  flags->Bool("sync_batch_norm", &f->sync_batch_norm,
              "resnet: SyncBatchNormalization (statistics over the global batch; gradients "
              "reduced after the backward pass)");
  flags->Bool("random_flip", &f->random_flip,
              "resnet on fashion_mnist: mirror each training image left-right with probability "
              "1/2 (Keras' RandomFlip(\"horizontal\"))");
  flags->Int("clicks_examples", &f->clicks_examples,
             "synthetic_clicks: training examples (test: a quarter)");
  flags->Int("clicks_users", &f->clicks_users, "synthetic_clicks: distinct user ids");
  flags->Int("sequences_examples", &f->sequences_examples,
             "synthetic_sequences: training examples (test: a quarter)");
  flags->Int("sequence_steps", &f->sequence_steps, "synthetic_sequences: tokens per sequence");
  flags->Int("sequence_vocabulary", &f->sequence_vocabulary,
             "synthetic_sequences: token ids in [0, this)");
  flags->Int("clicks_items", &f->clicks_items, "synthetic_clicks: distinct item ids");
  flags->Int("bytes_per_pack", &f->bytes_per_pack,
             "gradient pack size for the all-reduce (0: auto)");
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
                "training completes",
                "RINGWORK_BACKUP_DIR");
  flags->Int("backup_freq_steps", &f->backup_freq_steps, "back up every N steps (0: every epoch)");
  flags->String("evaluator_metrics", &f->evaluator_metrics,
                "an evaluator task appends one JSON line per checkpoint here "
                "(default: <checkpoint_dir>/evaluations.jsonl)");
  flags->Double("evaluator_timeout_s", &f->evaluator_timeout_s,
                "an evaluator task fails (exit 4) when no new checkpoint appears for this long",
                "RINGWORK_EVALUATOR_TIMEOUT_S");
  flags->Double("evaluator_poll_s", &f->evaluator_poll_s,
                "how often an evaluator looks for checkpoints");
  flags->String("tensorboard_dir", &f->tensorboard_dir,
                "TensorBoard event files: the chief writes DIR/train (and DIR/validation with "
                "--validate_each_epoch), an evaluator task DIR/validation",
                "RINGWORK_TENSORBOARD_DIR");
  flags->Int("tensorboard_update_freq", &f->tensorboard_update_freq,
             "also write batch_loss and batch_<metric> every N steps (0: per epoch only)");
  flags->Int("tensorboard_histogram_freq", &f->tensorboard_histogram_freq,
             "write a histogram of every variable every N epochs (0: never)");
  flags->String("lr_schedule", &f->lr_schedule,
                "none (constant --learning_rate), exponential (ExponentialDecay), cosine "
                "(CosineDecay to 0, after --lr_warmup_steps of linear warmup from 0) or "
                "piecewise (--lr_boundaries, --lr_values); empty: the model's (resnet: cosine, "
                "unless --reduce_lr_patience is set; the others: none)");
  flags->Int("lr_decay_steps", &f->lr_decay_steps,
             "exponential: steps per decay by --lr_decay_rate; cosine: steps of the decay "
             "(0: every step of the run)");
  flags->Double("lr_decay_rate", &f->lr_decay_rate, "exponential: the factor per --lr_decay_steps");
  flags->Int("lr_warmup_steps", &f->lr_warmup_steps,
             "cosine: steps of linear warmup to --learning_rate");
  flags->String("lr_boundaries", &f->lr_boundaries,
                "piecewise: steps where the rate changes, \"1000,2000\"");
  flags->String("lr_values", &f->lr_values, "piecewise: the rates, one more than boundaries");
  flags->Double("clipnorm", &f->clipnorm,
                "clip each variable's averaged gradient to this norm (0: off)");
  flags->Double("global_clipnorm", &f->global_clipnorm,
                "clip all averaged gradients together to this global norm (0: off)");
  flags->Double("clipvalue", &f->clipvalue,
                "clamp every averaged gradient element to [-c, c] (0: off)");
  flags->Int("early_stopping_patience", &f->early_stopping_patience,
             "EarlyStopping: stop after this many epochs without improvement of val_loss "
             "(loss without --validate_each_epoch) and restore the best weights; -1: off");
  flags->Int("reduce_lr_patience", &f->reduce_lr_patience,
             "ReduceLROnPlateau: multiply the rate by --reduce_lr_factor after this many "
             "epochs without improvement (of what early stopping watches); -1: off");
  flags->Double("reduce_lr_factor", &f->reduce_lr_factor, "ReduceLROnPlateau's factor");
  flags->String("csv_log", &f->csv_log, "CSVLogger: the chief writes one row per epoch here");
  flags->Bool("terminate_on_nan", &f->terminate_on_nan,
              "TerminateOnNaN: stop after the first step whose loss is NaN or infinite");
}

namespace {

template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const char* flag, const std::string& text) {
  std::vector<T> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    T value;
    bool ok;
    if constexpr (std::is_same_v<T, double>) {
      ok = absl::SimpleAtod(part, &value);
    } else {
      ok = absl::SimpleAtoi(part, &value);
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", text, ": \"", part, "\" is not a number"));
    }
    out.push_back(value);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> WithFlag(
    absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> schedule, const TrainFlags& f) {
  if (schedule.ok()) return schedule;
  return absl::InvalidArgumentError(absl::StrCat("--lr_schedule=", LearningRateScheduleName(f),
                                                 f.lr_schedule.empty() ? " (the model's)" : "",
                                                 ": ", schedule.status().message()));
}

}  // namespace

double LearningRate(const TrainFlags& f) {
  if (f.learning_rate > 0) return f.learning_rate;
  if (f.optimizer == "sgd") return 0.01;  // Keras' SGD default; the models' rates are Adam's.
  if (f.model == "wide_deep" || f.model == "transformer") return 3e-3;
  return f.model == "resnet" ? 2e-3 : 1e-3;
}

std::string LearningRateScheduleName(const TrainFlags& f) {
  if (!f.lr_schedule.empty()) return f.lr_schedule;
  // Cosine decay to 0 over the run: on Fashion-MNIST 10 epochs of the residual
  // network reach 0.925 test accuracy with it (0.911 at a constant 0.001).
  return f.model == "resnet" && f.reduce_lr_patience < 0 ? "cosine" : "none";
}

absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> MakeLearningRateSchedule(
    const TrainFlags& f, int64_t run_steps) {
  const int64_t decay_steps =
      f.lr_decay_steps > 0 ? f.lr_decay_steps : std::max<int64_t>(1, run_steps);
  const std::string name = LearningRateScheduleName(f);
  if (name == "none") return std::shared_ptr<const LearningRateSchedule>();
  if (name == "exponential") {
    return WithFlag(ExponentialDecay({.initial_learning_rate = LearningRate(f),
                                      .decay_steps = decay_steps,
                                      .decay_rate = f.lr_decay_rate}),
                    f);
  }
  if (name == "cosine") {
    CosineDecayOptions cosine{.initial_learning_rate = LearningRate(f), .decay_steps = decay_steps};
    if (f.lr_warmup_steps > 0) {
      cosine.initial_learning_rate = 0;
      cosine.warmup_target = LearningRate(f);
      cosine.warmup_steps = f.lr_warmup_steps;
      if (f.lr_decay_steps <= 0)
        cosine.decay_steps = std::max<int64_t>(1, run_steps - f.lr_warmup_steps);
    }
    return WithFlag(CosineDecay(cosine), f);
  }
  if (name == "piecewise") {
    RW_ASSIGN_OR_RETURN(std::vector<int64_t> boundaries,
                        ParseList<int64_t>("lr_boundaries", f.lr_boundaries));
    RW_ASSIGN_OR_RETURN(std::vector<double> values, ParseList<double>("lr_values", f.lr_values));
    return WithFlag(PiecewiseConstantDecay(std::move(boundaries), std::move(values)), f);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--lr_schedule=", name, ": expected none, exponential, cosine or piecewise"));
}

std::vector<std::unique_ptr<Callback>> MakeControlCallbacks(const TrainFlags& f, bool validating) {
  const std::string monitor = validating ? "val_loss" : "loss";
  std::vector<std::unique_ptr<Callback>> callbacks;
  if (f.reduce_lr_patience >= 0) {
    callbacks.push_back(std::make_unique<ReduceLROnPlateau>(ReduceLROnPlateauOptions{
        .monitor = monitor, .factor = f.reduce_lr_factor, .patience = f.reduce_lr_patience}));
  }
  if (f.early_stopping_patience >= 0) {
    callbacks.push_back(std::make_unique<EarlyStopping>(EarlyStoppingOptions{
        .monitor = monitor, .patience = f.early_stopping_patience, .restore_best_weights = true}));
  }
  if (f.terminate_on_nan) callbacks.push_back(std::make_unique<TerminateOnNaN>());
  if (!f.csv_log.empty()) {
    callbacks.push_back(
        std::make_unique<CSVLogger>(CSVLoggerOptions{.filename = f.csv_log, .append = true}));
  }
  return callbacks;
}

absl::StatusOr<Model> BuildModel(const TrainFlags& f, const DataShape& shape) {
  if (!f.model_config.empty()) {
    absl::StatusOr<std::string> text = ReadModelJson(f.model_config);
    if (!text.ok()) {
      return absl::Status(text.status().code(),
                          absl::StrCat("--model_config=", text.status().message()));
    }
    absl::StatusOr<Model> model = ModelFromKerasJson(*text);
    if (!model.ok()) {
      return absl::Status(model.status().code(), absl::StrCat("--model_config=", f.model_config,
                                                              ": ", model.status().message()));
    }
    return model;
  }
  const std::string& name = f.model;
  const bool clicks = f.dataset == "synthetic_clicks" && f.train_data.empty();
  const bool sequences = f.dataset == "synthetic_sequences" && f.train_data.empty();
  const std::map<std::string, SequenceModel> sequence_models = {
      {"lstm", SequenceModel::kLstm},
      {"gru", SequenceModel::kGru},
      {"transformer", SequenceModel::kTransformer},
      {"bag_of_embeddings", SequenceModel::kBagOfEmbeddings}};
  const bool sequence_model = sequence_models.count(name) > 0;
  if (name != "mlp" && name != "cnn" && name != "resnet" && name != "wide_deep" &&
      !sequence_model) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model=", name,
        ": expected mlp, cnn, resnet, wide_deep, lstm, gru, transformer or bag_of_embeddings"));
  }
  if ((name == "wide_deep") != clicks || sequence_model != sequences) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model=", name, " with --dataset=", f.dataset,
        ": wide_deep trains on synthetic_clicks (ids and numbers); lstm, gru, transformer and "
        "bag_of_embeddings on synthetic_sequences (token ids); the others on images"));
  }
  if (sequence_model) {
    return SequenceClassifier(sequence_models.at(name), f.sequence_vocabulary, f.sequence_steps,
                              SequenceSet::kClasses);
  }
  // Class ids: a logit per class; numbers: an output per target value.
  const int64_t outputs = shape.target_width > 0 ? shape.target_width : shape.classes;
  if ((name == "cnn" || name == "resnet") && shape.input.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model=", name, " reads images (height x width x channels), not inputs of shape ",
        ShapeString(shape.input), " (give the feature's shape: --features=NAME:28x28x1)"));
  }
  if (f.sync_batch_norm && name != "resnet") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sync_batch_norm is for --model=resnet, not ", name));
  }
  if (name == "resnet") {
    // A mirrored garment is the same garment; --dataset=synthetic's labels are
    // not mirror-symmetric, so its images are not flipped.
    return SmallResNet(shape.input, outputs,
                       {.sync_batch_norm = f.sync_batch_norm,
                        .random_flip = f.random_flip && f.dataset == "fashion_mnist"});
  }
  if (name == "wide_deep") {
    return WideAndDeep(f.clicks_users + f.clicks_items, ClickLog::kIdColumns,
                       ClickLog::kNumericColumns);
  }
  return name == "mlp" ? MlpClassifier(outputs) : SmallCnn(outputs);
}

absl::StatusOr<CompileOptions> MakeCompileOptions(const TrainFlags& f, bool numbers) {
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", /*from_logits=*/true};
  if (f.model == "wide_deep") compile.loss = {"binary_crossentropy"};  // Its sigmoid's probability.
  // The loss follows the targets: numbers (regression) take the mean squared
  // error; --loss says otherwise (binary_crossentropy for multi-label targets
  // in [0, 1], from the model's logits).
  if (numbers) compile.loss = {"mean_squared_error"};
  if (!f.loss.empty()) {
    // The cross-entropies read the model's logits; the regression losses its numbers.
    compile.loss = {f.loss, /*from_logits=*/f.loss.find("crossentropy") != std::string::npos};
  }
  compile.optimizer.name = f.optimizer;
  compile.optimizer.learning_rate = static_cast<float>(LearningRate(f));
  compile.optimizer.clipping = {static_cast<float>(f.clipnorm),
                                static_cast<float>(f.global_clipnorm),
                                static_cast<float>(f.clipvalue)};
  if (absl::Status valid = compile.optimizer.clipping.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--clipnorm=", f.clipnorm, ", --global_clipnorm=", f.global_clipnorm,
                     ", --clipvalue=", f.clipvalue, ": ", valid.message()));
  }
  compile.metrics = {"accuracy"};
  if (f.model == "wide_deep") compile.metrics = {"accuracy", "auc"};
  // Numbers under a regression loss: accuracy would mean nothing there.
  const bool regression = compile.loss.name.find("crossentropy") == std::string::npos;
  if (numbers && regression) compile.metrics = {"mae"};
  compile.intra_op_threads = static_cast<int>(f.intra_op_threads);
  compile.seed = static_cast<uint64_t>(f.seed);
  if (f.precision == "bfloat16") {
    compile.precision = Precision::kBFloat16;
  } else if (f.precision != "float32") {
    return absl::InvalidArgumentError(
        absl::StrCat("--precision=", f.precision, ": expected float32 or bfloat16"));
  }
  return compile;
}

absl::StatusOr<TrainTest> LoadData(const TrainFlags& f, double* bayes_auc, double* bayes_accuracy) {
  if (f.dataset == "synthetic_sequences") {
    absl::StatusOr<SequenceSet> set = SyntheticSequences({.train = f.sequences_examples,
                                                          .test = f.sequences_examples / 4,
                                                          .steps = f.sequence_steps,
                                                          .vocabulary = f.sequence_vocabulary});
    if (!set.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sequences_examples=", f.sequences_examples, ", --sequence_steps=", f.sequence_steps,
          ", --sequence_vocabulary=", f.sequence_vocabulary, ": ", set.status().message()));
    }
    if (bayes_accuracy != nullptr) *bayes_accuracy = set->bayes_accuracy;
    return std::move(set->data);
  }
  if (f.dataset == "synthetic_clicks") {
    if (f.clicks_users <= 0 || f.clicks_items <= 0 || f.clicks_examples < 4 ||
        f.clicks_users + f.clicks_items > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--clicks_users=", f.clicks_users, ", --clicks_items=", f.clicks_items,
                       ", --clicks_examples=", f.clicks_examples,
                       ": users and items must be positive and together at most 2^24 (ids travel "
                       "as floats), examples at least 4"));
    }
    ClickLog log = SyntheticClicks({.train = f.clicks_examples,
                                    .test = f.clicks_examples / 4,
                                    .users = f.clicks_users,
                                    .items = f.clicks_items});
    if (bayes_auc != nullptr) *bayes_auc = log.bayes_auc;
    return std::move(log.data);
  }
  if (f.dataset == "fashion_mnist") return LoadFashionMnist(f.data_dir);
  if (f.dataset == "synthetic")
    return SyntheticImages(f.synthetic_examples, f.synthetic_examples / 4, 1234);
  return absl::InvalidArgumentError(
      absl::StrCat("--dataset=", f.dataset,
                   ": expected fashion_mnist, synthetic, synthetic_clicks or synthetic_sequences"));
}

}  // namespace ringwork
