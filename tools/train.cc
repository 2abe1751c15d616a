// train: the same binary on every host. Reads TF_CONFIG (or Slurm's environment),
// joins the ring, and trains a model on Fashion-MNIST with
// MultiWorkerMirroredStrategy: one replica per worker, gradients averaged every
// step, the chief's progress bar, test accuracy at the end.
//
//   launch --num_workers=2 -- bazel-bin/tools/train --model=mlp --epochs=5
//   TF_CONFIG='{...}' bazel-bin/tools/train --global_batch_size=512   # on each host
//
// With --backup_dir a rerun after a failure resumes from the last backup; with
// --checkpoint_dir the chief keeps checkpoints, which a task of type `evaluator`
// (the same binary, the same flags) evaluates as they appear.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/atomic_file.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "checkpoint/weights_file.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/input_report.h"
#include "keras/onnx_export.h"
#include "keras/saved_model.h"
#include "keras/step_breakdown.h"
#include "keras/tensorboard_callback.h"
#include "keras/tfjs_export.h"
#include "keras/training_state.h"
#include "runtime/config/cluster_source.h"
#include "strategy/multi_worker_mirrored_strategy.h"
#include "tools/train_data.h"
#include "tools/train_evaluator.h"
#include "tools/train_flags.h"

namespace ringwork {
namespace {

absl::Status Run(const TrainFlags& f, const ClusterConfig& cluster,
                 const StrategyOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  RW_ASSIGN_OR_RETURN(CompileOptions compile, MakeCompileOptions(f));
  AutoShardPolicy policy;
  if (!ParseAutoShardPolicy(f.shard_policy, &policy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard_policy=", f.shard_policy, ": expected auto, data, file or off"));
  }
  if (f.epochs < 1) return absl::InvalidArgumentError("--epochs must be at least 1");
  if (!f.save_weights.empty() && WeightsFormatOf(f.save_weights) != WeightsFormat::kNpz &&
      WeightsFormatOf(f.save_weights) != WeightsFormat::kSafetensors) {
    return absl::InvalidArgumentError(
        absl::StrCat("--save_weights=", f.save_weights, ": a path ending in .npz or .safetensors"));
  }
  ResumePolicy resume_policy = ResumePolicy::kExact;
  if (f.resume_policy == "epoch") {
    resume_policy = ResumePolicy::kEpoch;
  } else if (f.resume_policy != "exact") {
    return absl::InvalidArgumentError(
        absl::StrCat("--resume_policy=", f.resume_policy, ": expected exact or epoch"));
  }
  if (f.replica_check_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--replica_check_steps=", f.replica_check_steps,
                                                   ": expected 0 (never) or more"));
  }
  if (f.global_batch_size < cluster.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--global_batch_size=", f.global_batch_size, ": at least one example per ",
                     "replica and step (", cluster.world_size(), " replicas)"));
  }
  if (f.min_workers < 0 || f.min_workers > cluster.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min_workers=", f.min_workers, ": expected 0 (every worker is needed) up to the ",
        cluster.world_size(), " workers of the cluster"));
  }
  if (f.elastic_batch != "global" && f.elastic_batch != "per_replica") {
    return absl::InvalidArgumentError(
        absl::StrCat("--elastic_batch=", f.elastic_batch, ": expected global or per_replica"));
  }
  if (f.elastic_batch == "per_replica" && f.min_workers == 0) {
    return absl::InvalidArgumentError(
        "--elastic_batch=per_replica: elastic training needs --min_workers (the ring never "
        "changes size without it)");
  }
  if (f.regroup_discovery_s <= 0 || f.regroup_timeout_s <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--regroup_discovery_s=", f.regroup_discovery_s,
                                                   ", --regroup_timeout_s=", f.regroup_timeout_s,
                                                   ": each must be more than 0 seconds"));
  }
  if (f.min_workers > 0 && cluster.is_chief()) {
    if (f.min_workers == cluster.world_size()) {
      RW_LOG(WARNING) << "--min_workers=" << f.min_workers << " is every worker: a failure ends "
                      << "the job (elastic training needs fewer)";
    } else if (cluster.world_size() <= 2) {
      RW_LOG(WARNING) << "--min_workers=" << f.min_workers << " with " << cluster.world_size()
                      << " workers: a failure leaves no majority, so it still ends the job";
    }
  }
  const TensorBoardOptions tensorboard_options{.log_dir = f.tensorboard_dir,
                                               .update_freq = f.tensorboard_update_freq,
                                               .histogram_freq = f.tensorboard_histogram_freq};
  if (absl::Status valid = tensorboard_options.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tensorboard_update_freq=", f.tensorboard_update_freq, ", --tensorboard_histogram_freq=",
        f.tensorboard_histogram_freq, ": each must be 0 (off) or more"));
  }
  RW_ASSIGN_OR_RETURN(Model model, BuildModel(f));  // Validates --model early.
  double bayes_auc = -1;                            // Known for synthetic_clicks only,
  double bayes_accuracy = -1;                       // and for synthetic_sequences.
  // Your files (--train_data, streamed), or a built-in data set in memory.
  RW_ASSIGN_OR_RETURN(std::optional<FileData> files, LoadFileData(f));
  TrainTest data;
  if (!files.has_value()) {
    RW_ASSIGN_OR_RETURN(data, LoadData(f, &bayes_auc, &bayes_accuracy));
  }
  DataShape shape;
  if (files.has_value()) {
    shape = {files->input_shape, files->classes, files->target_width};
    RW_RETURN_IF_ERROR(BuildModel(f, shape).status());
    // The loss follows the targets: numbers take the mean squared error.
    RW_ASSIGN_OR_RETURN(compile, MakeCompileOptions(f, files->target_width > 0));
  }
  if (LearningRateScheduleName(f) != "none" && f.reduce_lr_patience >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reduce_lr_patience=", f.reduce_lr_patience,
                     " changes the learning rate, but --lr_schedule=", LearningRateScheduleName(f),
                     " sets it: use one of them"));
  }
  {
    // A schedule's default length is the whole run: every epoch's steps.
    const int64_t examples =
        files.has_value() ? std::max<int64_t>(files->train_examples, 0) : data.train.count();
    const int64_t steps_per_epoch =
        f.steps_per_epoch > 0 ? f.steps_per_epoch
                              : (examples + f.global_batch_size - 1) / f.global_batch_size;
    RW_ASSIGN_OR_RETURN(compile.optimizer.learning_rate_schedule,
                        MakeLearningRateSchedule(f, steps_per_epoch * f.epochs));
  }
  // Every check a user can trip is done; now join the cluster.
  StrategyOptions elastic_options = options;
  elastic_options.min_workers = static_cast<int>(f.min_workers);
  elastic_options.elastic_batch =
      f.elastic_batch == "per_replica" ? ElasticBatch::kPerReplica : ElasticBatch::kGlobal;
  elastic_options.regroup_discovery_s = f.regroup_discovery_s;
  elastic_options.regroup_timeout_s = f.regroup_timeout_s;
  RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
                      MultiWorkerMirroredStrategy::Create(cluster, elastic_options));
  // Everything after joining: an error ends every worker's calls with it (peers
  // name this cause, and nothing waits for an orderly close).
  auto train = [&]() -> absl::Status {
    bool chief = strategy->is_chief();
    {
      auto scope = strategy->scope();
      RW_ASSIGN_OR_RETURN(model, BuildModel(f, shape));
    }
    if (!f.model_config.empty()) {
      // The loss takes what the configured model outputs: probabilities after a
      // softmax, else logits.
      if (compile.loss.name == "sparse_categorical_crossentropy") {
        compile.loss.from_logits = model.output_activation() != "softmax";
      } else if (compile.loss.name == "binary_crossentropy") {
        compile.loss.from_logits = model.output_activation() != "sigmoid";
      }
      // Keras' image models often take [28, 28]: the same values as [28, 28, 1].
      const std::vector<Shape>& wanted = model.signature().input_shapes;
      if (!files.has_value() && wanted.size() == 1 && wanted[0] != data.train.example_shape() &&
          NumElements(wanted[0]) == NumElements(data.train.example_shape())) {
        data.train.features.Reshape(WithBatch(data.train.count(), wanted[0]));
        data.test.features.Reshape(WithBatch(data.test.count(), wanted[0]));
      }
    }
    RW_RETURN_IF_ERROR(model.Compile(compile));
    RW_RETURN_IF_ERROR(
        model.Build(files.has_value() ? files->input_shape : data.train.example_shape()));
    if (!f.initial_weights.empty()) RW_RETURN_IF_ERROR(model.LoadWeights(f.initial_weights));
    // Not after hours of training: whether the model exports at all.
    if (!f.export_onnx.empty()) RW_RETURN_IF_ERROR(OnnxModelBytes(model).status());
    if (!f.export_tfjs.empty() || !f.save_model.empty()) {
      RW_RETURN_IF_ERROR(TfjsModel(model).status());
    }
    int workers = strategy->num_replicas_in_sync();
    if (chief && f.verbose > 0) {
      std::printf("%s", model.Summary().c_str());
      std::printf(
          "Training on %d worker%s (%s), global batch %lld (%lld per worker), %s, %s, "
          "%d intra-op thread%s per worker\n",
          workers, workers == 1 ? "" : "s",
          strategy->communicator()->world_size() > 1 ? "MultiWorkerMirroredStrategy" : "local",
          static_cast<long long>(f.global_batch_size),
          static_cast<long long>(f.global_batch_size / std::max(1, workers)), f.optimizer.c_str(),
          f.precision.c_str(), model.kernel_context()->threads(),
          model.kernel_context()->threads() == 1 ? "" : "s");
      std::fflush(stdout);
    }
    // With steps_per_epoch an epoch is a stretch of one endless stream (Keras with a
    // repeated dataset); without it, one pass.
    Dataset train =
        Dataset::FromExamples(std::move(data.train)).Repeat(f.steps_per_epoch > 0 ? -1 : 1);
    Dataset test = Dataset::FromExamples(std::move(data.test));
    FitOptions fit;
    fit.epochs = f.epochs;
    fit.batch_size = f.global_batch_size;
    fit.verbose = static_cast<int>(f.verbose);
    fit.shard_policy = policy;
    fit.steps_per_epoch = f.steps_per_epoch;
    fit.replica_check_steps = f.replica_check_steps;
    if (f.validate_each_epoch) fit.validation_data = &test;
    if (files.has_value()) {
      fit.binding = files->binding;
      fit.ignore_errors = f.ignore_errors;
      if (files->validation.has_value()) fit.validation_pipeline = &*files->validation;
    }
    // Backup first: it restores before ModelCheckpoint's first save.
    std::unique_ptr<BackupAndRestore> backup;
    if (!f.backup_dir.empty()) {
      backup =
          std::make_unique<BackupAndRestore>(BackupOptions{.backup_dir = f.backup_dir,
                                                           .save_freq_steps = f.backup_freq_steps,
                                                           .resume_policy = resume_policy});
      fit.callbacks.push_back(backup.get());
    }
    std::unique_ptr<ModelCheckpoint> checkpoints;
    if (!f.checkpoint_dir.empty()) {
      checkpoints = std::make_unique<ModelCheckpoint>(
          ModelCheckpointOptions{.directory = f.checkpoint_dir,
                                 .save_freq_steps = f.checkpoint_freq_steps,
                                 .keep = static_cast<int>(f.keep_checkpoints)});
      fit.callbacks.push_back(checkpoints.get());
    }
    std::unique_ptr<TensorBoard> tensorboard;
    if (!f.tensorboard_dir.empty()) {
      tensorboard = std::make_unique<TensorBoard>(tensorboard_options);
      fit.callbacks.push_back(tensorboard.get());
    }
    // Early stopping, the rate on a plateau, the CSV log (fit runs the checkpoints'
    // epoch ends after these, so checkpoints keep their decisions).
    const std::vector<std::unique_ptr<Callback>> controls =
        MakeControlCallbacks(f, f.validate_each_epoch);
    for (const auto& c : controls) fit.callbacks.push_back(c.get());
    const auto train_start = std::chrono::steady_clock::now();
    RW_ASSIGN_OR_RETURN(
        History history,
        files.has_value()
            ? model.Fit(f.steps_per_epoch > 0 ? files->train.Repeat() : files->train, fit)
            : model.Fit(train, fit));
    const double train_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
    // Elastic training may have lost workers, and the chief with them.
    chief = strategy->is_chief();
    workers = strategy->num_replicas_in_sync();
    if (!f.save_weights.empty()) RW_RETURN_IF_ERROR(model.SaveWeights(f.save_weights));
    if (!f.export_onnx.empty()) RW_RETURN_IF_ERROR(ExportOnnx(model, f.export_onnx));
    if (!f.export_tfjs.empty()) RW_RETURN_IF_ERROR(ExportTfjs(model, f.export_tfjs));
    if (!f.save_model.empty()) RW_RETURN_IF_ERROR(SaveModel(model, f.save_model));
    EvaluateResult result;
    if (!files.has_value()) {
      RW_ASSIGN_OR_RETURN(result, model.EvaluateAfterFit(test, f.global_batch_size));
    } else if (files->test.has_value()) {
      RW_ASSIGN_OR_RETURN(
          result, model.EvaluateAfterFit(*files->test, files->binding, f.global_batch_size));
    }
    const bool tested = !files.has_value() || files->test.has_value();
    // A worker may have left in the evaluation too.
    chief = strategy->is_chief();
    workers = strategy->num_replicas_in_sync();
    // The examples this run trained on, counted by the input pipeline over every
    // worker (a resumed run skips what its backup had done).
    int64_t trained = 0;
    for (int64_t examples : history.examples_per_epoch()) trained += examples;
    const double samples_per_s = static_cast<double>(trained) / train_s;
    const int64_t last_epoch_examples =
        history.examples_per_epoch().empty() ? 0 : history.examples_per_epoch().back();
    const uint64_t fingerprint = WeightsFingerprint(model);
    // Accuracy for class ids; for number targets (regression) the mean absolute error.
    const bool classifies = result.metrics.count("accuracy") > 0 || !tested;
    const std::string test_metric =
        !tested ? std::string("no test data")
        : classifies
            ? absl::StrFormat("test accuracy %.4f, test loss %.4f", result.metrics["accuracy"],
                              result.loss)
            : absl::StrFormat("test mae %.4f, test loss %.4f", result.metrics["mae"], result.loss);
    RW_LOG(INFO) << absl::StrFormat("%s, %.0f train samples/s, weights fingerprint %016x",
                                    test_metric, samples_per_s, fingerprint);
    if (chief && !tested) {
      std::printf("Trained: %.0f samples/s over %d worker%s (no --test_data to evaluate)\n",
                  samples_per_s, workers, workers == 1 ? "" : "s");
    } else if (chief) {
      std::printf("Test %s: %.4f - test loss: %.4f - %.0f samples/s over %d worker%s\n",
                  classifies ? "accuracy" : "mae",
                  classifies ? result.metrics["accuracy"] : result.metrics["mae"], result.loss,
                  samples_per_s, workers, workers == 1 ? "" : "s");
      if (result.metrics.count("auc")) {
        std::printf("Test AUC: %.4f (best achievable on this data: %.4f)\n", result.metrics["auc"],
                    bayes_auc);
      }
      if (bayes_accuracy >= 0) {
        std::printf("Best achievable test accuracy on this data: %.4f\n", bayes_accuracy);
      }
      std::fflush(stdout);
    }
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (chief && !f.metrics_json.empty()) {
      nlohmann::json j = {
          {"test_accuracy", result.metrics["accuracy"]},
          {"test_loss", result.loss},
          {"train_samples_per_second", samples_per_s},
          {"wall_seconds", wall_s},
          {"num_workers", workers},
          {"model", f.model},
          {"epochs", f.epochs},
          {"global_batch_size", f.global_batch_size},
          {"precision", f.precision},
          {"allreduce_compression", f.allreduce_compression},
          {"final_train_loss", history["loss"].empty() ? 0.0 : history["loss"].back()},
          {"final_train_accuracy", history["accuracy"].empty() ? 0.0 : history["accuracy"].back()},
          {"resumed_from_step",
           backup != nullptr && backup->restored() ? backup->restored_at().step : -1},
          {"train_examples_per_epoch", last_epoch_examples},
          {"train_examples", trained},
          {"weights_fingerprint", absl::StrFormat("%016x", fingerprint)},
          {"generations", strategy->generation()},
          {"steps_lost", model.steps_rerun()}};
      if (!tested) {
        j.erase("test_accuracy");
        j.erase("test_loss");
      } else if (!classifies) {
        j.erase("test_accuracy");
        j["test_mae"] = result.metrics["mae"];
      }
      if (result.metrics.count("auc")) j["test_auc"] = result.metrics["auc"];
      if (bayes_auc >= 0) j["bayes_auc"] = bayes_auc;
      if (bayes_accuracy >= 0) j["bayes_accuracy"] = bayes_accuracy;
      // Where the steps' time went: each epoch of this run weighted by its
      // examples (a resumed epoch counts for what it ran); omitted when none ran.
      const std::vector<int64_t>& weights = history.examples_per_epoch();
      if (!history[kBreakdownCompute].empty() &&
          history[kBreakdownCompute].size() == weights.size()) {
        nlohmann::json& breakdown = j["step_breakdown"];
        j["step_breakdown_per_epoch"] = nlohmann::json::array();
        for (size_t e = 0; e < weights.size(); ++e)
          j["step_breakdown_per_epoch"].push_back(nlohmann::json::object());
        double total_weight = 0;
        for (int64_t w : weights) total_weight += static_cast<double>(w);
        for (const auto& [key, name] : {std::pair{"compute", kBreakdownCompute},
                                        {"hidden_communication", kBreakdownHidden},
                                        {"exposed_communication", kBreakdownExposed},
                                        {"data_wait", kBreakdownDataWait}}) {
          const std::vector<double> values = history[name];
          double mean = 0;
          for (size_t e = 0; e < values.size(); ++e) {
            mean += values[e] * static_cast<double>(weights[e]) / std::max(total_weight, 1.0);
            j["step_breakdown_per_epoch"][e][key] = values[e];
          }
          breakdown[key] = mean;
        }
      }
      // What the streamed input did: records skipped over the run, and the last
      // epoch's stages (this worker's; keras/input_report.h).
      if (!history[kInputSkipped].empty()) {
        nlohmann::json& input = j["input_pipeline"];
        double skipped = 0;
        for (double v : history[kInputSkipped]) skipped += v;
        input["skipped"] = static_cast<int64_t>(skipped);
        const std::string prefix = "input_pipeline/";
        for (const auto& [name, values] : history.history()) {
          if (name.rfind(prefix, 0) != 0 || name == kInputSkipped || values.empty()) continue;
          const size_t slash = name.rfind('/');
          input["stages"][name.substr(prefix.size(), slash - prefix.size())]
               [name.substr(slash + 1)] = values.back();
        }
      }
      // The last epoch's in which one worker held the others up.
      if (!history[kSlowestWorkerRank].empty()) {
        j["slowest_worker"] = {{"rank", static_cast<int>(history[kSlowestWorkerRank].back())},
                               {"others_waited_ms_per_step", history[kSlowestWorkerLeadMs].back()}};
      }
      RW_RETURN_IF_ERROR(WriteFileAtomically(f.metrics_json, j.dump(2) + "\n", "--metrics_json"));
    }
    return strategy->Shutdown();
  };
  absl::Status status = train();
  // A stop every worker agreed on (SIGTERM: every one saved and stops) needs no
  // abort: a peer may still be finishing the last collective.
  if (!status.ok() && ExitCodeFor(status) != kPreempted) strategy->Abort(status);
  return status;
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
  RegisterTrainFlags(&flags, &f);
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("train");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (!args->empty()) {
    ExitWithStatus(
        absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", (*args)[0], "\"")));
  }
  absl::Status status = options.runtime.Finish();
  if (!status.ok()) ExitWithStatus(status);
  if (f.inter_op_threads < 0) {
    ExitWithStatus(absl::InvalidArgumentError(
        absl::StrCat("--inter_op_threads=", f.inter_op_threads,
                     ": expected 0 (choose from the cores), 1, or 2 and more")));
  }
  options.inter_op_threads = static_cast<int>(f.inter_op_threads);
  options.communication.bytes_per_pack = f.bytes_per_pack;
  absl::StatusOr<GradientCompression> compression =
      ParseGradientCompression(f.allreduce_compression);
  if (!compression.ok()) {
    ExitWithStatus(
        absl::InvalidArgumentError(absl::StrCat("--allreduce_compression=", f.allreduce_compression,
                                                ": ", compression.status().message())));
  }
  options.communication.compression = *compression;
  options.cluster = source;
  absl::StatusOr<ClusterConfig> cluster = ResolveThisTask(options);
  if (!cluster.ok()) ExitWithStatus(cluster.status());
  SetLogTask(cluster->task().ToString());
  if (!cluster->in_ring()) ExitWithStatus(RunEvaluator(f));  // Task type evaluator.
  ExitWithStatus(Run(f, *cluster, options));
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
