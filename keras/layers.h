// The layers of Ringwork's Keras-like API, with Keras' arguments and defaults.
//
//   Sequential model;
//   model.Add(Conv2D(16, 3, {.padding = "same", .activation = "relu"}));
//   model.Add(MaxPool2D(2));
//   model.Add(Flatten());
//   model.Add(Dropout(0.2));
//   model.Add(Dense(10));                       // logits
//
// Layers also: GlobalAveragePooling1D/2D, GlobalMaxPooling1D/2D, AveragePooling2D,
// Conv1D, MaxPooling1D, AveragePooling1D, Reshape, ActivationLayer,
// LayerNormalization, BatchNormalization.
//
// Each layer's options struct: designated initializers name its fields in the
// order declared below ({.padding = "same", .activation = "relu"}); a field left
// out keeps its default.
#ifndef RINGWORK_KERAS_LAYERS_H_
#define RINGWORK_KERAS_LAYERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "keras/initializers.h"
#include "keras/layer.h"

namespace ringwork {

struct DenseOptions {
  std::string activation;  // "" = linear
  bool use_bias = true;
  // false (Keras' Dense): an input of rank > 1 ([..., n]) is transformed on its
  // last axis alone ([..., units], a kernel [n, units]); true: it is flattened
  // first ([units], a kernel [product of its dims, units]), as a Flatten before it.
  bool flatten_input = false;
  Initializer kernel_initializer;  // Default glorot_uniform.
  Initializer bias_initializer;    // Default zeros.
  Regularizer kernel_regularizer, bias_regularizer;
};
std::unique_ptr<Layer> Dense(int64_t units, DenseOptions options = {});

// A size along each spatial axis: Conv2D(16, 3) (3 x 3) or Conv2D(16, {3, 1}).
struct HeightWidth {
  HeightWidth(int64_t both) : height(both), width(both) {}  // NOLINT: 3 means 3 x 3.
  HeightWidth(int64_t height, int64_t width) : height(height), width(width) {}
  bool operator==(const HeightWidth& o) const { return height == o.height && width == o.width; }
  int64_t height, width;
};

struct Conv2DOptions {
  HeightWidth strides = 1;
  // Keras' dilation_rate: the kernel's taps this far apart (1: next to each other).
  HeightWidth dilation_rate = 1;
  std::string padding = "valid";  // or "same"
  std::string activation;
  bool use_bias = true;
  Initializer kernel_initializer;  // Default glorot_uniform.
  Initializer bias_initializer;    // Default zeros.
  Regularizer kernel_regularizer, bias_regularizer;
};
std::unique_ptr<Layer> Conv2D(int64_t filters, HeightWidth kernel_size, Conv2DOptions options = {});
// Keras' Conv1D over [steps, channels] (a [kernel_size, channels, filters] kernel);
// the options as Conv2D's, along the one axis (strides and dilation_rate one number).
std::unique_ptr<Layer> Conv1D(int64_t filters, int64_t kernel_size, Conv2DOptions options = {});

struct PoolOptions {
  int64_t strides = 0;  // 0: the pool size, as Keras.
  std::string padding = "valid";
};
std::unique_ptr<Layer> MaxPool2D(int64_t pool_size = 2, PoolOptions options = {});
std::unique_ptr<Layer> AveragePooling2D(int64_t pool_size = 2, PoolOptions options = {});
// Over [steps, channels].
std::unique_ptr<Layer> MaxPooling1D(int64_t pool_size = 2, PoolOptions options = {});
std::unique_ptr<Layer> AveragePooling1D(int64_t pool_size = 2, PoolOptions options = {});

// Keras' GlobalAveragePooling2D: [height, width, channels] -> [channels], the mean
// over every position.
std::unique_ptr<Layer> GlobalAveragePooling2D();
// The same over [steps, channels]; and the largest value instead of the mean.
std::unique_ptr<Layer> GlobalAveragePooling1D();
std::unique_ptr<Layer> GlobalMaxPooling1D();
std::unique_ptr<Layer> GlobalMaxPooling2D();

// Keras' LSTM and GRU over [steps, features]: [units] (the last state), or
// [steps, units] with return_sequences. Weights as Keras': kernel [features,
// gates x units], recurrent_kernel [units, gates x units], bias [gates x units]
// (GRU with reset_after: [2, 3 x units], input then recurrent); gates i, f, c, o
// (LSTM) and z, r, h (GRU). Initial states are zeros.
struct RecurrentOptions {
  bool return_sequences = false;
  std::string activation = "tanh";               // The only one supported yet,
  std::string recurrent_activation = "sigmoid";  // and this.
  bool unit_forget_bias = true;                  // LSTM: the forget gate's bias starts at 1.
  bool reset_after = true;                       // GRU: r applies after U (PyTorch's GRU).
  // Runs over the steps last to first; with return_sequences, the outputs are in
  // that order too (Keras').
  bool go_backwards = false;
  // With return_sequences and a mask: 0 at the masked steps, where Keras' and TF.js'
  // default repeats the previous output.
  bool zero_output_for_mask = false;
  // In training: the fraction of input features (dropout) and of the state's units
  // entering the recurrent kernel (recurrent_dropout) dropped, one mask per
  // sequence, as Keras' (inverted: kept values scaled by 1 / (1 - rate)).
  float dropout = 0, recurrent_dropout = 0;
};
// Keras' Bidirectional: `layer` (SimpleRNN, LSTM or GRU) runs over the steps first
// to last, a copy of it (its own weights) last to first, and their outputs merge:
// "concat" (Keras' default), "sum", "ave" or "mul". With return_sequences, the
// copy's outputs are put back in step order. Weights: the forward layer's, then
// the backward one's, named NAME/forward_LAYER/... and NAME/backward_LAYER/...
std::unique_ptr<Layer> Bidirectional(std::unique_ptr<Layer> layer,
                                     std::string merge_mode = "concat");
// Keras' TimeDistributed: `layer` applied to each step of [steps, ...] examples,
// the same weights for every step (TimeDistributed(Conv2D(...)) over [frames,
// height, width, channels]). Its variables are named as the wrapper's, as TF.js'.
std::unique_ptr<Layer> TimeDistributed(std::unique_ptr<Layer> layer);
// SimpleRNN: h = tanh(x kernel + bias + h_prev recurrent_kernel), one gate.
std::unique_ptr<Layer> SimpleRNN(int64_t units, RecurrentOptions options = {});
std::unique_ptr<Layer> LSTM(int64_t units, RecurrentOptions options = {});
std::unique_ptr<Layer> GRU(int64_t units, RecurrentOptions options = {});

// Keras' MultiHeadAttention as self-attention (Keras: mha(x, x)) over [steps,
// features]: softmax(Q K^T / sqrt(key_dim)) V per head, then the output
// projection back to `features`. Weights as Keras': query/key/value kernels
// [features, heads, dim] and biases [heads, dim], attention_output kernel
// [heads, value_dim, features] and bias [features]. No mask or dropout yet.
struct AttentionOptions {
  int64_t value_dim = 0;  // 0: key_dim.
};
std::unique_ptr<Layer> MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                                          AttentionOptions options = {});
// x + a learned embedding of each position ([sequence_length, features], Glorot
// uniform): keras_hub's PositionEmbedding, added to its input as
// TokenAndPositionEmbedding does.
std::unique_ptr<Layer> PositionEmbedding(int64_t sequence_length);

