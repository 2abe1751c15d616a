#include "keras/layer.h"

namespace ringwork {

std::vector<Variable*> Layer::variables() const {
  std::vector<Variable*> out;
  for (const auto& v : variables_) out.push_back(v.get());
  return out;
}

int64_t Layer::param_count() const {
  int64_t n = 0;
  for (const auto& v : variables_) n += v->size();
  return n;
}

Variable* Layer::AddVariable(const std::string& suffix, Shape shape) {
  auto variable = std::make_unique<Variable>();
  variable->name = name_ + "/" + suffix;
  variable->value = Tensor(std::move(shape));
  variables_.push_back(std::move(variable));
  return variables_.back().get();
}

}  // namespace ringwork
