#include "keras/gradient_clipping.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// Products of two floats are exact in double, so the sum does not depend on
// whether the compiler fuses multiply and add.
double SumOfSquares(const Variable& v) {
  double sum = 0;
  for (int64_t i = 0; i < v.size(); ++i) sum += static_cast<double>(v.grad[i]) * v.grad[i];
  return sum;
}

void Scale(Variable* v, float factor) {
  for (int64_t i = 0; i < v->size(); ++i) v->grad[i] *= factor;
}

// c / max(norm, c), or nothing to do.
bool ClipFactor(double norm, float clip, float* factor) {
  if (!(norm > clip)) return false;  // Also a NaN norm: left for TerminateOnNaN to see.
  *factor = static_cast<float>(static_cast<double>(clip) / norm);
  return true;
}

}  // namespace

absl::Status GradientClipping::Validate() const {
  for (auto [name, value] : {std::pair<const char*, float>{"clipnorm", clipnorm},
                             {"global_clipnorm", global_clipnorm},
                             {"clipvalue", clipvalue}}) {
    if (!(std::isfinite(value) && value >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be >= 0 (0: no clipping), got ", value));
    }
  }
  if ((clipnorm > 0) + (global_clipnorm > 0) + (clipvalue > 0) > 1) {
    return absl::InvalidArgumentError(
        "clipnorm, global_clipnorm and clipvalue cannot be combined (Keras refuses clipnorm with "
        "global_clipnorm, and with clipvalue applies only the first): pick one");
  }
  return absl::OkStatus();
}

double GlobalGradientNorm(const std::vector<Variable*>& variables) {
  double sum = 0;
  for (const Variable* v : variables) sum += SumOfSquares(*v);
  return std::sqrt(sum);
}

void ClipGradients(const std::vector<Variable*>& variables, const GradientClipping& clipping) {
  float factor = 1;
  if (clipping.clipnorm > 0) {
    for (Variable* v : variables) {
      if (ClipFactor(std::sqrt(SumOfSquares(*v)), clipping.clipnorm, &factor)) Scale(v, factor);
    }
  }
  if (clipping.global_clipnorm > 0 &&
      ClipFactor(GlobalGradientNorm(variables), clipping.global_clipnorm, &factor)) {
    for (Variable* v : variables) Scale(v, factor);
  }
  if (clipping.clipvalue > 0) {
    const float c = clipping.clipvalue;
    for (Variable* v : variables) {
      for (int64_t i = 0; i < v->size(); ++i) v->grad[i] = std::clamp(v->grad[i], -c, c);
    }
  }
}

}  // namespace ringwork
