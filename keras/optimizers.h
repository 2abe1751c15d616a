// Optimizers, with Keras' names, arguments and update rules (kernels/optimizers.h).
// State (momentum, Adam's moments) is created on the first step, per variable.
//
//   std::unique_ptr<Optimizer> adam = MakeOptimizer({.name = "adam", .learning_rate = 1e-3});
#ifndef RINGWORK_KERAS_OPTIMIZERS_H_
#define RINGWORK_KERAS_OPTIMIZERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/optimizers.h"
#include "strategy/variable.h"

namespace ringwork {

struct OptimizerSpec {
  std::string name = "adam";  // "sgd", "adam" or "adamw"
  float learning_rate = 0.001f;
  float momentum = 0.0f;      // sgd
  bool nesterov = false;      // sgd
  float beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;  // adam, adamw
  float weight_decay = 0.004f;  // adamw (Keras' default)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  const OptimizerSpec& spec() const { return spec_; }
  int64_t iterations() const { return iterations_; }
  // One update of every variable from its gradient.
  void Apply(const std::vector<Variable*>& variables);
  // Optimizer state of `v` (slot 0, 1), created zeroed; for checkpoints.
  std::vector<Tensor>& Slots(const Variable* v);
  void set_iterations(int64_t n) { iterations_ = n; }

 protected:
  explicit Optimizer(OptimizerSpec spec) : spec_(std::move(spec)) {}
  virtual int slot_count() const = 0;
  virtual void Update(Variable* v, std::vector<Tensor>& slots) = 0;

  OptimizerSpec spec_;
  int64_t iterations_ = 0;
  std::unordered_map<const Variable*, std::vector<Tensor>> slots_;
};

absl::StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSpec& spec);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_OPTIMIZERS_H_
