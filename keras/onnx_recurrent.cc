#include "keras/onnx_recurrent.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// Keras' [rows, gates x units] as ONNX's [1, gates x units, rows], its gate
// blocks in ONNX's order: block k of the result is Keras' block order[k].
std::vector<float> Gates(const Tensor& keras, int64_t units, const std::vector<int>& order) {
  const int64_t rows = keras.dim(0), width = keras.dim(1);
  std::vector<float> onnx(static_cast<size_t>(rows * width));
  for (size_t k = 0; k < order.size(); ++k) {
    for (int64_t u = 0; u < units; ++u) {
      for (int64_t r = 0; r < rows; ++r) {
        onnx[(k * units + u) * rows + r] = keras[r * width + order[k] * units + u];
      }
    }
  }
  return onnx;
}

// A bias row ([gates x units]) in ONNX's gate order.
std::vector<float> BiasGates(const float* keras, int64_t units, const std::vector<int>& order) {
  std::vector<float> onnx;
  for (int k : order) onnx.insert(onnx.end(), keras + k * units, keras + (k + 1) * units);
  return onnx;
}

}  // namespace

absl::Status AddRecurrentOp(OnnxGraph* g, const Layer& layer, const std::string& in,
                            const std::string& out) {
  const std::string name = layer.name(), type = layer.type();
  const nlohmann::json config = layer.keras_config();
  const int64_t units = config["units"].get<int64_t>();
  const std::vector<Variable*> vars = layer.weights();
  const bool lstm = type == "LSTM", gru = type == "GRU";
  const int gates = lstm ? 4 : gru ? 3 : 1;  // SimpleRNN: ONNX's RNN (tanh).
  const std::vector<int> order = lstm  ? std::vector<int>{0, 3, 1, 2}
                                 : gru ? std::vector<int>{0, 1, 2}
                                       : std::vector<int>{0};
  const Tensor& kernel = vars[0]->value;
  const Tensor& recurrent = vars[1]->value;
  const int64_t features = kernel.dim(0), width = gates * units;
  const std::vector<float> w = Gates(kernel, units, order), r = Gates(recurrent, units, order);
  g->Initializer(name + "/W", {1, width, features}, w.data());
  g->Initializer(name + "/R", {1, width, units}, r.data());
  // B: the input biases, then the recurrent ones (zeros unless a GRU resets after).
  const float* bias = vars[2]->value.data();
  const bool two_biases = vars[2]->value.shape().size() == 2;
  std::vector<float> b = BiasGates(bias, units, order);
  if (two_biases) {
    const std::vector<float> second = BiasGates(bias + width, units, order);
    b.insert(b.end(), second.begin(), second.end());
  } else {
    b.resize(static_cast<size_t>(2 * width), 0.f);
  }
  g->Initializer(name + "/B", {1, 2 * width}, b.data());
  g->Node("Transpose", {in}, name + "/time_major", {{"perm", {1, 0, 2}}});
  std::vector<std::pair<std::string, std::vector<int64_t>>> attributes = {{"hidden_size", {units}}};
  if (gru) attributes.push_back({"linear_before_reset", {config["reset_after"].get<bool>()}});
  // Outputs Y ([steps, 1, batch, units]) and Y_h ([1, batch, units]).
  g->Node(lstm || gru ? type : "RNN", {name + "/time_major", name + "/W", name + "/R", name + "/B"},
          name + "/Y", attributes, {}, {name + "/Y_h"});
  if (config["return_sequences"].get<bool>()) {
    g->Int64Initializer(name + "/direction_axis", {1});
    g->Node("Squeeze", {name + "/Y", name + "/direction_axis"}, name + "/sequence");
    g->Node("Transpose", {name + "/sequence"}, out, {{"perm", {1, 0, 2}}});
  } else {
    g->Int64Initializer(name + "/direction_axis", {0});
    g->Node("Squeeze", {name + "/Y_h", name + "/direction_axis"}, out);
  }
  return absl::OkStatus();
}

}  // namespace ringwork
