// Optimizers, with Keras' names, arguments and update rules (kernels/optimizers.h).
// State (momentum, Adam's moments) is created on the first step, per variable.
// The learning rate is a constant (which callbacks such as ReduceLROnPlateau may
// change between steps) or a schedule of the optimizer's iterations; gradients may
// be clipped first (gradient_clipping.h).
//
//   std::unique_ptr<Optimizer> adam = MakeOptimizer({.name = "adam", .learning_rate = 1e-3,
//                                                    .clipping = {.global_clipnorm = 1}});
#ifndef RINGWORK_KERAS_OPTIMIZERS_H_
#define RINGWORK_KERAS_OPTIMIZERS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "keras/gradient_clipping.h"
#include "keras/learning_rate_schedule.h"
#include "kernels/optimizers.h"
#include "strategy/variable.h"

namespace ringwork {

struct OptimizerSpec {
  std::string name = "adam";  // "sgd", "adam", "adamw", "rmsprop" or "adagrad"
  // Unset: Keras' default for the optimizer, 0.01 for sgd and 0.001 for the others.
  std::optional<float> learning_rate;
  float momentum = 0.0f;                                  // sgd, rmsprop
  bool nesterov = false;                                  // sgd
  float beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;  // adam, adamw (epsilon: rmsprop, adagrad)
  float rho = 0.9f;                                       // rmsprop
  float initial_accumulator_value = 0.1f;                 // adagrad
  // Keras 3's decoupled weight decay, for every optimizer: p -= lr * weight_decay * p
  // before the update, on every trainable variable. Unset: 0.004 for adamw (Keras'
  // default), none for the others.
  std::optional<float> weight_decay;
  // Keras' learning_rate=schedule: replaces learning_rate when set.
  std::shared_ptr<const LearningRateSchedule> learning_rate_schedule;
  GradientClipping clipping;  // Of the averaged gradients, before the update.
};

// `spec` with Keras' defaults for its optimizer in the fields left unset.
OptimizerSpec WithKerasDefaults(OptimizerSpec spec);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  const OptimizerSpec& spec() const { return spec_; }
  int64_t iterations() const { return iterations_; }
  // The rate of the next update: the schedule's at iterations(), or the constant.
  float learning_rate() const;
  // Changes the constant rate (ReduceLROnPlateau, LearningRateScheduler); refused
  // when a schedule sets the rate, or for a rate that is not positive and finite.
  absl::Status set_learning_rate(float rate);
  // Elastic training with a per-replica batch (the linear scaling rule): every
  // update uses learning_rate() x scale (replicas now / replicas configured);
  // learning_rate() itself, what callbacks see and change, is the unscaled rate.
  void set_rate_scale(float scale) { rate_scale_ = scale; }
  float rate_scale() const { return rate_scale_; }
  // The step a learning-rate schedule is read at: iterations(), unless set (with
  // a per-replica batch, the steps of the full ring that the data trained on so
  // far makes, so that a schedule ends with the data, not early).
  void set_schedule_step(std::optional<int64_t> step) { schedule_step_ = step; }
  // One update of every variable from its gradient (clipped first, if asked).
  void Apply(const std::vector<Variable*>& variables);
  // Optimizer state of `v` (slot 0, 1), created zeroed; for checkpoints.
  std::vector<Tensor>& Slots(const Variable* v);
  void set_iterations(int64_t n) { iterations_ = n; }

 protected:
  explicit Optimizer(OptimizerSpec spec)
      : spec_(WithKerasDefaults(std::move(spec))), constant_rate_(*spec_.learning_rate) {}
  virtual int slot_count() const = 0;
  // What slot `i` holds before the first update (Adagrad's accumulator: 0.1).
  virtual float slot_initial_value(int i) const { return 0.f; }
  virtual void Update(Variable* v, std::vector<Tensor>& slots) = 0;

  OptimizerSpec spec_;
  float constant_rate_;  // Without a schedule.
  float rate_ = 0;       // Of the update being applied.
  float rate_scale_ = 1;
  std::optional<int64_t> schedule_step_;
  int64_t iterations_ = 0;
  std::unordered_map<const Variable*, std::vector<Tensor>> slots_;
};

absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSpec& spec);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_OPTIMIZERS_H_
