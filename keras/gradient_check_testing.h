// For tests: the backward pass of a whole model against central differences of
// its loss.
//
//   CheckGradientsByFiniteDifferences(model, batch);   // every 3rd element of each variable
//
// The model must be compiled with a learning rate so small that TrainStep leaves
// the weights as they are (sgd, 1e-30).
#ifndef RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_
#define RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_

#include <catch2/catch.hpp>
#include <vector>

#include "keras/sequential.h"

namespace ringwork {

inline void CheckGradientsByFiniteDifferences(Model& model, const Batch& batch,
                                              int64_t stride = 3) {
  REQUIRE(model.TrainStep(batch).ok());
  for (Variable* v : model.variables()) {
    const std::vector<float> grad(v->grad, v->grad + v->size());
    for (int64_t i = 0; i < v->size(); i += stride) {
      const float saved = v->value[i], h = 2e-3f;
      v->value[i] = saved + h;
      const float up = *model.TrainStep(batch);
      v->value[i] = saved - h;
      const float down = *model.TrainStep(batch);
      v->value[i] = saved;
      const float numeric = (up - down) / (2 * h);
      INFO(v->name << "[" << i << "]: backward " << grad[i] << ", finite differences " << numeric);
      CHECK(grad[i] == Approx(numeric).margin(2e-3).epsilon(0.03));
    }
  }
}

}  // namespace ringwork

#endif  // RINGWORK_KERAS_GRADIENT_CHECK_TESTING_H_
