// Keras' masks over time steps, as the model carries them: a layer that makes one
// (Embedding with mask_zero, Masking) marks the padding steps of its output, the
// layers that pass it on keep it, and the recurrent layers and
// GlobalAveragePooling1D skip the masked steps.
//
//   SymbolicTensor ids = Input({20});
//   SymbolicTensor h = Apply(Embedding(1000, 32, {.mask_zero = true}), ids);
//   h = Apply(LSTM(64), h);      // id 0 is padding: its steps leave the state as it was
//   Model model(ids, Apply(Dense(2), h));
//
// The model plans the masks when it builds (SequenceMasks::Plan), which fails with
// the layers' names where a mask reaches a layer that does not support masking (as
// Keras 2 and TensorFlow.js do) or a model output (losses do not weight by masks).
#ifndef RINGWORK_KERAS_SEQUENCE_MASKS_H_
#define RINGWORK_KERAS_SEQUENCE_MASKS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "keras/layer.h"

namespace ringwork {

class SequenceMasks {
 public:
  // `inputs[l]`: the activations layer l reads (0: the model's input, i + 1: layer
  // i's output); `shapes`: every activation's shape; `outputs`: the model's outputs.
  absl::Status Plan(const std::vector<std::unique_ptr<Layer>>& layers,
                    const std::vector<std::vector<int>>& inputs, const std::vector<Shape>& shapes,
                    const std::vector<int>& outputs);
  // Whether an input of layer l carries a mask (after Plan).
  bool MaskedInput(size_t l) const { return l < masked_input_.size() && masked_input_[l]; }
  // Around layer l's Forward on `xs`: hands a reader its input's mask; after,
  // computes the mask layer l makes (or a merge's, the AND of its inputs').
  void BeforeForward(size_t l, Layer& layer);
  void AfterForward(size_t l, const Layer& layer, const std::vector<const Tensor*>& xs);

 private:
  std::vector<int> mask_of_;  // Per activation: its mask's buffer, or -1.
  // Per layer: the buffer it fills (-1: none), and for merges the buffers it ANDs.
  std::vector<int> fills_;
  std::vector<std::vector<int>> and_of_;
  std::vector<char> masked_input_;
  std::vector<int> reads_;  // Per layer that reads a mask: its input's buffer, or -1.
  std::vector<std::vector<uint8_t>> buffers_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SEQUENCE_MASKS_H_
