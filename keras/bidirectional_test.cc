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
#include "kernels/kernel_context.h"
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

// [4, 5, 2] examples with their steps last to first.
Tensor ReversedSteps(const Tensor& x) {
  Tensor reversed = x;
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t f = 0; f < 2; ++f) reversed[(b * 5 + t) * 2 + f] = x[(b * 5 + 4 - t) * 2 + f];
    }
  }
  return reversed;
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
      const std::vector<Variable*> v = model.trainable_variables();
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
  const Tensor reversed = ReversedSteps(batch.features);
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
    for (size_t i = 0; i < 3; ++i)
      plain.trainable_variables()[i]->value = backwards.trainable_variables()[i]->value;
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
  Tensor& readout = zeroed.trainable_variables()[zeroed.trainable_variables().size() - 2]->value;
  for (int64_t i = 0; i < readout.size(); ++i) readout[i] *= 4.f;
  CheckGradientsByFiniteDifferences(zeroed, batch, 1);
}

// `layer` built for [5, 2] and run on `x` with `mask` (or none): its outputs.
Tensor RunAlone(Layer& layer, const Tensor& x, const std::vector<uint8_t>* mask, uint64_t seed) {
  KernelContext k({1, Precision::kFloat32});
  layer.set_name("rnn");
  REQUIRE(layer.Build({5, 2}, BuildContext{seed}).ok());
  layer.set_input_mask(mask == nullptr ? nullptr : mask->data());
  Tensor y;
  REQUIRE(layer.Forward(k, x, &y, false).ok());
  return y;
}

TEST_CASE("a go_backwards layer's outputs run in the order it computed them; zeros for a mask",
          "[sequence][bidirectional]") {
  const Batch batch = Steps(false);
  const Tensor reversed = ReversedSteps(batch.features);
  auto backwards = LSTM(3, {.return_sequences = true, .go_backwards = true});
  auto plain = LSTM(3, {.return_sequences = true});
  const Tensor a = RunAlone(*backwards, batch.features, nullptr, 5);
  const Tensor b =
      RunAlone(*plain, reversed, nullptr, 5);  // The same seed and names: same weights.
  for (int64_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-6));
  // Example e keeps steps t with (t + e) % 3 != 0.
  std::vector<uint8_t> mask(20);
  for (int64_t i = 0; i < 20; ++i) mask[i] = (i % 5 + i / 5) % 3 != 0;
  for (bool go_backwards : {false, true}) {
    auto zeroed = GRU(
        3, {.return_sequences = true, .go_backwards = go_backwards, .zero_output_for_mask = true});
    auto held = GRU(3, {.return_sequences = true, .go_backwards = go_backwards});
    const Tensor z = RunAlone(*zeroed, batch.features, &mask, 9);
    const Tensor h = RunAlone(*held, batch.features, &mask, 9);
    for (int64_t e = 0; e < 4; ++e) {
      for (int64_t t = 0; t < 5; ++t) {  // Output t is step t, or 4 - t going backwards.
        const bool kept = mask[e * 5 + (go_backwards ? 4 - t : t)] != 0;
        for (int64_t u = 0; u < 3; ++u) {
          const int64_t i = (e * 5 + t) * 3 + u;
          INFO("example " << e << ", output " << t << (go_backwards ? ", backwards" : ""));
          CHECK(z[i] == (kept ? h[i] : 0.f));
          if (!kept && t > 0) CHECK(h[i] == h[i - 3]);  // Held: the previous output.
        }
      }
    }
  }
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
