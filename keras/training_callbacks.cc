#include "keras/training_callbacks.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/logging.h"
#include "base/shortest_decimal.h"
#include "base/status_macros.h"
#include "keras/model.h"

namespace ringwork {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keras: accuracy and AUC improve upwards, everything else downwards.
// (ReduceLROnPlateau's auto mode in Keras looks for "acc" anywhere in the name;
// EarlyStopping's for names ending in acc, accuracy or auc: both are covered.)
bool Maximizes(MonitorMode mode, const std::string& monitor) {
  if (mode != MonitorMode::kAuto) return mode == MonitorMode::kMax;
  return monitor.find("acc") != std::string::npos || EndsWith(monitor, "auc");
}

absl::StatusOr<double> Monitored(const char* callback, const std::string& monitor,
                                 const Logs& logs) {
  const auto it = logs.find(monitor);
  if (it != logs.end()) return it->second;
  std::vector<std::string> present;
  for (const auto& [name, value] : logs) {
    if (!IsTimingLog(name)) present.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      callback, " monitors \"", monitor, "\", which is not in this epoch's logs (",
      absl::StrJoin(present, ", "), ")",
      absl::StartsWith(monitor, "val_") ? "; val_ values need validation data in fit" : ""));
}

absl::Status StateSize(const char* callback, const std::vector<double>& state, size_t want) {
  if (state.size() == want) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the backup's ", callback, " state has ", state.size(), " values, this build keeps ", want));
}

}  // namespace

// EarlyStopping --------------------------------------------------------------

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), maximize_(Maximizes(options_.mode, options_.monitor)) {
  options_.min_delta = std::fabs(options_.min_delta);
}

absl::Status EarlyStopping::OnTrainBegin(const TrainInfo&) {
  wait_ = stopped_epoch_ = best_epoch_ = 0;
  best_ = maximize_ ? -kInf : kInf;
  best_weights_.clear();
  return absl::OkStatus();
}

bool EarlyStopping::Improves(double value, double reference) const {
  return maximize_ ? value - options_.min_delta > reference
                   : value + options_.min_delta < reference;
}

absl::Status EarlyStopping::OnEpochEnd(int64_t epoch, const Logs& logs) {
  if (epoch < options_.start_from_epoch) return absl::OkStatus();
  RW_ASSIGN_OR_RETURN(double current, Monitored("EarlyStopping", options_.monitor, logs));
  const std::vector<Variable*> variables = model_->weights();
  auto keep_weights = [&] {
    best_weights_.clear();
    for (const Variable* v : variables)
      best_weights_.emplace_back(v->value.data(), v->value.data() + v->size());
  };
  if (options_.restore_best_weights && best_weights_.empty()) keep_weights();
  ++wait_;
  if (Improves(current, best_)) {
    best_ = current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) keep_weights();
    if (std::isnan(options_.baseline) || Improves(current, options_.baseline)) wait_ = 0;
    return absl::OkStatus();
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model_->set_stop_training(true);
    const bool chief = model_->strategy()->is_chief();
    if (options_.verbose && chief) {
      RW_LOG(INFO) << "Epoch " << epoch + 1 << ": early stopping (" << options_.monitor << " "
                   << ShortestDecimal(current) << ", best " << ShortestDecimal(best_)
                   << " at epoch " << best_epoch_ + 1 << ", patience " << options_.patience << ")";
    }
    if (options_.restore_best_weights && !best_weights_.empty()) {
      if (options_.verbose && chief) {
        RW_LOG(INFO) << "Restoring model weights from the end of the best epoch: "
                     << best_epoch_ + 1;
      }
      for (size_t i = 0; i < variables.size(); ++i) {
        std::copy(best_weights_[i].begin(), best_weights_[i].end(), variables[i]->value.data());
      }
    }
  }
  return absl::OkStatus();
}

std::vector<double> EarlyStopping::SaveState() const {
  std::vector<double> state = {static_cast<double>(wait_), static_cast<double>(stopped_epoch_),
                               static_cast<double>(best_epoch_), best_,
                               static_cast<double>(best_weights_.size())};
  for (const std::vector<float>& w : best_weights_) state.insert(state.end(), w.begin(), w.end());
  return state;
}

