// Ready-made models, as keras.applications: built with the functional API
// (functional.h), inside the strategy's scope like any model.
//
//   auto scope = strategy->scope();
//   Model model = SmallResNet({28, 28, 1}, 10);
#ifndef RINGWORK_KERAS_APPLICATIONS_H_
#define RINGWORK_KERAS_APPLICATIONS_H_

#include "keras/model.h"

namespace ringwork {

// A residual network for small images (He et al.'s CIFAR ResNets, shortened): a
// 3x3 convolution stem with 16 filters, three stages of two residual blocks with
// 16, 32 and 64 filters (the 2nd and 3rd halve the resolution, with a 1x1
// projection on the shortcut), batch normalization after every convolution
// (momentum 0.9, PyTorch's default: Keras' 0.99 lags thousands of steps behind,
// and on Fashion-MNIST a 200-step run evaluated at chance with it, 0.83 with 0.9),
// global average pooling and a Dense layer of `classes` logits.
struct SmallResNetOptions {
  bool sync_batch_norm = false;  // SyncBatchNormalization (statistics over the global batch).
  // RandomFlip("horizontal") on the input: in training, each image mirrored
  // left-right with probability 1/2 (for images whose class a mirror keeps).
  bool random_flip = false;
};
Model SmallResNet(const Shape& input, int64_t classes, SmallResNetOptions options = {});

// Wide & Deep (Cheng et al. 2016) for inputs of `id_columns` ids in [0, num_ids)
// followed by `numeric_columns` numbers: the deep part embeds the ids (8 numbers
// each), joins the numbers and runs Dense 64 -> 32 -> 1 (ReLU); the wide part is a
// linear model of a 1-wide embedding of each id and the numbers; their logits are
// added and a sigmoid gives the click probability (binary_crossentropy, "auc").
Model WideAndDeep(int64_t num_ids, int64_t id_columns, int64_t numeric_columns);

// train's --model=mlp: Flatten, Dense 256 and 128 (ReLU), Dense `outputs` (logits).
Model MlpClassifier(int64_t outputs);
// train's --model=cnn: two 3x3 convolutions (16 and 32 filters, same padding, ReLU)
// each followed by a 2x2 max pool, then Dense 128 (ReLU) and Dense `outputs`.
Model SmallCnn(int64_t outputs);

// A Transformer encoder block (Vaswani et al., post-norm as Keras' examples) over
// [steps, features]: x + MultiHeadAttention(heads, features / heads)(x), then
// LayerNormalization; that + Dense(features)(Dense(ff_dim, ReLU)(that)), then
// LayerNormalization.
SymbolicTensor TransformerEncoder(const SymbolicTensor& x, int64_t features, int64_t heads,
                                  int64_t ff_dim);

// train's sequence models over [steps] token ids in [0, vocabulary): an Embedding
// of 32 numbers per token, then
//   kLstm: LSTM(64);  kGru: GRU(64);
//   kTransformer: PositionEmbedding, two TransformerEncoder blocks (2 heads, ff
//     64) and the mean over the steps (GlobalAveragePooling1D);
//   kBagOfEmbeddings: the mean of the embeddings (GlobalAveragePooling1D) and
//     Dense 64 (ReLU): blind to the tokens' order, a baseline;
// and Dense `classes` (logits).
enum class SequenceModel { kLstm, kGru, kTransformer, kBagOfEmbeddings };
Model SequenceClassifier(SequenceModel kind, int64_t vocabulary, int64_t steps, int64_t classes);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_APPLICATIONS_H_
