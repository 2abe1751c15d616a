#include "keras/optimizers.h"

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
    SgdUpdate({rate_, spec_.momentum, spec_.nesterov}, v->value.data(), v->grad,
              slots.empty() ? nullptr : slots[0].data(), v->size());
  }
};

class Adam : public Optimizer {
 public:
  Adam(OptimizerSpec spec, bool decoupled_decay)
      : Optimizer(std::move(spec)), decay_(decoupled_decay) {}
  int slot_count() const override { return 2; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    AdamUpdate(
        {rate_, spec_.beta_1, spec_.beta_2, spec_.epsilon, decay_ ? spec_.weight_decay : 0.f},
        iterations_, v->value.data(), v->grad, slots[0].data(), slots[1].data(), v->size());
  }

 private:
  bool decay_;
};

}  // namespace

std::vector<Tensor>& Optimizer::Slots(const Variable* v) {
  std::vector<Tensor>& slots = slots_[v];
  if (static_cast<int>(slots.size()) != slot_count()) {
    slots.clear();
    for (int i = 0; i < slot_count(); ++i) slots.emplace_back(v->value.shape());
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
  if (spec.learning_rate_schedule == nullptr && !(spec.learning_rate > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate must be positive, got ", spec.learning_rate));
  }
  if (spec.name == "sgd") return std::unique_ptr<Optimizer>(new Sgd(spec));
  if (spec.name == "adam") return std::unique_ptr<Optimizer>(new Adam(spec, false));
  if (spec.name == "adamw") return std::unique_ptr<Optimizer>(new Adam(spec, true));
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", spec.name, "\"; expected sgd, adam or adamw"));
}

}  // namespace ringwork
