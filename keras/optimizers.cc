#include "keras/optimizers.h"

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

class Sgd : public Optimizer {
 public:
  explicit Sgd(OptimizerSpec spec) : Optimizer(std::move(spec)) {}
  int slot_count() const override { return spec_.momentum != 0 ? 1 : 0; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    SgdUpdate({spec_.learning_rate, spec_.momentum, spec_.nesterov}, v->value.data(), v->grad,
              slots.empty() ? nullptr : slots[0].data(), v->size());
  }
};

class Adam : public Optimizer {
 public:
  Adam(OptimizerSpec spec, bool decoupled_decay)
      : Optimizer(std::move(spec)), decay_(decoupled_decay) {}
  int slot_count() const override { return 2; }
  void Update(Variable* v, std::vector<Tensor>& slots) override {
    AdamUpdate({spec_.learning_rate, spec_.beta_1, spec_.beta_2, spec_.epsilon,
                decay_ ? spec_.weight_decay : 0.f},
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

void Optimizer::Apply(const std::vector<Variable*>& variables) {
  ++iterations_;
  for (Variable* v : variables) Update(v, Slots(v));
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSpec& spec) {
  if (!(spec.learning_rate > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learning rate must be positive, got ", spec.learning_rate));
  }
  if (spec.name == "sgd") return std::unique_ptr<Optimizer>(new Sgd(spec));
  if (spec.name == "adam") return std::unique_ptr<Optimizer>(new Adam(spec, false));
  if (spec.name == "adamw") return std::unique_ptr<Optimizer>(new Adam(spec, true));
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", spec.name, "\"; expected sgd, adam or adamw"));
}

}  // namespace ringwork
