// LSTM, GRU and MultiHeadAttention against PyTorch (Debian's python3-torch, an independent
// implementation; keras/testdata/torch_recurrent.py maps Keras' weight layout to
// its own; torch_attention.py likewise): on the same weights, input and output gradient, the
// outputs, the input gradient and every weight's gradient agree within 1e-5 of their scale.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

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

void CompareWithTorch(const std::string& cell, std::unique_ptr<Layer> layer, bool sequences) {
  const int64_t batch = 3, steps = 6, features = 4, units = 5;
  REQUIRE(layer->Build({steps, features}, {.seed = 7}).ok());
  KernelContext kernels(KernelOptions{1, Precision::kFloat32}, 1);
  std::vector<Variable*> vars = layer->variables();
  REQUIRE(vars.size() == 3);
  std::vector<std::vector<float>> grads;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::vector<float> values = Wave(vars[i]->size(), static_cast<float>(i));
    std::copy(values.begin(), values.end(), vars[i]->value.data());
    grads.emplace_back(static_cast<size_t>(vars[i]->size()), 0.f);
    vars[i]->grad = grads.back().data();
  }
  const std::vector<float> xs = Wave(batch * steps * features, 5.f);
  Tensor x({batch, steps, features}, xs), y, dx;
  REQUIRE(layer->Forward(kernels, x, &y, true).ok());
  const std::vector<float> dys = Wave(y.size(), 9.f);
  Tensor dy(y.shape(), dys);
  REQUIRE(layer->Backward(kernels, x, y, dy, &dx).ok());

  nlohmann::json c = {{"cell", cell},   {"units", units}, {"features", features},
                      {"steps", steps}, {"batch", batch}, {"return_sequences", sequences},
                      {"x", xs},        {"dy", dys}};
  c["kernel"] = std::vector<float>(vars[0]->value.data(), vars[0]->value.data() + vars[0]->size());
  c["recurrent"] =
      std::vector<float>(vars[1]->value.data(), vars[1]->value.data() + vars[1]->size());
  c["bias"] = std::vector<float>(vars[2]->value.data(), vars[2]->value.data() + vars[2]->size());
  const std::string path = FreshTestDir("torch_" + cell) + "/case.json";
  std::ofstream(path) << c.dump();
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "keras/testdata/torch_recurrent.py", path}, Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json torch = nlohmann::json::parse(r.output);
  CHECK(RelativeError(std::vector<float>(y.data(), y.data() + y.size()), torch["y"]) < 1e-5);
  CHECK(RelativeError(std::vector<float>(dx.data(), dx.data() + dx.size()), torch["dx"]) < 1e-5);
  CHECK(RelativeError(grads[0], torch["kernel_grad"]) < 1e-5);
  CHECK(RelativeError(grads[1], torch["recurrent_grad"]) < 1e-5);
  CHECK(RelativeError(grads[2], torch["bias_grad"]) < 1e-5);
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
  const int64_t batch = 3, steps = 5, features = 6, heads = 2;
  std::unique_ptr<Layer> layer = MultiHeadAttention(heads, features / heads);
  REQUIRE(layer->Build({steps, features}, {.seed = 3}).ok());
  KernelContext kernels(KernelOptions{1, Precision::kFloat32}, 1);
  std::vector<Variable*> vars = layer->variables();
  REQUIRE(vars.size() == 8);
  std::vector<std::vector<float>> grads;
  nlohmann::json weights = nlohmann::json::array();
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::vector<float> values = Wave(vars[i]->size(), static_cast<float>(i));
    std::copy(values.begin(), values.end(), vars[i]->value.data());
    weights.push_back(values);
    grads.emplace_back(static_cast<size_t>(vars[i]->size()), 0.f);
    vars[i]->grad = grads.back().data();
  }
  const std::vector<float> xs = Wave(batch * steps * features, 5.f);
  Tensor x({batch, steps, features}, xs), y, dx;
  REQUIRE(layer->Forward(kernels, x, &y, true).ok());
  const std::vector<float> dys = Wave(y.size(), 9.f);
  REQUIRE(layer->Backward(kernels, x, y, Tensor(y.shape(), dys), &dx).ok());
  const nlohmann::json c = {{"batch", batch}, {"steps", steps},     {"features", features},
                            {"heads", heads}, {"weights", weights}, {"x", xs},
                            {"dy", dys}};
  const std::string path = FreshTestDir("torch_attention") + "/case.json";
  std::ofstream(path) << c.dump();
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "keras/testdata/torch_attention.py", path}, Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json torch = nlohmann::json::parse(r.output);
  CHECK(RelativeError(std::vector<float>(y.data(), y.data() + y.size()), torch["y"]) < 1e-5);
  CHECK(RelativeError(std::vector<float>(dx.data(), dx.data() + dx.size()), torch["dx"]) < 1e-5);
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

}  // namespace
}  // namespace ringwork
