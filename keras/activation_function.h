// An activation applied inside a layer (Dense, Conv2D, Activation): element-wise
// ones on oneDNN eltwise, softmax on oneDNN softmax over the last axis. Kernels are
// cached per element count. The layer keeps the input z of the activation for
// the backward pass.
#ifndef RINGWORK_KERAS_ACTIVATION_FUNCTION_H_
#define RINGWORK_KERAS_ACTIVATION_FUNCTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "keras/kernel_cache.h"
#include "kernels/activation.h"
#include "kernels/softmax.h"
#include "tensor/tensor.h"

namespace ringwork {

// The logistic sigmoid of every element, in place (for a sigmoid fused into a loss).
void SigmoidInPlace(Tensor* t);
// The softmax over the last axis, in place (for the metrics of a model whose last
// softmax was fused into its loss).
void SoftmaxInPlace(Tensor* t);

class ActivationFunction {
 public:
  // "relu", "tanh", "sigmoid", "gelu", "softmax", "linear" or "".
  static absl::StatusOr<ActivationFunction> Parse(const std::string& name);

  const std::string& name() const { return name_; }
  bool is_linear() const { return name_ == "linear"; }
  bool is_softmax() const { return name_ == "softmax"; }
  bool is_sigmoid() const { return name_ == "sigmoid"; }

  // y = f(z); z has shape [batch, ..., last].
  absl::Status Forward(KernelContext& k, const Tensor& z, Tensor* y);
  // dz = f'(z) dy (softmax uses y).
  absl::Status Backward(KernelContext& k, const Tensor& z, const Tensor& y, const Tensor& dy,
                        Tensor* dz);

 private:
  std::string name_ = "linear";
  Activation elementwise_ = Activation::kLinear;
  // By element count. Shared: copies of an ActivationFunction share its kernels.
  std::shared_ptr<PerBatch<ActivationKernel>> elementwise_kernels_ =
      std::make_shared<PerBatch<ActivationKernel>>();
  std::shared_ptr<PerBatch<SoftmaxKernel>> softmax_kernels_ =
      std::make_shared<PerBatch<SoftmaxKernel>>();
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_ACTIVATION_FUNCTION_H_
