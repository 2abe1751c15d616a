#include "keras/optimizers.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

class Sgd : public Optimizer {
 public:
  explicit Sgd(OptimizerSpec spec) : Optimizer(std::move(spec)) {}
  int slot_count() const override { return spec_.momentum != 0 ? 1 : 0; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    SgdUpdate({rate_, spec_.momentum, spec_.nesterov, *spec_.weight_decay}, v->value.data(),
              v->grad, slots.empty() ? nullptr : slots[0].data(), v->size());
  }
};

class Adam : public Optimizer {
 public:
  // AdamW is Adam with a weight decay by default, as in Keras 3.
  explicit Adam(OptimizerSpec spec) : Optimizer(std::move(spec)) {}
  int slot_count() const override { return 2; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    AdamUpdate({rate_, spec_.beta_1, spec_.beta_2, spec_.epsilon, *spec_.weight_decay}, iterations_,
               v->value.data(), v->grad, slots[0].data(), slots[1].data(), v->size());
  }
};

class Rmsprop : public Optimizer {
 public:
  explicit Rmsprop(OptimizerSpec spec) : Optimizer(std::move(spec)) {}
  int slot_count() const override { return spec_.momentum != 0 ? 2 : 1; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    RmspropUpdate({rate_, spec_.rho, spec_.momentum, spec_.epsilon, *spec_.weight_decay},
                  v->value.data(), v->grad, slots[0].data(),
                  slots.size() > 1 ? slots[1].data() : nullptr, v->size());
  }
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(OptimizerSpec spec) : Optimizer(std::move(spec)) {}
  int slot_count() const override { return 1; }
  float slot_initial_value(int) const override { return spec_.initial_accumulator_value; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    AdagradUpdate({rate_, spec_.epsilon, *spec_.weight_decay}, v->value.data(), v->grad,
                  slots[0].data(), v->size());
  }
};

}  // namespace

OptimizerSpec WithKerasDefaults(OptimizerSpec spec) {
  if (!spec.learning_rate.has_value()) spec.learning_rate = spec.name == "sgd" ? 0.01f : 0.001f;
  if (!spec.weight_decay.has_value()) spec.weight_decay = spec.name == "adamw" ? 0.004f : 0.f;
  return spec;
}

std::vector<Tensor>& Optimizer::Slots(const Variable* v) {
  std::vector<Tensor>& slots = slots_[v];
  if (static_cast<int>(slots.size()) != slot_count()) {
    slots.clear();
    for (int i = 0; i < slot_count(); ++i) {
      slots.emplace_back(v->value.shape());
      const float start = slot_initial_value(i);
      if (start != 0.f) std::fill(slots.back().data(), slots.back().data() + v->size(), start);
    }
  }
  return slots;
}

float Optimizer::learning_rate() const {
  return spec_.learning_rate_schedule != nullptr
             ? spec_.learning_rate_schedule->Rate(schedule_step_.value_or(iterations_))
             : constant_rate_;
}

absl::Status Optimizer::set_learning_rate(float rate) {
  if (spec_.learning_rate_schedule != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the learning rate follows ", spec_.learning_rate_schedule->Describe(),
        " and cannot be set (as in Keras: use a constant learning rate with this callback)"));
  }
  if (!(std::isfinite(rate) && rate > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("learning rate must be positive, got ", rate));
  }
  constant_rate_ = rate;
  return absl::OkStatus();
}

void Optimizer::Apply(const std::vector<Variable*>& variables) {
  if (spec_.clipping.active()) ClipGradients(variables, spec_.clipping);
  rate_ = learning_rate() * rate_scale_;
  ++iterations_;
  for (Variable* v : variables) Update(v, Slots(v));
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSpec& spec) {
  RW_RETURN_IF_ERROR(spec.clipping.Validate());
  const OptimizerSpec full = WithKerasDefaults(spec);
  if (full.learning_rate_schedule == nullptr && !(*full.learning_rate > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate must be positive, got ", *full.learning_rate));
  }
  if (!(std::isfinite(*full.weight_decay) && *full.weight_decay >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight_decay must be 0 or more, got ", *full.weight_decay));
  }
  if (!(full.rho >= 0 && full.rho < 1) || !(full.epsilon >= 0) ||
      !(full.initial_accumulator_value >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rho must be in [0, 1), epsilon and initial_accumulator_value 0 or more; got ",
                     full.rho, ", ", full.epsilon, " and ", full.initial_accumulator_value));
  }
  if (full.name == "sgd") return std::unique_ptr<Optimizer>(new Sgd(full));
  if (full.name == "adam" || full.name == "adamw") {
    return std::unique_ptr<Optimizer>(new Adam(full));
  }
  if (full.name == "rmsprop") return std::unique_ptr<Optimizer>(new Rmsprop(full));
  if (full.name == "adagrad") return std::unique_ptr<Optimizer>(new Adagrad(full));
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer \"", spec.name, "\"; expected sgd, adam, adamw, rmsprop or adagrad"));
}

}  // namespace ringwork
