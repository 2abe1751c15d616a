#include "keras/layer.h"

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::Status MergeLayer::OneInput() const {
  return absl::InvalidArgumentError(
      absl::StrCat(name_, " (", type(),
                   ") merges several inputs: call it on a list of tensors in a functional Model"));
}

void Layer::CollectTrainable(std::vector<Variable*>& out) const {
  for (const auto& v : variables_) out.push_back(v.get());
  for (const Layer* sub : sublayers_) sub->CollectTrainable(out);
}

void Layer::CollectStatistics(std::vector<Variable*>& out) const {
  for (const auto& v : non_trainable_) out.push_back(v.get());
  for (const Layer* sub : sublayers_) sub->CollectStatistics(out);
}

std::vector<Variable*> Layer::variables() const {
  std::vector<Variable*> out;
  if (trainable_) CollectTrainable(out);
  return out;
}

std::vector<Variable*> Layer::frozen_variables() const {
  std::vector<Variable*> out;
  if (!trainable_) CollectTrainable(out);
  return out;
}

std::vector<Variable*> Layer::non_trainable_variables() const {
  std::vector<Variable*> out = frozen_variables();
  CollectStatistics(out);
  return out;
}

// Keras' order either way: the layer's own variables (kernel, bias, gamma, beta),
// then its statistics.
std::vector<Variable*> Layer::weights() const {
  std::vector<Variable*> out;
  CollectTrainable(out);
  CollectStatistics(out);
  return out;
}

int64_t Layer::trainable_param_count() const {
  int64_t n = 0;
  for (const Variable* v : variables()) n += v->size();
  return n;
}

int64_t Layer::param_count() const {
  int64_t n = 0;
  for (const Variable* v : weights()) n += v->size();
  return n;
}

namespace {

Variable* Add(std::vector<std::unique_ptr<Variable>>& to, const std::string& name, Shape shape) {
  auto variable = std::make_unique<Variable>();
  variable->name = name;
  variable->value = Tensor(std::move(shape));
  to.push_back(std::move(variable));
  return to.back().get();
}

}  // namespace

Variable* Layer::AddVariable(const std::string& suffix, Shape shape) {
  return Add(variables_, name_ + "/" + suffix, std::move(shape));
}

Variable* Layer::AddNonTrainableVariable(const std::string& suffix, Shape shape) {
  return Add(non_trainable_, name_ + "/" + suffix, std::move(shape));
}

}  // namespace ringwork
