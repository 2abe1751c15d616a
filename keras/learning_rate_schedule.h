// Learning-rate schedules, as Keras' tf.keras.optimizers.schedules: the rate of an
// optimizer update as a function of the updates done before it (the optimizer's
// `iterations`, from 0), so a run restored from a checkpoint continues the schedule
// exactly where it stopped.
//
//   RW_ASSIGN_OR_RETURN(auto schedule, CosineDecay({.initial_learning_rate = 0,
//                                                  .decay_steps = 2000,
//                                                  .warmup_target = 0.01,
//                                                  .warmup_steps = 200}));
//   compile.optimizer.learning_rate_schedule = schedule;
//   schedule->Rate(100);  // 0.005: half-way through the linear warmup
//
// Rates are computed in double and rounded to float once, by the same code on every
// replica, so every replica applies the same bits.
#ifndef RINGWORK_KERAS_LEARNING_RATE_SCHEDULE_H_
#define RINGWORK_KERAS_LEARNING_RATE_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The rate of the update that follows `step` earlier updates.
  virtual float Rate(int64_t step) const = 0;
  // Its class and arguments, exactly ("CosineDecay(initial_learning_rate=0, ...)"):
  // the workers compare it before training.
  virtual std::string Describe() const = 0;
};

// initial_learning_rate * decay_rate ^ (step / decay_steps); with `staircase`
// the exponent is rounded down (the rate drops every decay_steps updates).
struct ExponentialDecayOptions {
  double initial_learning_rate = 0.001;
  int64_t decay_steps = 1000;
  double decay_rate = 0.96;
  bool staircase = false;
};
absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> ExponentialDecay(
    const ExponentialDecayOptions& options);

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
// boundaries[i], values.back() after the last boundary. Boundaries increase;
// values has one more element.
absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> PiecewiseConstantDecay(
    std::vector<int64_t> boundaries, std::vector<double> values);

// A linear warmup from initial_learning_rate to warmup_target over warmup_steps
// (none when warmup_steps is 0), then a cosine decay from the warmup target (or
// the initial rate, without a warmup) to alpha times it over decay_steps, and that
// rate from then on (Keras 2.13's CosineDecay).
struct CosineDecayOptions {
  double initial_learning_rate = 0.001;
  int64_t decay_steps = 1000;
  double alpha = 0.0;
  double warmup_target = -1;  // < 0: no warmup target (decay from the initial rate).
  int64_t warmup_steps = 0;
};
absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> CosineDecay(
    const CosineDecayOptions& options);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_LEARNING_RATE_SCHEDULE_H_
