// For tests: the backward pass of a whole model against central differences of
// its loss.
//
//   CheckGradientsByFiniteDifferences(model, batch);   // every 3rd element of each variable
//   CheckGradientsByFiniteDifferences(model, batch, 1, {"conv2d/bias"});  // a bias before a
//                                                      // BatchNormalization: 0 by design
//
// The model must be compiled with a learning rate so small that TrainStep leaves
// the weights as they are (sgd, 1e-30).
//
// The loss is a float32, so a difference quotient carries rounding noise of about
// 8 x 2^-23 x |loss| / (2h). Each element must agree within 3% of its value, 1% of
// its variable's largest gradient, or that noise; a variable whose gradients are
// all below 10x the noise fails the check (it could not catch a wrong gradient:
// scale the test's inputs, not the tolerance), unless `zero_gradient` names it: then
// its backward and its differences must both be within the noise of 0.
#ifndef RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_
#define RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_

#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "keras/sequential.h"

namespace ringwork {

// Options under which TrainStep computes gradients and leaves the weights as they
// are: sparse categorical cross-entropy from logits, sgd at 1e-30, no metrics.
inline CompileOptions FrozenSgd() {
  CompileOptions o;
  o.loss = {"sparse_categorical_crossentropy", true};
  o.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  o.metrics = {};
  o.intra_op_threads = 1;
  return o;
}

// Adds amplitude x sin(1.7 i) to the i-th element of every trainable variable:
// weights far enough from their initial values that no gradient is tiny.
inline void PerturbWeights(Model& model, float amplitude) {
  for (Variable* v : model.trainable_variables()) {
    for (int64_t i = 0; i < v->size(); ++i) v->value[i] += amplitude * std::sin(1.7f * i);
  }
}

inline void CheckGradientsByFiniteDifferences(Model& model, const Batch& batch, int64_t stride = 3,
                                              const std::set<std::string>& zero_gradient = {}) {
  REQUIRE(model.TrainStep(batch).ok());
  const float h = 2e-3f;
  // Every gradient before any difference: each TrainStep below overwrites them.
  std::vector<std::vector<float>> gradients;
  for (Variable* v : model.trainable_variables())
    gradients.emplace_back(v->grad, v->grad + v->size());
  size_t index = 0;
  for (Variable* v : model.trainable_variables()) {
    const std::vector<float>& grad = gradients[index++];
    std::vector<double> numeric, noise;
    std::vector<int64_t> at;
    for (int64_t i = 0; i < v->size(); i += stride) {
      const float saved = v->value[i];
      v->value[i] = saved + h;
      const float up = *model.TrainStep(batch);
      v->value[i] = saved - h;
      const float down = *model.TrainStep(batch);
      v->value[i] = saved;
      at.push_back(i);
      numeric.push_back((static_cast<double>(up) - down) / (2 * h));
      noise.push_back(8 * FLT_EPSILON * std::max(std::fabs(up), std::fabs(down)) / (2 * h));
    }
    double scale = 0, floor = 0;
    for (size_t k = 0; k < at.size(); ++k) {
      scale = std::max(scale, std::fabs(numeric[k]));
      floor = std::max(floor, noise[k]);
    }
    INFO(v->name << ": largest gradient " << scale << ", noise of the differences " << floor);
    if (zero_gradient.count(v->name)) {
      CHECK(scale <= floor);
      for (size_t k = 0; k < at.size(); ++k) {
        CHECK(std::fabs(grad[static_cast<size_t>(at[k])]) <= floor);
      }
      continue;
    }
    CHECK(scale > 10 * floor);  // Else the check could not catch a wrong gradient.
    for (size_t k = 0; k < at.size(); ++k) {
      const double allowed = std::max({0.03 * std::fabs(numeric[k]), 0.01 * scale, noise[k]});
      INFO(v->name << "[" << at[k] << "]: backward " << grad[static_cast<size_t>(at[k])]
                   << ", finite differences " << numeric[k] << ", allowed " << allowed);
      CHECK(std::fabs(grad[static_cast<size_t>(at[k])] - numeric[k]) <= allowed);
    }
  }
}

}  // namespace ringwork

#endif  // RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_
