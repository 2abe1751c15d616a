#include "keras/learning_rate_schedule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/shortest_decimal.h"

namespace ringwork {
namespace {

absl::Status MustBeRate(const char* schedule, const char* name, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      schedule, ": ", name, " must be a finite rate >= 0, got ", ShortestDecimal(value)));
}

class Exponential : public LearningRateSchedule {
 public:
  explicit Exponential(const ExponentialDecayOptions& o) : o_(o) {}
  float Rate(int64_t step) const override {
    double p = static_cast<double>(step) / static_cast<double>(o_.decay_steps);
    if (o_.staircase) p = std::floor(p);
    return static_cast<float>(o_.initial_learning_rate * std::pow(o_.decay_rate, p));
  }
  std::string Describe() const override {
    return absl::StrCat(
        "ExponentialDecay(initial_learning_rate=", ShortestDecimal(o_.initial_learning_rate),
        ", decay_steps=", o_.decay_steps, ", decay_rate=", ShortestDecimal(o_.decay_rate),
        ", staircase=", o_.staircase ? "true" : "false", ")");
  }

 private:
  ExponentialDecayOptions o_;
};

class Piecewise : public LearningRateSchedule {
 public:
  Piecewise(std::vector<int64_t> boundaries, std::vector<double> values)
      : boundaries_(std::move(boundaries)), values_(std::move(values)) {}
  float Rate(int64_t step) const override {
    // The first boundary >= step names the piece.
    const size_t piece =
        std::lower_bound(boundaries_.begin(), boundaries_.end(), step) - boundaries_.begin();
    return static_cast<float>(values_[piece]);
  }
  std::string Describe() const override {
    std::vector<std::string> values;
    for (double v : values_) values.push_back(ShortestDecimal(v));
    return absl::StrCat("PiecewiseConstantDecay(boundaries=[", absl::StrJoin(boundaries_, ", "),
                        "], values=[", absl::StrJoin(values, ", "), "])");
  }

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

class Cosine : public LearningRateSchedule {
 public:
  explicit Cosine(const CosineDecayOptions& o) : o_(o) {}
  float Rate(int64_t step) const override {
    const bool warmup = o_.warmup_target >= 0;
    const double target = warmup ? o_.warmup_target : o_.initial_learning_rate;
    if (warmup && step < o_.warmup_steps) {
      const double done = static_cast<double>(step) / static_cast<double>(o_.warmup_steps);
      return static_cast<float>((o_.warmup_target - o_.initial_learning_rate) * done +
                                o_.initial_learning_rate);
    }
    const int64_t into = std::min(step - (warmup ? o_.warmup_steps : 0), o_.decay_steps);
    const double cosine =
        0.5 *
        (1.0 + std::cos(M_PI * static_cast<double>(into) / static_cast<double>(o_.decay_steps)));
    return static_cast<float>(target * ((1.0 - o_.alpha) * cosine + o_.alpha));
  }
  std::string Describe() const override {
    return absl::StrCat(
        "CosineDecay(initial_learning_rate=", ShortestDecimal(o_.initial_learning_rate),
        ", decay_steps=", o_.decay_steps, ", alpha=", ShortestDecimal(o_.alpha),
        o_.warmup_target >= 0 ? absl::StrCat(", warmup_target=", ShortestDecimal(o_.warmup_target),
                                             ", warmup_steps=", o_.warmup_steps)
                              : "",
        ")");
  }

 private:
  CosineDecayOptions o_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> ExponentialDecay(
    const ExponentialDecayOptions& options) {
  if (auto s =
          MustBeRate("ExponentialDecay", "initial_learning_rate", options.initial_learning_rate);
      !s.ok()) {
    return s;
  }
  if (options.decay_steps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExponentialDecay: decay_steps must be positive, got ", options.decay_steps));
  }
  if (!(std::isfinite(options.decay_rate) && options.decay_rate > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExponentialDecay: decay_rate must be positive, got ",
                     ShortestDecimal(options.decay_rate)));
  }
  return std::shared_ptr<const LearningRateSchedule>(std::make_shared<Exponential>(options));
}

absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> PiecewiseConstantDecay(
    std::vector<int64_t> boundaries, std::vector<double> values) {
  if (values.size() != boundaries.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat("PiecewiseConstantDecay: ", boundaries.size(),
                                                   " boundaries need ", boundaries.size() + 1,
                                                   " values, got ", values.size()));
  }
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("PiecewiseConstantDecay: boundaries must increase, but boundary ", i, " (",
                       boundaries[i], ") follows ", boundaries[i - 1]));
    }
  }
  for (double v : values) {
    if (auto s = MustBeRate("PiecewiseConstantDecay", "every value", v); !s.ok()) return s;
  }
  return std::shared_ptr<const LearningRateSchedule>(
      std::make_shared<Piecewise>(std::move(boundaries), std::move(values)));
}

absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> CosineDecay(
    const CosineDecayOptions& options) {
  if (auto s = MustBeRate("CosineDecay", "initial_learning_rate", options.initial_learning_rate);
      !s.ok()) {
    return s;
  }
  if (options.decay_steps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CosineDecay: decay_steps must be positive, got ", options.decay_steps));
  }
  if (!(options.alpha >= 0 && options.alpha <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CosineDecay: alpha must be in [0, 1], got ", ShortestDecimal(options.alpha)));
  }
  if (options.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CosineDecay: warmup_steps must be >= 0, got ", options.warmup_steps));
  }
  if (options.warmup_steps > 0 && options.warmup_target < 0) {
    return absl::InvalidArgumentError(
        "CosineDecay: warmup_steps needs a warmup_target (the rate the warmup ends at)");
  }
  if (options.warmup_target >= 0) {
    if (auto s = MustBeRate("CosineDecay", "warmup_target", options.warmup_target); !s.ok())
      return s;
  }
  return std::shared_ptr<const LearningRateSchedule>(std::make_shared<Cosine>(options));
}

}  // namespace ringwork