absl::Status EarlyStopping::RestoreState(const std::vector<double>& state) {
  if (state.size() < 5) return StateSize("EarlyStopping", state, 5);
  const std::vector<Variable*> variables = model_->weights();
  const size_t kept = static_cast<size_t>(state[4]);
  size_t want = 5;
  if (kept > 0) {
    if (kept != variables.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the backup's EarlyStopping best weights have ", kept,
                       " variables, this model ", variables.size()));
    }
    for (const Variable* v : variables) want += static_cast<size_t>(v->size());
  }
  RW_RETURN_IF_ERROR(StateSize("EarlyStopping", state, want));
  wait_ = static_cast<int64_t>(state[0]);
  stopped_epoch_ = static_cast<int64_t>(state[1]);
  best_epoch_ = static_cast<int64_t>(state[2]);
  best_ = state[3];
  best_weights_.clear();
  size_t at = 5;
  for (size_t i = 0; i < kept; ++i) {
    const size_t n = static_cast<size_t>(variables[i]->size());
    best_weights_.emplace_back(state.begin() + at, state.begin() + at + n);
    at += n;
  }
  return absl::OkStatus();
}

// ReduceLROnPlateau ----------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)), maximize_(Maximizes(options_.mode, options_.monitor)) {
  options_.min_delta = std::fabs(options_.min_delta);
}

