#include "keras/onnx_attention.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// x [batch, steps, features] times `kernel` ([features, ...] read as [features,
// width]) plus `bias`: [batch, steps, width] named `out`.
void Projection(OnnxGraph* g, const std::string& x, const Variable& kernel, const Variable& bias,
                int64_t width, const std::string& out) {
  const int64_t rows = kernel.size() / width;
  g->Initializer(kernel.name, {rows, width}, kernel.value.data());
  g->Initializer(bias.name, {width}, bias.value.data());
  g->Node("MatMul", {x, kernel.name}, out + "/matmul");
  g->Node("Add", {out + "/matmul", bias.name}, out);
}

}  // namespace

absl::Status AddAttentionOp(OnnxGraph* g, const Layer& layer, const std::string& in,
                            const std::string& out) {
  const std::string name = layer.name();
  const std::vector<Variable*> vars = layer.weights();
  const Shape& shape = layer.output_shape();  // [steps, features], as the input's.
  if (layer.type() == "PositionEmbedding") {
    const Tensor& table = vars[0]->value;
    g->Initializer(name + "/positions", shape, table.data());  // Its first `steps` rows.
    g->Node("Add", {in, name + "/positions"}, out);
    return absl::OkStatus();
  }
  const nlohmann::json config = layer.keras_config();
  const int64_t heads = config["num_heads"].get<int64_t>(),
                key_dim = config["key_dim"].get<int64_t>(),
                value_dim = config["value_dim"].get<int64_t>();
  // q and v as [batch, heads, steps, dim]; k as [batch, heads, dim, steps].
  const auto split = [&](const std::string& part, int64_t dim, std::vector<int64_t> perm) {
    g->Int64Initializer(name + "/" + part + "/heads_shape", {0, 0, heads, dim});
    g->Node("Reshape", {name + "/" + part, name + "/" + part + "/heads_shape"},
            name + "/" + part + "/heads");
    g->Node("Transpose", {name + "/" + part + "/heads"}, name + "/" + part + "/by_head",
            {{"perm", perm}});
  };
  Projection(g, in, *vars[0], *vars[1], heads * key_dim, name + "/q");
  Projection(g, in, *vars[2], *vars[3], heads * key_dim, name + "/k");
  Projection(g, in, *vars[4], *vars[5], heads * value_dim, name + "/v");
  split("q", key_dim, {0, 2, 1, 3});
  split("k", key_dim, {0, 2, 3, 1});
  split("v", value_dim, {0, 2, 1, 3});
  const float scale = 1.f / std::sqrt(static_cast<float>(key_dim));
  g->Initializer(name + "/scale", {}, &scale);
  g->Node("MatMul", {name + "/q/by_head", name + "/k/by_head"}, name + "/dots");
  g->Node("Mul", {name + "/dots", name + "/scale"}, name + "/scores");
  g->Node("Softmax", {name + "/scores"}, name + "/weights", {{"axis", {-1}}});
  g->Node("MatMul", {name + "/weights", name + "/v/by_head"}, name + "/context");
  g->Node("Transpose", {name + "/context"}, name + "/context/by_step", {{"perm", {0, 2, 1, 3}}});
  g->Int64Initializer(name + "/context/shape", {0, 0, heads * value_dim});
  g->Node("Reshape", {name + "/context/by_step", name + "/context/shape"}, name + "/joined");
  Projection(g, name + "/joined", *vars[6], *vars[7], shape.back(), out);
  return absl::OkStatus();
}

}  // namespace ringwork
