// A trainable variable: its value, and where its gradient goes. Gradients live in
// one flat arena owned by the strategy's GradientReducer (gradient_reducer.h), so
// that many small gradients are all-reduced as a few large contiguous packs.
#ifndef RINGWORK_STRATEGY_VARIABLE_H_
#define RINGWORK_STRATEGY_VARIABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringwork {

struct Variable {
  std::string name;  // "dense_1/kernel"
  Tensor value;
  float* grad = nullptr;  // size() floats in the gradient arena. Not owned.
  // A table whose gradient touches only some rows each step (Embedding): the
  // reducer may send it as (row ids, rows) with an all-gather instead of the dense
  // table (TensorFlow's IndexedSlices). The layer zeroes `grad` but for the rows it
  // writes, and lists them (sorted, unique) in `touched_rows`.
  bool sparse_gradient = false;
  // Keras' kernel_regularizer (L1L2): l1 * sum |w| + l2 * sum w^2 joins the loss,
  // its gradient the reduced gradient (keras/model_step.cc).
  float l1 = 0, l2 = 0;
  std::vector<int64_t> touched_rows;

  int64_t size() const { return value.size(); }
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_VARIABLE_H_
