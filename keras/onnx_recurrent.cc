#include "keras/onnx_recurrent.h"

#include <nlohmann/json.hpp>
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
  const std::string name = layer.name();
  const bool bidirectional = layer.type() == "Bidirectional";
  const nlohmann::json outer = layer.keras_config();
  // A Bidirectional's halves: its layer's config, weights forward then backward.
  const nlohmann::json config = bidirectional ? outer["layer"]["config"] : outer;
  const std::string type =
      bidirectional ? outer["layer"]["class_name"].get<std::string>() : layer.type();
  if (config.value("go_backwards", false)) {
    // ONNX's reverse direction gives its outputs in step order, Keras' go_backwards
    // in the order it ran.
    return absl::UnimplementedError(absl::StrCat("ONNX export: layer ", name, " (", type,
                                                 ") has go_backwards, which is not exported"));
  }
  const int64_t units = config["units"].get<int64_t>();
  const std::vector<Variable*> vars = layer.weights();
  const bool lstm = type == "LSTM", gru = type == "GRU";
  const int gates = lstm ? 4 : gru ? 3 : 1;  // SimpleRNN: ONNX's RNN (tanh).
  const std::vector<int> order = lstm  ? std::vector<int>{0, 3, 1, 2}
                                 : gru ? std::vector<int>{0, 1, 2}
                                       : std::vector<int>{0};
  const int64_t features = vars[0]->value.dim(0), width = gates * units;
  const int64_t directions = bidirectional ? 2 : 1;
  std::vector<float> w, r, b;
  for (int64_t d = 0; d < directions; ++d) {  // ONNX stacks the directions' weights.
    const std::vector<float> dw = Gates(vars[3 * d]->value, units, order);
    const std::vector<float> dr = Gates(vars[3 * d + 1]->value, units, order);
    w.insert(w.end(), dw.begin(), dw.end());
    r.insert(r.end(), dr.begin(), dr.end());
    // B: the input biases, then the recurrent ones (zeros unless a GRU resets after).
    const Tensor& bias = vars[3 * d + 2]->value;
    std::vector<float> db = BiasGates(bias.data(), units, order);
    if (bias.shape().size() == 2) {
      const std::vector<float> second = BiasGates(bias.data() + width, units, order);
      db.insert(db.end(), second.begin(), second.end());
    } else {
      db.resize(static_cast<size_t>(2 * width), 0.f);
    }
    b.insert(b.end(), db.begin(), db.end());
  }
  g->Initializer(name + "/W", {directions, width, features}, w.data());
  g->Initializer(name + "/R", {directions, width, units}, r.data());
  g->Initializer(name + "/B", {directions, 2 * width}, b.data());
  g->Node("Transpose", {in}, name + "/time_major", {{"perm", {1, 0, 2}}});
  std::vector<std::pair<std::string, std::vector<int64_t>>> attributes = {{"hidden_size", {units}}};
  if (gru) attributes.push_back({"linear_before_reset", {config["reset_after"].get<bool>()}});
  // Outputs Y ([steps, directions, batch, units]) and Y_h ([directions, batch, units]);
  // the reverse direction's Y is in step order, as Bidirectional puts it.
  g->Node(lstm || gru ? type : "RNN", {name + "/time_major", name + "/W", name + "/R", name + "/B"},
          name + "/Y", attributes, {}, {name + "/Y_h"},
          {{"direction", bidirectional ? "bidirectional" : "forward"}});
  const bool sequences = config["return_sequences"].get<bool>();
  if (!bidirectional) {
    g->Int64Initializer(name + "/direction_axis", {sequences ? 1 : 0});
    if (!sequences) {
      g->Node("Squeeze", {name + "/Y_h", name + "/direction_axis"}, out);
      return absl::OkStatus();
    }
    g->Node("Squeeze", {name + "/Y", name + "/direction_axis"}, name + "/sequence");
    g->Node("Transpose", {name + "/sequence"}, out, {{"perm", {1, 0, 2}}});
    return absl::OkStatus();
  }
  // [batch, (steps,) 2, units], then the merge over the directions' axis.
  const int64_t axis = sequences ? 2 : 1;
  g->Node("Transpose", {name + (sequences ? "/Y" : "/Y_h")}, name + "/directions",
          {{"perm", sequences ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{1, 0, 2}}});
  const std::string mode = outer["merge_mode"].get<std::string>();
  if (mode == "concat") {
    g->Int64Initializer(name + "/shape",
                        sequences ? std::vector<int64_t>{0, 0, -1} : std::vector<int64_t>{0, -1});
    g->Node("Reshape", {name + "/directions", name + "/shape"}, out);
  } else if (mode == "sum") {
    g->Int64Initializer(name + "/axes", {axis});
    g->Node("ReduceSum", {name + "/directions", name + "/axes"}, out, {{"keepdims", {0}}});
  } else {
    g->Node(mode == "ave" ? "ReduceMean" : "ReduceProd", {name + "/directions"}, out,
            {{"axes", {axis}}, {"keepdims", {0}}});
  }
  return absl::OkStatus();
}

}  // namespace ringwork
