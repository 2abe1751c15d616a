#include "keras/callbacks.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "keras/model.h"

namespace ringwork {
namespace {

// Keras' progress bar: 4 decimals, or 4 significant digits for small values
// (a learning rate of 1e-5 is not "0.0000").
std::string LogValue(double value) {
  return std::fabs(value) > 1e-3 || value == 0 ? absl::StrFormat("%.4f", value)
                                               : absl::StrFormat("%.4e", value);
}

}  // namespace

absl::Status History::OnEpochEnd(int64_t, const Logs& logs) {
  for (const auto& [name, value] : logs) history_[name].push_back(value);
  return absl::OkStatus();
}

std::vector<double> History::operator[](const std::string& metric) const {
  auto it = history_.find(metric);
  return it == history_.end() ? std::vector<double>() : it->second;
}

ProgressBar::ProgressBar(std::FILE* out, double line_interval_s)
    : out_(out), terminal_(::isatty(::fileno(out)) != 0), line_interval_s_(line_interval_s) {}

absl::Status ProgressBar::OnTrainBegin(const TrainInfo& info) {
  info_ = info;
  return absl::OkStatus();
}

absl::Status ProgressBar::OnEpochBegin(int64_t epoch) {
  std::fprintf(out_, "Epoch %lld/%lld\n", static_cast<long long>(epoch + 1),
               static_cast<long long>(info_.epochs));
  std::fflush(out_);
  epoch_start_ = last_line_ = std::chrono::steady_clock::now();
  first_step_ = -1;
  return absl::OkStatus();
}

int64_t ProgressBar::EpochSteps() const {
  return model_ != nullptr && model_->fit_epoch_steps() > 0 ? model_->fit_epoch_steps()
                                                            : info_.steps_per_epoch;
}

std::string ProgressBar::Line(int64_t step, const Logs& logs, bool final) const {
  const int64_t total = EpochSteps();
  std::string text;
  if (total > 0) {
    const int width = static_cast<int>(std::to_string(total).size());
    const int bar = 30;
    const int done = static_cast<int>(bar * step / total);
    text = absl::StrFormat("%*lld/%lld [", width, static_cast<long long>(step),
                           static_cast<long long>(total));
    text += std::string(done, '=');
    if (done < bar) text += ">" + std::string(bar - done - 1, '.');
    text += "]";
  } else {
    // A streamed epoch's length is known when it ends (Keras: "Unknown").
    text = absl::StrFormat("%lld/Unknown", static_cast<long long>(step));
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
  // A resumed epoch starts in its middle: rates count the steps run here.
  const int64_t run = step - std::max<int64_t>(first_step_, 0);
  const double per_step = elapsed / std::max<int64_t>(run, 1);
  if (final || total <= 0) {
    absl::StrAppendFormat(&text, " - %.0fs %.0fms/step", elapsed, per_step * 1000);
  } else {
    absl::StrAppendFormat(&text, " - ETA: %.0fs", per_step * (total - step));
  }
  for (const auto& [name, value] : logs) {
    if (name.rfind("val_", 0) == 0 || IsTimingLog(name)) continue;
    absl::StrAppendFormat(&text, " - %s: %s", name, LogValue(value));
  }
  absl::StrAppendFormat(
      &text, " - %.0f samples/s",
      run *
          (model_ != nullptr && model_->fit_global_batch() > 0 ? model_->fit_global_batch()
                                                               : info_.global_batch_size) /
          std::max(elapsed, 1e-9));
  for (const auto& [name, value] : logs) {
    if (name.rfind("val_", 0) == 0)
      absl::StrAppendFormat(&text, " - %s: %s", name, LogValue(value));
  }
  // The step breakdown, at an epoch's end: "- step: 62% compute, 21% hidden comm, ...".
  auto figure = [&](const char* name) {
    auto it = logs.find(absl::StrCat("step_breakdown/", name));
    return it == logs.end() ? -1.0 : it->second;
  };
  if (figure("compute") >= 0) {
    absl::StrAppendFormat(
        &text, " - step: %.0f%% compute, %.0f%% hidden comm, %.0f%% exposed comm, %.0f%% data wait",
        100 * figure("compute"), 100 * figure("hidden_communication"),
        100 * figure("exposed_communication"), 100 * figure("data_wait"));
    auto rank = logs.find("slowest_worker/rank");
    auto lead = logs.find("slowest_worker/others_waited_ms");
    if (rank != logs.end() && lead != logs.end()) {
      absl::StrAppendFormat(&text, "; slowest worker:%d (others waited %.1f ms/step)",
                            static_cast<int>(rank->second), lead->second);
    }
  }
  return text;
}

absl::Status ProgressBar::OnBatchEnd(int64_t step, const Logs& logs) {
  if (first_step_ < 0) first_step_ = step - 1;
  if (step >= EpochSteps()) return absl::OkStatus();  // The epoch's end prints it.
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    std::fprintf(out_, "\r%s", Line(step, logs, false).c_str());
    std::fflush(out_);
  } else if (std::chrono::duration<double>(now - last_line_).count() >= line_interval_s_) {
    std::fprintf(out_, "%s\n", Line(step, logs, false).c_str());
    std::fflush(out_);
    last_line_ = now;
  }
  return absl::OkStatus();
}

absl::Status ProgressBar::OnEpochEnd(int64_t, const Logs& logs) {
  std::fprintf(out_, "%s%s\n", terminal_ ? "\r" : "", Line(EpochSteps(), logs, true).c_str());
  std::fflush(out_);
  return absl::OkStatus();
}

}  // namespace ringwork
