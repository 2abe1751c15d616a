// LSTM, GRU and MultiHeadAttention against PyTorch (Debian's python3-torch, an independent
// implementation; keras/testdata/torch_recurrent.py maps Keras' weight layout to
// its own; torch_attention.py likewise): on the same weights, input and output gradient, the
// outputs, the input gradient and every weight's gradient agree within 1e-5 of their scale.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "keras/layers.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

std::vector<float> Wave(int64_t n, float phase) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = 0.6f * std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

// max |ours - theirs| / max |theirs|.
double RelativeError(const std::vector<float>& ours, const nlohmann::json& theirs) {
  REQUIRE(ours.size() == theirs.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double t = theirs[i].get<double>();
    worst = std::max(worst, std::fabs(ours[i] - t));
    scale = std::max(scale, std::fabs(t));
  }
  REQUIRE(scale > 0);
  return worst / scale;
}

// One forward and backward pass of `layer` (built for [steps, features]) on a
// batch of wave-valued examples, with wave-valued weights and output gradient.
struct LayerRun {
  std::vector<Variable*> vars;
  std::vector<std::vector<float>> grads;  // Each variable's.
  std::vector<float> xs, dys;
  Tensor y, dx;
};

// `mask` ([batch, steps]), if any, is the input's mask over steps.
LayerRun RunLayer(Layer& layer, int64_t batch, int64_t steps, int64_t features,
                  const std::vector<uint8_t>* mask = nullptr) {
  LayerRun run;
  REQUIRE(layer.Build({steps, features}, {.seed = 7}).ok());
  KernelContext kernels(KernelOptions{1, Precision::kFloat32}, 1);
  run.vars = layer.variables();
  run.grads.reserve(run.vars.size());  // The gradient pointers stay valid.
  for (size_t i = 0; i < run.vars.size(); ++i) {
    const std::vector<float> values = Wave(run.vars[i]->size(), static_cast<float>(i));
    std::copy(values.begin(), values.end(), run.vars[i]->value.data());
    run.grads.emplace_back(static_cast<size_t>(run.vars[i]->size()), 0.f);
    run.vars[i]->grad = run.grads.back().data();
  }
  run.xs = Wave(batch * steps * features, 5.f);
  Tensor x({batch, steps, features}, run.xs);
  layer.set_input_mask(mask == nullptr ? nullptr : mask->data());
  REQUIRE(layer.Forward(kernels, x, &run.y, true).ok());
  run.dys = Wave(run.y.size(), 9.f);
  REQUIRE(layer.Backward(kernels, x, run.y, Tensor(run.y.shape(), run.dys), &run.dx).ok());
  return run;
}

// `script` (keras/testdata) on `c`: PyTorch's JSON; its y and dx checked against `run`'s.
nlohmann::json CompareOutputsWithTorch(const std::string& script, const nlohmann::json& c,
                                       const LayerRun& run) {
  const std::string path = FreshTestDir("torch") + "/case.json";
  std::ofstream(path) << c.dump();
  const SubprocessResult r =
      RunSubprocess({"/usr/bin/python3", "keras/testdata/" + script, path}, Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json torch = nlohmann::json::parse(r.output);
  const Tensor &y = run.y, &dx = run.dx;
  CHECK(RelativeError(std::vector<float>(y.data(), y.data() + y.size()), torch["y"]) < 1e-5);
  CHECK(RelativeError(std::vector<float>(dx.data(), dx.data() + dx.size()), torch["dx"]) < 1e-5);
  return torch;
}

std::vector<float> Values(const Variable& v) {
  return std::vector<float>(v.value.data(), v.value.data() + v.size());
}

void CompareWithTorch(const std::string& cell, std::unique_ptr<Layer> layer, bool sequences) {
  const int64_t batch = 3, steps = 6, features = 4, units = 5;
  const LayerRun run = RunLayer(*layer, batch, steps, features);
  REQUIRE(run.vars.size() == 3);
  nlohmann::json c = {{"cell", cell},
                      {"units", units},
                      {"features", features},
                      {"steps", steps},
                      {"batch", batch},
                      {"return_sequences", sequences},
                      {"x", run.xs},
                      {"dy", run.dys},
                      {"kernel", Values(*run.vars[0])},
                      {"recurrent", Values(*run.vars[1])},
                      {"bias", Values(*run.vars[2])}};
  const nlohmann::json torch = CompareOutputsWithTorch("torch_recurrent.py", c, run);
  CHECK(RelativeError(run.grads[0], torch["kernel_grad"]) < 1e-5);
  CHECK(RelativeError(run.grads[1], torch["recurrent_grad"]) < 1e-5);
  CHECK(RelativeError(run.grads[2], torch["bias_grad"]) < 1e-5);
}

TEST_CASE("SimpleRNN's outputs and gradients equal PyTorch's RNN's", "[recurrent][torch]") {
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    CompareWithTorch("rnn", SimpleRNN(5, {.return_sequences = sequences}), sequences);
  }
}

