// dropout and recurrent_dropout of SimpleRNN, LSTM and GRU: nothing in inference;
// in training, masks that are a function of (seed, worker, step), and gradients
// of the dropped network against finite differences (the same masks each time).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <functional>
#include <vector>

#include "keras/keras_layer_config.h"
#include "keras/layers.h"
#include "kernels/kernel_context.h"

namespace ringwork {
namespace {

Tensor Inputs() {  // [3, 5, 4]
  Tensor x({3, 5, 4});
  for (int64_t i = 0; i < x.size(); ++i)
    x[i] = 0.8f * std::sin(0.9f * static_cast<float>(i)) + 0.1f;
  return x;
}

std::unique_ptr<Layer> Built(const std::function<std::unique_ptr<Layer>(RecurrentOptions)>& make,
                             RecurrentOptions options) {
  std::unique_ptr<Layer> layer = make(options);
  layer->set_name("rnn");  // The same name and seed: the same weights.
  REQUIRE(layer->Build({5, 4}, BuildContext{3}).ok());
  return layer;
}

Tensor Run(KernelContext& k, Layer& layer, const Tensor& x, bool training, int64_t step) {
  layer.set_training_step(step);
  Tensor y;
  REQUIRE(layer.Forward(k, x, &y, training).ok());
  return y;
}

double Loss(const Tensor& y) {  // sum of y_i sin(i): every output counts.
  double loss = 0;
  for (int64_t i = 0; i < y.size(); ++i) loss += y[i] * std::sin(static_cast<double>(i));
  return loss;
}

TEST_CASE("recurrent dropout: none in inference; masks by (seed, worker, step); gradients",
          "[sequence][recurrent]") {
  KernelContext k({1, Precision::kFloat32});
  const std::vector<std::pair<const char*, std::function<std::unique_ptr<Layer>(RecurrentOptions)>>>
      cells = {{"SimpleRNN", [](RecurrentOptions o) { return SimpleRNN(6, o); }},
               {"LSTM", [](RecurrentOptions o) { return LSTM(6, o); }},
               {"GRU", [](RecurrentOptions o) { return GRU(6, o); }},
               {"GRU reset_after=false", [](RecurrentOptions o) {
                  o.reset_after = false;
                  return GRU(6, o);
                }}};
  const Tensor x = Inputs();
  for (const auto& [name, make] : cells) {
    INFO(name);
    RecurrentOptions dropped{.return_sequences = true};
    dropped.dropout = 0.3f;
    dropped.recurrent_dropout = 0.4f;
    auto layer = Built(make, dropped);
    auto plain = Built(make, {.return_sequences = true});
    const Tensor inference = Run(k, *layer, x, false, 0), whole = Run(k, *plain, x, true, 0);
    for (int64_t i = 0; i < whole.size(); ++i) CHECK(inference[i] == whole[i]);
    const Tensor a = Run(k, *layer, x, true, 7), b = Run(k, *layer, x, true, 7);
    const Tensor c = Run(k, *layer, x, true, 8);
    layer->set_replica(1);
    const Tensor d = Run(k, *layer, x, true, 7);
    layer->set_replica(0);
    double ab = 0, ac = 0, ad = 0, aw = 0;
    for (int64_t i = 0; i < a.size(); ++i) {
      ab += std::fabs(a[i] - b[i]);
      ac += std::fabs(a[i] - c[i]);
      ad += std::fabs(a[i] - d[i]);
      aw += std::fabs(a[i] - whole[i]);
    }
    CHECK(ab == 0);  // The same step: the same masks.
    CHECK(ac > 0.1);
    CHECK(ad > 0.1);  // Another worker: other masks.
    CHECK(aw > 0.1);

    // Gradients of Loss at step 7 (its masks) against central differences.
    Tensor y = Run(k, *layer, x, true, 7), dy(y.shape()), dx;
    for (int64_t i = 0; i < dy.size(); ++i)
      dy[i] = static_cast<float>(std::sin(static_cast<double>(i)));
    std::vector<std::vector<float>> slots;  // The gradients' slots (a model's arena).
    for (Variable* v : layer->variables()) {
      slots.emplace_back(static_cast<size_t>(v->size()));
      v->grad = slots.back().data();
    }
    REQUIRE(layer->Backward(k, x, y, dy, &dx).ok());
    const float h = 1e-2f;
    const auto check = [&](float* value, float analytic, const char* what, int64_t i) {
      const float saved = *value;
      *value = saved + h;
      const double up = Loss(Run(k, *layer, x, true, 7));
      *value = saved - h;
      const double down = Loss(Run(k, *layer, x, true, 7));
      *value = saved;
      const double numeric = (up - down) / (2 * h);
      INFO(what << "[" << i << "]: backward " << analytic << ", differences " << numeric);
      CHECK(std::fabs(analytic - numeric) <= 2e-3 + 0.02 * std::fabs(numeric));
    };
    Tensor xs = x;  // The input: dropped features get no gradient.
    int64_t zero_dx = 0;
    for (int64_t i = 0; i < x.size(); ++i) {
      zero_dx += dx[i] == 0.f;
      const float saved = xs[i];
      xs[i] = saved + h;
      const double up = Loss(Run(k, *layer, xs, true, 7));
      xs[i] = saved - h;
      const double down = Loss(Run(k, *layer, xs, true, 7));
      xs[i] = saved;
      INFO("x[" << i << "]");
      CHECK(std::fabs(dx[i] - (up - down) / (2 * h)) <=
            2e-3 + 0.02 * std::fabs((up - down) / (2 * h)));
    }
    CHECK(zero_dx >= 5);  // About 0.3 of the 12 (example, feature) pairs, 5 steps each.
    for (Variable* v : layer->variables()) {
      const std::vector<float> grad(v->grad, v->grad + v->size());
      for (int64_t i = 0; i < v->size(); i += 3) check(&v->value[i], grad[i], v->name.c_str(), i);
    }
  }
}

TEST_CASE("dropout and recurrent_dropout come from Keras configs and go back", "[sequence]") {
  absl::StatusOr<std::unique_ptr<Layer>> lstm = LayerFromKerasConfig(
      "LSTM", {{"units", 3}, {"dropout", 0.25}, {"recurrent_dropout", 0.5}}, "$");
  REQUIRE(lstm.ok());
  REQUIRE((*lstm)->Build({4, 2}, BuildContext{1}).ok());
  CHECK((*lstm)->keras_config()["dropout"].get<double>() == 0.25);
  CHECK((*lstm)->keras_config()["recurrent_dropout"].get<double>() == 0.5);
  CHECK_THAT((*lstm)->config(), Catch::Contains("recurrent_dropout 0.5"));
  absl::StatusOr<std::unique_ptr<Layer>> wrong =
      LayerFromKerasConfig("GRU", {{"units", 3}, {"dropout", 1.0}}, "$");
  REQUIRE(wrong.ok());
  CHECK_THAT(std::string((*wrong)->Build({4, 2}, BuildContext{1}).status().message()),
             Catch::Contains("dropout and recurrent_dropout must be in [0, 1), got 1"));
}

}  // namespace
}  // namespace ringwork