std::unique_ptr<Layer> Flatten();
// Columns [begin, end) of the last axis (Keras: Lambda(lambda x: x[..., begin:end])),
// e.g. to send an input's id columns to an Embedding and the rest to a Dense.
std::unique_ptr<Layer> SliceLastAxis(int64_t begin, int64_t end);
// Keras' Reshape: the same values in `target_shape` (no batch dimension); one
// dimension may be -1, inferred from the others.
std::unique_ptr<Layer> Reshape(Shape target_shape);

// Keras' LayerNormalization over the last axis: each vector normalized to zero
// mean and unit variance, then scaled by `gamma` (scale) and shifted by `beta`
// (center), both trained.
struct LayerNormalizationOptions {
  float epsilon = 1e-3f;
  bool center = true;
  bool scale = true;
  int64_t axis = -1;  // Keras' index (the batch is 0); only the last axis.
};
std::unique_ptr<Layer> LayerNormalization(LayerNormalizationOptions options = {});

// Keras' BatchNormalization over the last axis (channels): in training each
// channel is normalized with the replica's batch mean and variance, in inference
// with moving averages of them. The moving statistics are non-trainable weights,
// updated after every step from the sums of every replica's batch (the global
// batch's mean and variance), so they stay identical on every replica.
struct BatchNormalizationOptions {
  float momentum = 0.99f;  // moving = moving * momentum + batch * (1 - momentum)
  float epsilon = 1e-3f;
  bool center = true;
  bool scale = true;
  int64_t axis = -1;  // Keras' index (the batch is 0); only the last axis.
};
std::unique_ptr<Layer> BatchNormalization(BatchNormalizationOptions options = {});
// TensorFlow's SyncBatchNormalization: in training, statistics over the global
// batch (a SUM all-reduce of every replica's sums in forward, and of the gradient
// sums in backward), so N workers with global batch B train as one worker with
// batch B. Models with it reduce gradients after the backward pass.
std::unique_ptr<Layer> SyncBatchNormalization(BatchNormalizationOptions options = {});
// `seed` makes the masks reproducible; each worker mixes in its rank.
std::unique_ptr<Layer> Dropout(float rate, uint64_t seed = 0);
// Keras' RandomFlip for [height, width, channels] images: in training each example
// is flipped left-right ("horizontal"), upside down ("vertical") or either
// ("horizontal_and_vertical", Keras' default), each with probability 1/2; in
// inference it passes the input unchanged. The draws are a function of (seed,
// worker, step, example), as Dropout's masks, so a resumed run repeats them.
std::unique_ptr<Layer> RandomFlip(const std::string& mode = "horizontal_and_vertical",
                                  uint64_t seed = 0);
