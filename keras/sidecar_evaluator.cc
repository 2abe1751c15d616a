#include "keras/sidecar_evaluator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/deadline.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_directory.h"
#include "keras/training_state.h"

namespace ringwork {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A checkpoint rewritten under the same name (a rerun of the same steps) is a new
// file: another inode, another modification time.
std::string Identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return path;
  return absl::StrCat(path, " ", st.st_ino, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

// The content of `dir`/latest ("" when it cannot be read).
std::string ReadLatest(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::Status SidecarEvaluator::Run() {
  if (options_.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "the sidecar evaluator needs a checkpoint directory (--checkpoint_dir)");
  }
  RW_LOG(INFO) << "evaluator: watching " << options_.checkpoint_dir << " for checkpoints";
  std::string last;
  Deadline deadline = Deadline::AfterSeconds(options_.timeout_s);
  // A `latest` that named a file which was gone: the trainer (keep=1) writes the
  // new `latest` and then removes the old file, so a read can fall between. Read
  // again; it is corrupt only if the same `latest` stays that way for the grace.
  std::string suspect;  // The content of `latest` when it failed.
  Deadline suspect_until = Deadline::AfterSeconds(0);
  while (true) {
    absl::StatusOr<std::string> latest = LatestCheckpoint(options_.checkpoint_dir);
    if (absl::IsDataLoss(latest.status())) {
      const std::string now = ReadLatest(options_.checkpoint_dir);
      if (now != suspect) {
        suspect = now;
        suspect_until = Deadline::AfterSeconds(options_.vanished_grace_s);
      }
      if (!suspect_until.Expired()) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
        continue;
      }
    } else {
      suspect.clear();
    }
    if (!latest.ok() && !absl::IsNotFound(latest.status())) return latest.status();
    if (latest.ok() && Identity(*latest) != last) {
      last = Identity(*latest);
      absl::Status evaluated = Evaluate(*latest);
      if (!evaluated.ok()) {
        // Rotated away by the trainer while we read it: a newer one is there.
        if (Exists(*latest)) return evaluated;
        RW_LOG(INFO) << "evaluator: " << *latest << " was replaced while being read; skipped";
        continue;
      }
      deadline = Deadline::AfterSeconds(options_.timeout_s);
      const CheckpointEvaluation& e = evaluations_.back();
      if (e.final) return absl::OkStatus();
      if (options_.max_evaluations > 0 &&
          static_cast<int64_t>(evaluations_.size()) >= options_.max_evaluations) {
        return absl::OkStatus();
      }
      continue;
    }
    if (deadline.Expired()) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "evaluator: no %scheckpoint in %s for %g s (%s); the training job may have failed",
          last.empty() ? "" : "new ", options_.checkpoint_dir, options_.timeout_s,
          options_.timeout_flag));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(
        std::min(options_.poll_interval_s, std::max(0.001, deadline.RemainingSeconds()))));
  }
}

absl::Status SidecarEvaluator::Evaluate(const std::string& path) {
  RW_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, LoadWeights(*model_, path));
  RW_ASSIGN_OR_RETURN(EvaluateResult result, model_->Evaluate(*data_, options_.batch_size));
  CheckpointEvaluation e{path, loaded.position.step, loaded.position.epoch, loaded.final, result};
  std::string metrics;
  for (const auto& [name, value] : result.metrics)
    absl::StrAppendFormat(&metrics, " - %s: %.4f", name, value);
  RW_LOG(INFO) << absl::StrFormat("evaluator: step %d%s: loss: %.4f%s", e.step,
                                  e.final ? " (final)" : "", result.loss, metrics);
  RW_RETURN_IF_ERROR(AppendMetrics(e));
  if (absl::Status written = WriteSummaries(e, loaded.position.step_in_epoch); !written.ok()) {
    // Curves are not worth the evaluations: warn once, write no more.
    RW_LOG(WARNING) << "evaluator: TensorBoard: " << written.message()
                    << "; no more summaries are written";
    options_.summary_dir.clear();
  }
  evaluations_.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status SidecarEvaluator::WriteSummaries(const CheckpointEvaluation& e,
                                              int64_t step_in_epoch) {
  if (options_.summary_dir.empty()) return absl::OkStatus();
  if (summaries_ == nullptr) {
    RW_ASSIGN_OR_RETURN(summaries_, EventFileWriter::Create(options_.summary_dir));
  }
  Logs values = e.result.metrics;
  values["loss"] = e.result.loss;
  const bool epoch_end = step_in_epoch == 0 && e.epoch > 0;
  for (const auto& [name, value] : values) {
    RW_RETURN_IF_ERROR(summaries_->WriteScalar(absl::StrCat("evaluation_", name, "_vs_iterations"),
                                               e.step, static_cast<float>(value)));
    if (epoch_end) {
      RW_RETURN_IF_ERROR(
          summaries_->WriteScalar("epoch_" + name, e.epoch - 1, static_cast<float>(value)));
    }
  }
  return absl::OkStatus();
}

absl::Status SidecarEvaluator::AppendMetrics(const CheckpointEvaluation& e) const {
  if (options_.metrics_path.empty()) return absl::OkStatus();
  nlohmann::json j = {{"checkpoint", e.path},  {"step", e.step},
                      {"epoch", e.epoch},      {"final", e.final},
                      {"loss", e.result.loss}, {"examples", e.result.examples}};
  for (const auto& [name, value] : e.result.metrics) j[name] = value;
  const std::string line = j.dump() + "\n";
  std::FILE* f = std::fopen(options_.metrics_path.c_str(), "a");
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "evaluator: cannot append to ", options_.metrics_path, ": ", std::strerror(errno)));
  }
  const bool written = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluator: cannot write ", options_.metrics_path));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
