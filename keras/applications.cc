#include "keras/applications.h"

#include "keras/sequential.h"

namespace ringwork {
namespace {

SymbolicTensor ConvBn(const SymbolicTensor& x, int64_t filters, int64_t kernel, int64_t strides,
                      bool sync) {
  return Apply(
      sync ? SyncBatchNormalization({.momentum = 0.9f}) : BatchNormalization({.momentum = 0.9f}),
      Apply(Conv2D(filters, kernel, {.strides = strides, .padding = "same", .use_bias = false}),
            x));
}

// conv-bn-relu, conv-bn, plus the shortcut (projected when the shape changes), relu.
SymbolicTensor ResidualBlock(const SymbolicTensor& x, int64_t filters, int64_t strides,
                             bool project, bool sync) {
  SymbolicTensor h = Apply(ActivationLayer("relu"), ConvBn(x, filters, 3, strides, sync));
  h = ConvBn(h, filters, 3, 1, sync);
  const SymbolicTensor shortcut = project ? ConvBn(x, filters, 1, strides, sync) : x;
  return Apply(ActivationLayer("relu"), Apply(Add(), {h, shortcut}));
}

}  // namespace

Model MlpClassifier(int64_t outputs) {
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(256, {.activation = "relu"}));
  model.Add(Dense(128, {.activation = "relu"}));
  model.Add(Dense(outputs));
  return Model(std::move(model));  // A Sequential adds nothing to the Model it is.
}

SymbolicTensor TransformerEncoder(const SymbolicTensor& x, int64_t features, int64_t heads,
                                  int64_t ff_dim) {
  SymbolicTensor attended = Apply(MultiHeadAttention(heads, features / heads), x);
  SymbolicTensor h = Apply(LayerNormalization(), Apply(Add(), {x, attended}));
  SymbolicTensor ff = Apply(Dense(features), Apply(Dense(ff_dim, {.activation = "relu"}), h));
  return Apply(LayerNormalization(), Apply(Add(), {h, ff}));
}

Model SequenceClassifier(SequenceModel kind, int64_t vocabulary, int64_t steps, int64_t classes) {
  if (kind == SequenceModel::kTransformer) {
    SymbolicTensor ids = Input({steps});
    SymbolicTensor h = Apply(PositionEmbedding(steps), Apply(Embedding(vocabulary, 32), ids));
    for (int block = 0; block < 2; ++block) h = TransformerEncoder(h, 32, 2, 64);
    h = Apply(GlobalAveragePooling1D(), h);
    return Model(ids, Apply(Dense(classes), h));
  }
  Sequential model;
  model.Add(Embedding(vocabulary, 32));
  switch (kind) {
    case SequenceModel::kLstm:
      model.Add(LSTM(64));
      break;
    case SequenceModel::kGru:
      model.Add(GRU(64));
      break;
    case SequenceModel::kTransformer:  // Built above.
      break;
    case SequenceModel::kBagOfEmbeddings:
      model.Add(GlobalAveragePooling1D());
      model.Add(Dense(64, {.activation = "relu"}));
      break;
  }
  model.Add(Dense(classes));
  return Model(std::move(model));
}

Model SmallCnn(int64_t outputs) {
  Sequential model;
  model.Add(Conv2D(16, 3, {.padding = "same", .activation = "relu"}));
  model.Add(MaxPool2D(2));
  model.Add(Conv2D(32, 3, {.padding = "same", .activation = "relu"}));
  model.Add(MaxPool2D(2));
  model.Add(Flatten());
  model.Add(Dense(128, {.activation = "relu"}));
  model.Add(Dense(outputs));
  return Model(std::move(model));
}

Model SmallResNet(const Shape& input, int64_t classes, SmallResNetOptions options) {
  const bool sync_batch_norm = options.sync_batch_norm;
  const SymbolicTensor x = Input(input);
  const SymbolicTensor image = options.random_flip ? Apply(RandomFlip("horizontal"), x) : x;
  SymbolicTensor h = Apply(ActivationLayer("relu"), ConvBn(image, 16, 3, 1, sync_batch_norm));
  const int64_t filters[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    for (int block = 0; block < 2; ++block) {
      const bool downsample = stage > 0 && block == 0;
      h = ResidualBlock(h, filters[stage], downsample ? 2 : 1, downsample, sync_batch_norm);
    }
  }
  h = Apply(GlobalAveragePooling2D(), h);
  return Model(x, Apply(Dense(classes), h));
}

Model WideAndDeep(int64_t num_ids, int64_t id_columns, int64_t numeric_columns) {
  const SymbolicTensor x = Input({id_columns + numeric_columns});
  const SymbolicTensor ids = Apply(SliceLastAxis(0, id_columns), x);
  const SymbolicTensor numbers = Apply(SliceLastAxis(id_columns, id_columns + numeric_columns), x);
  SymbolicTensor deep = Apply(Flatten(), Apply(Embedding(num_ids, 8), ids));
  deep = Apply(Concatenate(), {deep, numbers});
  deep = Apply(Dense(64, {.activation = "relu"}), deep);
  deep = Apply(Dense(32, {.activation = "relu"}), deep);
  deep = Apply(Dense(1), deep);
  SymbolicTensor wide = Apply(Flatten(), Apply(Embedding(num_ids, 1), ids));
  wide = Apply(Dense(1), Apply(Concatenate(), {wide, numbers}));
  return Model(x, Apply(ActivationLayer("sigmoid"), Apply(Add(), {deep, wide})));
}

}  // namespace ringwork
