// Bidirectional, go_backwards and zero_output_for_mask: gradients against finite
// differences for every merge mode, with and without a mask; the backward half is
// the layer run on the reversed sequence; a .keras archive and TF.js take it and
// give it back. TF.js' own Bidirectional models: keras_import_test.cc.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "keras/gradient_check_testing.h"
#include "keras/keras_archive.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// [4, 5, 2], with all-zero (Masking's padding) steps where `padded`.
Batch Steps(bool padded) {
  Batch batch;
  batch.features = Tensor({4, 5, 2});
  for (int64_t i = 0; i < batch.features.size(); ++i) {
    const int64_t step = (i / 2) % 5, example = i / 10;
    const bool pad = padded && (step + example) % 4 == 3;
    batch.features[i] = pad ? 0.f : 0.5f + std::sin(0.9f * static_cast<float>(i));
  }
  batch.labels = {0, 2, 1, 2};
  return batch;
}

TEST_CASE("Bidirectional: weights, and gradients by finite differences for each merge mode",
          "[sequence][bidirectional]") {
  for (const char* mode : {"concat", "sum", "ave", "mul"}) {
    for (bool masked : {false, true}) {
      INFO(mode << (masked ? ", masked" : ""));
      Sequential model;
      if (masked) model.Add(Masking());
      model.Add(Bidirectional(LSTM(3, {.return_sequences = true}), mode));
      model.Add(Bidirectional(GRU(2, {.reset_after = false})));
      model.Add(Dense(3));
      REQUIRE(model.Compile(FrozenSgd()).ok());
      REQUIRE(model.Build({5, 2}).ok());
      const std::vector<Variable*> v = model.variables();
      REQUIRE(v.size() == 14);
      CHECK(v[0]->name == "bidirectional/forward_lstm/kernel");
      CHECK(v[3]->name == "bidirectional/backward_lstm/kernel");
      CHECK(v[6]->name == "bidirectional_1/forward_gru/kernel");
      CHECK(v[6]->value.shape() == Shape{std::string(mode) == "concat" ? 6 : 3, 6});
      CHECK(model.param_count() ==
            2 * (2 * 12 + 3 * 12 + 12) + 2 * (6 * 0 + 0) +
                2 * ((std::string(mode) == "concat" ? 6 : 3) * 6 + 2 * 6 + 6) + 4 * 3 + 3);
      PerturbWeights(model, 0.6f);
      Tensor& readout = v[12]->value;
      const bool mul = std::string(mode) == "mul";  // Products of small outputs: larger.
      for (int64_t i = 0; i < readout.size(); ++i) readout[i] *= mul ? 12.f : 4.f;
      for (int r : {1, 4}) {
        for (int64_t i = 0; mul && i < v[r]->size(); ++i) v[r]->value[i] *= 2.f;
      }
      CheckGradientsByFiniteDifferences(model, Steps(masked), 1);
    }
  }
}

TEST_CASE("go_backwards reads the steps last to first; zero_output_for_mask zeroes masked steps",
          "[sequence][bidirectional]") {
  const Batch batch = Steps(true);
  Tensor reversed = batch.features;
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t f = 0; f < 2; ++f)
        reversed[(b * 5 + t) * 2 + f] = batch.features[(b * 5 + 4 - t) * 2 + f];
    }
  }
  for (bool masked : {false, true}) {
    Sequential backwards, plain;
    if (masked) backwards.Add(Masking());
    if (masked) plain.Add(Masking());
    // The last state (with return_sequences the mask passes on in step order, as
    // Keras', while the outputs are in the order they were computed).
    backwards.Add(LSTM(3, {.go_backwards = true}));
    plain.Add(LSTM(3));
    REQUIRE(backwards.Compile(FrozenSgd()).ok());
    REQUIRE(plain.Compile(FrozenSgd()).ok());
    REQUIRE(backwards.Build({5, 2}).ok());
    REQUIRE(plain.Build({5, 2}).ok());
    for (size_t i = 0; i < 3; ++i) plain.variables()[i]->value = backwards.variables()[i]->value;
    absl::StatusOr<Tensor> a = backwards.Predict(batch.features), b = plain.Predict(reversed);
    REQUIRE((a.ok() && b.ok()));
    for (int64_t i = 0; i < a->size(); ++i) CHECK((*a)[i] == Approx((*b)[i]).epsilon(1e-6));
  }
  Sequential zeroed;
  zeroed.Add(Masking());
  zeroed.Add(GRU(3, {.return_sequences = true, .zero_output_for_mask = true}));
  zeroed.Add(Bidirectional(LSTM(2)));
  zeroed.Add(Dense(3));
  REQUIRE(zeroed.Compile(FrozenSgd()).ok());
  REQUIRE(zeroed.Build({5, 2}).ok());
  PerturbWeights(zeroed, 0.6f);
  Tensor& readout = zeroed.variables()[zeroed.variables().size() - 2]->value;
  for (int64_t i = 0; i < readout.size(); ++i) readout[i] *= 4.f;
  CheckGradientsByFiniteDifferences(zeroed, batch, 1);
}

TEST_CASE("Bidirectional goes into a .keras archive and back; wrapping a non-recurrent layer fails",
          "[sequence][bidirectional]") {
  Sequential model;
  model.Add(Embedding(10, 3, {.mask_zero = true}));
  model.Add(Bidirectional(GRU(4, {.return_sequences = true}), "sum"));
  model.Add(Bidirectional(SimpleRNN(2)));
  model.Add(Dense(2));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({6}).ok());
  PerturbWeights(model, 0.6f);
  const std::string path = FreshTestDir("bidirectional_archive") + "/model.keras";
  REQUIRE(SaveKerasArchive(model, path).ok());
  absl::StatusOr<Model> loaded = LoadModel(path);
  REQUIRE(loaded.ok());
  const Tensor ids({3, 6}, {1, 4, 0, 0, 0, 0, 0, 9, 2, 8, 3, 5, 7, 0, 7, 0, 7, 0});
  absl::StatusOr<Tensor> a = model.Predict(ids), b = loaded->Predict(ids);
  REQUIRE((a.ok() && b.ok()));
  for (int64_t i = 0; i < a->size(); ++i) CHECK((*a)[i] == (*b)[i]);

  Sequential wrong;
  wrong.Add(Bidirectional(Dense(3)));
  REQUIRE(wrong.Compile(FrozenSgd()).ok());
  const absl::Status built = wrong.Build({5, 2});
  CHECK_THAT(std::string(built.message()),
             Contains("Bidirectional wraps SimpleRNN, LSTM or GRU, not Dense"));
}

}  // namespace
}  // namespace ringwork
