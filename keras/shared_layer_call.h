// A later call of a shared layer (keras/functional.h's Share): a layer of the
// model without weights of its own that computes like its owner (the layer's
// first call in the model) with the owner's weights.
//
//   SharedLayer tower = Share(Dense(16));
//   Apply(tower, left);   // The owner: "dense", with dense/kernel and dense/bias.
//   Apply(tower, right);  // A SharedLayerCall named "dense@1".
//
// The call runs a copy of the owner made from its Keras config once the owner is built (the state
// of a forward pass, such as a recurrent layer's gates, is per call). Before each forward pass the
// copy takes the owner's current values; its backward pass writes gradients of its own, which the
// model adds into the owner's (AddGradientsToOwner) after the owner's backward pass, before they
// are reduced: the owner's gradient is the sum over the calls, as in Keras. The owner comes first
// in the model's order, so its backward pass runs after every call's.
#ifndef RINGWORK_KERAS_SHARED_LAYER_CALL_H_
#define RINGWORK_KERAS_SHARED_LAYER_CALL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "keras/layer.h"
#include "keras/layers.h"

namespace ringwork {

// A model output that is a later call of a Dense ending in a softmax or a
// sigmoid has it fused into its loss as the layer itself would (LogitsOutput).
class SharedLayerCall : public Layer, public LogitsOutput {
 public:
  // Call number `call` (1, 2, ...) of `owner`, which must outlive it and be
  // built before it (both are the same model's; the owner comes first). Build
  // fails for a layer that cannot be rebuilt from its Keras config.
  SharedLayerCall(Layer* owner, int call);

  const Layer& owner() const { return *owner_; }
  // Once built: the layer this call runs, holding the owner's current values
  // (exporters write it as a layer of its own, named NAME@k).
  const Layer& WithOwnerValues() const;
  // Adds this call's gradients of the last backward pass into the owner's
  // trainable variables' (a sparse one's rows too).
  void AddGradientsToOwner();

  std::string type() const override { return owner_->type(); }
  std::string config() const override;
  nlohmann::json keras_config() const override { return owner_->keras_config(); }
  std::string activation_name() const override { return owner_->activation_name(); }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override;
  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override;
  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) override;
  MaskUse mask_use() const override { return owner_->mask_use(); }
  bool makes_mask() const override { return owner_->makes_mask(); }
  void MakeMask(const Tensor& x, std::vector<uint8_t>* mask) const override {
    copy_->MakeMask(x, mask);
  }
  void set_input_mask(const uint8_t* mask) override { copy_->set_input_mask(mask); }
  std::string final_activation() const override;  // The copy's, once built.
  bool OutputLogits(bool logits) override;
  void set_replica(int64_t replica) override;
  void set_training_step(int64_t step) override;

 private:
  Layer* const owner_;           // Not owned.
  std::unique_ptr<Layer> copy_;  // This call's forward and backward passes (from Build).
  int64_t replica_ = 0;
  std::vector<std::vector<float>> grads_;  // The copy's gradient slots.
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SHARED_LAYER_CALL_H_