std::unique_ptr<Layer> ActivationLayer(const std::string& activation);
// Keras' Masking for [steps, features] inputs: a step whose features all equal
// `mask_value` is padding; its features become 0 and the output carries a mask
// over the steps (keras/sequence_masks.h).
std::unique_ptr<Layer> Masking(float mask_value = 0.f);

// Keras' Embedding: ids in [0, input_dim) (held as floats in the input tensor) ->
// rows of a trained [input_dim, output_dim] table; output shape = input shape +
// [output_dim]. Its gradient touches only the rows of the batch's ids and travels
// as (ids, rows) when that is smaller than the table (GradientReducer).
struct EmbeddingOptions {
  float uniform_limit = 0.05f;         // Keras' "uniform" initializer: U(-0.05, 0.05).
  Initializer embeddings_initializer;  // Unset: that uniform.
  // Id 0 is padding: the output carries a mask over the input's steps (its first
  // axis) that recurrent layers and GlobalAveragePooling1D read (keras/sequence_masks.h).
  bool mask_zero = false;
};
std::unique_ptr<Layer> Embedding(int64_t input_dim, int64_t output_dim,
                                 EmbeddingOptions options = {});

// Merge layers of the functional API (keras/functional.h): element-wise sum and
// product of inputs of one shape; concatenation along the last axis.
std::unique_ptr<Layer> Add();
std::unique_ptr<Layer> Multiply();
std::unique_ptr<Layer> Concatenate();

// Layers whose last operation is a softmax can hand their logits to a fused
// softmax cross-entropy loss instead (Model::Build does this).
// A layer that may end in a softmax or a sigmoid, which a loss can take in (from
// the logits: stabler, and Keras' math for a sigmoid with binary_crossentropy).
class LogitsOutput {
 public:
  virtual ~LogitsOutput() = default;
  // "softmax", "sigmoid", or "" (no such final activation).
  virtual std::string final_activation() const = 0;
  // True if this layer ends in a softmax or a sigmoid; then, after the call,
  // Forward outputs that activation's input (the logits) while `logits` is true.
  virtual bool OutputLogits(bool logits) = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_LAYERS_H_
