// The flags of `train` and what they build: the model, its compile options and
// the data. Shared by training (tools/train.cc) and the sidecar evaluator
// (tools/train_evaluator.cc), which must build the same model.
#ifndef RINGWORK_TOOLS_TRAIN_FLAGS_H_
#define RINGWORK_TOOLS_TRAIN_FLAGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/flags.h"
#include "data/fashion_mnist.h"
#include "keras/learning_rate_schedule.h"
#include "keras/sequential.h"

namespace ringwork {

struct TrainFlags {
  std::string model = "mlp";
  std::string dataset = "fashion_mnist";
  // Your files instead of --dataset (tools/train_data.h).
  std::string train_data, validation_data, test_data;
  std::string features, targets;
  int64_t num_classes = 0;         // 0: counted from the training targets.
  std::string loss;                // Empty: the one the targets call for.
  int64_t shuffle_buffer = 10000;  // Of --train_data; 0: file order.
  bool ignore_errors = false;
  std::string data_dir = kFashionMnistDir;
  int64_t epochs = 5;
  int64_t global_batch_size = 256;
  std::string optimizer = "adam";
  double learning_rate = 0;  // 0: the model's (LearningRate)
  int64_t seed = 42;
  int64_t intra_op_threads = 0;
  int64_t inter_op_threads = 0;
  int64_t min_workers = 0;               // Elastic training: 0 (every worker needed) or 1..workers.
  std::string elastic_batch = "global";  // Or per_replica.
  double regroup_discovery_s = 1.0;
  double regroup_timeout_s = 5;
  std::string precision = "float32";
  std::string shard_policy = "auto";
  std::string metrics_json;
  std::string initial_weights;  // .npz, .safetensors or a Ringwork checkpoint.
  std::string save_weights;     // .npz or .safetensors.
  std::string export_onnx;
  std::string model_config;  // A Keras JSON, instead of --model.
  std::string export_tfjs;   // A directory.
  std::string save_model;    // A directory.
  int64_t steps_per_epoch = 0;
  int64_t replica_check_steps = 100;
  std::string resume_policy = "exact";
  int64_t synthetic_examples = 8192;
  int64_t clicks_users = 200, clicks_items = 100;  // --dataset=synthetic_clicks
  int64_t clicks_examples = 300000;
  int64_t sequences_examples = 20000;  // --dataset=synthetic_sequences
  int64_t sequence_steps = 20;
  int64_t sequence_vocabulary = 50;
  bool sync_batch_norm = false;  // --model=resnet
  bool random_flip = true;       // --model=resnet on fashion_mnist
  int64_t bytes_per_pack = 0;
  std::string allreduce_compression = "none";
  int64_t verbose = 1;
  bool validate_each_epoch = false;
  // Checkpoints, backups and the sidecar evaluator.
  std::string checkpoint_dir;
  int64_t checkpoint_freq_steps = 0;
  int64_t keep_checkpoints = 5;
  std::string backup_dir;
  int64_t backup_freq_steps = 0;
  std::string evaluator_metrics;  // Default: <checkpoint_dir>/evaluations.jsonl.
  double evaluator_timeout_s = 600;
  double evaluator_poll_s = 1;
  // TensorBoard: the chief writes DIR/train, an evaluator task DIR/validation.
  std::string tensorboard_dir;
  int64_t tensorboard_update_freq = 0;
  int64_t tensorboard_histogram_freq = 0;
  // What steers training (keras/learning_rate_schedule.h, training_callbacks.h).
  std::string lr_schedule;     // Empty: the model's (LearningRateScheduleName).
  int64_t lr_decay_steps = 0;  // 0: every step of the run.
  double lr_decay_rate = 0.96;
  int64_t lr_warmup_steps = 0;
  std::string lr_boundaries, lr_values;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0;
  int64_t early_stopping_patience = -1;
  int64_t reduce_lr_patience = -1;
  double reduce_lr_factor = 0.1;
  std::string csv_log;
  bool terminate_on_nan = false;
};

void RegisterTrainFlags(FlagSet* flags, TrainFlags* f);

// What a built-in model is sized to: one example's input and the classes.
struct DataShape {
  Shape input = {28, 28, 1};
  int64_t classes = 10;
  // Number targets (regression, multi-label): the outputs, one per target value;
  // 0: class ids (`classes` outputs).
  int64_t target_width = 0;
};
// The model --model names (unbuilt), for data of `shape`; INVALID_ARGUMENT for an
// unknown name, or a model and data that do not go together.
absl::StatusOr<Model> BuildModel(const TrainFlags& f, const DataShape& shape = {});
// `numbers`: the targets are numbers (the loss defaults to mean_squared_error and
// the metric to mae), else class ids.
absl::StatusOr<CompileOptions> MakeCompileOptions(const TrainFlags& f, bool numbers = false);
// --learning_rate, or the model's default: 0.001 (Keras' Adam), 0.002 for resnet,
// 0.003 for wide_deep and transformer; with sgd, 0.01 (Keras' SGD).
double LearningRate(const TrainFlags& f);
// --lr_schedule, or the model's default: cosine for resnet (unless
// --reduce_lr_patience steers the rate), none for the others.
std::string LearningRateScheduleName(const TrainFlags& f);
// That schedule (null for none) for a run of `run_steps` steps.
absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> MakeLearningRateSchedule(
    const TrainFlags& f, int64_t run_steps);
// The callbacks of --early_stopping_patience, --reduce_lr_patience, --csv_log and
// --terminate_on_nan; they watch val_loss when `validating`, else loss.
std::vector<std::unique_ptr<Callback>> MakeControlCallbacks(const TrainFlags& f, bool validating);
// The train and test sets --dataset names. `bayes_auc` and `bayes_accuracy`, if
// given, receive the best achievable test AUC of --dataset=synthetic_clicks and
// test accuracy of --dataset=synthetic_sequences (else they are left alone).
absl::StatusOr<TrainTest> LoadData(const TrainFlags& f, double* bayes_auc = nullptr,
                                   double* bayes_accuracy = nullptr);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_TRAIN_FLAGS_H_