absl::Status ReduceLROnPlateau::OnTrainBegin(const TrainInfo&) {
  if (!(options_.factor < 1.0 && options_.factor > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReduceLROnPlateau: factor must be in (0, 1), got ", ShortestDecimal(options_.factor)));
  }
  wait_ = cooldown_counter_ = 0;
  best_ = maximize_ ? -kInf : kInf;
  // A schedule cannot be reduced: say so now rather than at the first plateau.
  return model_->optimizer()->set_learning_rate(model_->optimizer()->learning_rate());
}

absl::Status ReduceLROnPlateau::OnEpochEnd(int64_t epoch, const Logs& logs) {
  RW_ASSIGN_OR_RETURN(double current, Monitored("ReduceLROnPlateau", options_.monitor, logs));
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  const bool better =
      maximize_ ? current > best_ + options_.min_delta : current < best_ - options_.min_delta;
  if (better) {
    best_ = current;
    wait_ = 0;
    return absl::OkStatus();
  }
  if (cooldown_counter_ > 0 || ++wait_ < options_.patience) return absl::OkStatus();
  Optimizer* optimizer = model_->optimizer();
  const float old_rate = optimizer->learning_rate();
  if (old_rate > static_cast<float>(options_.min_lr)) {
    const double new_rate =
        std::max(static_cast<double>(old_rate) * options_.factor, options_.min_lr);
    RW_RETURN_IF_ERROR(optimizer->set_learning_rate(static_cast<float>(new_rate)));
    if (options_.verbose && model_->strategy()->is_chief()) {
      RW_LOG(INFO) << "Epoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to "
                   << static_cast<float>(new_rate) << " (" << options_.monitor << " "
                   << ShortestDecimal(current) << ", best " << ShortestDecimal(best_) << ")";
    }
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
  return absl::OkStatus();
}

std::vector<double> ReduceLROnPlateau::SaveState() const {
  return {static_cast<double>(wait_), static_cast<double>(cooldown_counter_), best_};
}

absl::Status ReduceLROnPlateau::RestoreState(const std::vector<double>& state) {
  RW_RETURN_IF_ERROR(StateSize("ReduceLROnPlateau", state, 3));
  wait_ = static_cast<int64_t>(state[0]);
  cooldown_counter_ = static_cast<int64_t>(state[1]);
  best_ = state[2];
  return absl::OkStatus();
}

// LearningRateScheduler ------------------------------------------------------

absl::Status LearningRateScheduler::OnEpochBegin(int64_t epoch) {
  Optimizer* optimizer = model_->optimizer();
  const double rate = schedule_(epoch, optimizer->learning_rate());
  absl::Status set = optimizer->set_learning_rate(static_cast<float>(rate));
  if (!set.ok()) {
    return WithContext(set, absl::StrCat("LearningRateScheduler at epoch ", epoch + 1, ": "));
  }
  if (verbose_ && model_->strategy()->is_chief()) {
    RW_LOG(INFO) << "Epoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to "
                 << optimizer->learning_rate();
  }
  return absl::OkStatus();
}

// TerminateOnNaN -------------------------------------------------------------

absl::Status TerminateOnNaN::OnBatchEnd(int64_t step, const Logs& logs) {
  const auto loss = logs.find("loss");
  if (loss == logs.end() || std::isfinite(loss->second)) return absl::OkStatus();
  if (model_->strategy()->is_chief()) {
    RW_LOG(WARNING) << "Batch " << step << ": invalid loss " << loss->second
                    << ", terminating training";
  }
  model_->set_stop_training(true);
  return absl::OkStatus();
}

// CSVLogger ------------------------------------------------------------------

CSVLogger::~CSVLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

std::string CSVLogger::Failure(const char* doing) const {
  return absl::StrCat("CSVLogger: cannot ", doing, " ", options_.filename, ": ",
                      std::strerror(errno));
}

void CSVLogger::StopWriting(const char* doing) {
  // As TensorBoard's writer: a full disk must not end the training of every worker.
  RW_LOG(WARNING) << Failure(doing) << "; no more rows are written";
  std::fclose(file_);
  file_ = nullptr;
  stopped_ = true;
}

absl::Status CSVLogger::OnTrainBegin(const TrainInfo& info) {
  keys_.clear();
  stopped_ = false;
  header_written_ = false;
  absl::Status opened;
  if (options_.filename.empty()) {
    opened = absl::InvalidArgumentError("CSVLogger needs a filename");
  } else if (info.is_chief) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    if (options_.append) {
      opened = OpenForAppending();
    } else {
      file_ = std::fopen(options_.filename.c_str(), "w");
      if (file_ == nullptr) opened = absl::InvalidArgumentError(Failure("open"));
    }
  }
  // Every worker learns whether the chief could open it (so none trains on alone).
  return model_->strategy()->ShareChiefStatus(opened);
}

absl::Status CSVLogger::OpenForAppending(bool keys_from_header) {
  if (std::ifstream existing(options_.filename); existing.good()) {
    std::string header;
    // Keras: a non-empty file has its header.
    header_written_ = static_cast<bool>(std::getline(existing, header)) && !header.empty();
    if (header_written_ && keys_from_header) {
      std::vector<std::string> columns = absl::StrSplit(header, options_.separator);
      if (columns.size() > 1 && columns[0] == "epoch")
        keys_.assign(columns.begin() + 1, columns.end());
    }
  }
  file_ = std::fopen(options_.filename.c_str(), "a");
  if (file_ == nullptr) return absl::InvalidArgumentError(Failure("open"));
  return absl::OkStatus();
}

absl::Status CSVLogger::OnRegroup(const TrainInfo& info) {
  if (!info.is_chief || file_ != nullptr || stopped_ || options_.filename.empty())
    return absl::OkStatus();
  // The chief left: this worker writes the next rows after the ones it wrote, in
  // their columns (a failure only ends the rows, as a failed write does: no
  // collective here).
  absl::Status opened = OpenForAppending(/*keys_from_header=*/true);
  if (!opened.ok()) RW_LOG(WARNING) << opened.message() << "; no more rows are written";
  return absl::OkStatus();
}

absl::Status CSVLogger::OnEpochEnd(int64_t epoch, const Logs& logs) {
  if (file_ == nullptr) return absl::OkStatus();
  if (keys_.empty()) {
    for (const auto& [name, value] : logs) keys_.push_back(name);  // A std::map: in name order.
  }
  const std::string sep(1, options_.separator);
  std::string text;
  if (!header_written_) {
    text = absl::StrCat("epoch", sep, absl::StrJoin(keys_, sep), "\n");
    header_written_ = true;
  }
  std::vector<std::string> row = {absl::StrCat(epoch)};
  for (const std::string& key : keys_) {
    const auto it = logs.find(key);
    row.push_back(it == logs.end() ? "NA" : ShortestDecimal(it->second));
  }
  absl::StrAppend(&text, absl::StrJoin(row, sep), "\n");
  if (std::fputs(text.c_str(), file_) < 0 || std::fflush(file_) != 0) StopWriting("write to");
  return absl::OkStatus();
}

absl::Status CSVLogger::OnTrainEnd(const Logs&) {
  if (file_ == nullptr) return absl::OkStatus();
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) RW_LOG(WARNING) << Failure("close");
  return absl::OkStatus();
}

}  // namespace ringwork