TEST_CASE("LSTM's outputs and gradients equal PyTorch's", "[recurrent][torch]") {
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    CompareWithTorch("lstm", LSTM(5, {.return_sequences = sequences}), sequences);
  }
}

TEST_CASE("GRU's (reset_after, PyTorch's form) outputs and gradients equal PyTorch's",
          "[recurrent][torch]") {
  for (bool sequences : {false, true}) {
    INFO("return_sequences " << sequences);
    CompareWithTorch("gru", GRU(5, {.return_sequences = sequences}), sequences);
  }
}

TEST_CASE("MultiHeadAttention's (self-attention) outputs and gradients equal PyTorch's",
          "[attention][torch]") {
  // Heads of 3 take the plain loops; of 16 (and 17 steps: a padded last block of
  // keys) the vectorized ones.
  // Masked: padding keys (PyTorch's key_padding_mask), at the end, inside, first.
  for (const auto& [steps, features, masked] : {std::tuple<int64_t, int64_t, bool>{5, 6, false},
                                                {17, 32, false},
                                                {5, 6, true},
                                                {17, 32, true}}) {
    INFO("steps " << steps << ", features " << features << (masked ? ", masked" : ""));
    const int64_t batch = 3, heads = 2;
    std::vector<uint8_t> mask(static_cast<size_t>(batch * steps));
    for (int64_t i = 0; i < batch * steps; ++i) mask[i] = (i % steps + i / steps) % 3 != 0;
    std::unique_ptr<Layer> layer = MultiHeadAttention(heads, features / heads);
    const LayerRun run = RunLayer(*layer, batch, steps, features, masked ? &mask : nullptr);
    const std::vector<Variable*>& vars = run.vars;
    const std::vector<std::vector<float>>& grads = run.grads;
    REQUIRE(vars.size() == 8);
    nlohmann::json weights = nlohmann::json::array();
    for (const Variable* v : vars) weights.push_back(Values(*v));
    nlohmann::json c = {{"batch", batch}, {"steps", steps},     {"features", features},
                        {"heads", heads}, {"weights", weights}, {"x", run.xs},
                        {"dy", run.dys}};
    if (masked) c["mask"] = mask;
    const nlohmann::json torch = CompareOutputsWithTorch("torch_attention.py", c, run);
    for (size_t i = 0; i < vars.size(); ++i) {
      INFO(vars[i]->name);
      if (vars[i]->name.find("key/bias") != std::string::npos) {
        // q . b_k shifts a row's scores alike, which the softmax ignores: 0 in both.
        for (size_t j = 0; j < grads[i].size(); ++j) {
          CHECK(std::fabs(grads[i][j]) < 1e-6);
          CHECK(std::fabs(torch["grads"][i][j].get<double>()) < 1e-6);
        }
        continue;
      }
      CHECK(RelativeError(grads[i], torch["grads"][i]) < 1e-5);
    }
  }
}

}  // namespace
}  // namespace ringwork
