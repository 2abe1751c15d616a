// ONNX's protobuf messages written by field number (onnx.proto, IR version 8):
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto.
#include "keras/onnx_export.h"

#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "keras/onnx_attention.h"
#include "keras/onnx_graph.h"
#include "keras/onnx_recurrent.h"
#include "keras/shared_layer_call.h"

namespace ringwork {
namespace {

// `activation` ("relu", "softmax", ...) applied to `in`, giving `out`.
absl::Status AddActivation(OnnxGraph* g, const std::string& activation, const std::string& layer,
                           const std::string& in, const std::string& out) {
  static const std::map<std::string, std::string> ops = {
      {"relu", "Relu"}, {"tanh", "Tanh"}, {"sigmoid", "Sigmoid"}, {"softmax", "Softmax"}};
  if (activation.empty() || activation == "linear") {
    g->Node("Identity", {in}, out);
    return absl::OkStatus();
  }
  const auto op = ops.find(activation);
  if (op == ops.end()) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX export: layer ", layer, "'s activation ",
                                                   activation, " is not exported yet"));
  }
  if (op->second == "Softmax") {
    g->Node("Softmax", {in}, out, {{"axis", {-1}}});
  } else {
    g->Node(op->second, {in}, out);
  }
  return absl::OkStatus();
}

// TensorFlow's SAME padding of one spatial axis: [begin, end], the extra at the end.
std::pair<int64_t, int64_t> SamePads(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  return {total / 2, total - total / 2};
}

// An NHWC image op (NWC for a sequence: `in` of rank 2 without the batch) as
// ONNX's NCHW (NCW) one: transposes around `op`.
void ChannelsFirst(OnnxGraph* g, const std::string& op, std::vector<std::string> inputs,
                   const std::string& name, const std::string& out, const Shape& in,
                   const std::vector<std::pair<std::string, std::vector<int64_t>>>& attributes) {
  const bool image = in.size() == 3;
  g->Node("Transpose", {inputs[0]}, name + "/nchw",
          {{"perm", image ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{0, 2, 1}}});
  inputs[0] = name + "/nchw";
  g->Node(op, inputs, name + "/" + op, attributes);
  g->Node("Transpose", {name + "/" + op}, out,
          {{"perm", image ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1}}});
}

// The convolutions' and pools' kernel_shape, strides, dilations and pads from
// their Keras config, per spatial axis of `in` (1 or 2).
std::vector<std::pair<std::string, std::vector<int64_t>>> WindowAttributes(
    const nlohmann::json& config, const std::string& size_key, const Shape& in, const Shape& out) {
  const size_t axes = in.size() - 1;
  const auto values = [&](const char* key) {
    std::vector<int64_t> v(axes, 1);
    for (size_t a = 0; a < axes && config.contains(key); ++a) v[a] = config[key][a].get<int64_t>();
    return v;
  };
  const std::vector<int64_t> k = values(size_key.c_str()), stride = values("strides"),
                             dilation = values("dilation_rate");
  std::vector<int64_t> begins, ends;
  for (size_t a = 0; a < axes; ++a) {
    const int64_t span = (k[a] - 1) * dilation[a] + 1;
    const auto pads = config["padding"] == "same" ? SamePads(in[a], out[a], span, stride[a])
                                                  : std::pair<int64_t, int64_t>{0, 0};
    begins.push_back(pads.first);
    ends.push_back(pads.second);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  std::vector<std::pair<std::string, std::vector<int64_t>>> attributes = {
      {"kernel_shape", k}, {"strides", stride}, {"pads", begins}};
  if (config.contains("dilation_rate")) attributes.push_back({"dilations", dilation});
  return attributes;
}

// Keras' [height, width, in, out] kernel as ONNX's [out, in, height, width]; a
// Conv1D's [width, in, out] as [out, in, width].
Tensor OihwFromHwio(const Tensor& kernel) {
  if (kernel.shape().size() == 3) {
    Tensor as_image = kernel;
    as_image.Reshape({1, kernel.dim(0), kernel.dim(1), kernel.dim(2)});
    Tensor oihw = OihwFromHwio(as_image);
    oihw.Reshape({kernel.dim(2), kernel.dim(1), kernel.dim(0)});
    return oihw;
  }
  const Shape& hwio = kernel.shape();
  Tensor oihw({hwio[3], hwio[2], hwio[0], hwio[1]});
  for (int64_t h = 0; h < hwio[0]; ++h)
    for (int64_t w = 0; w < hwio[1]; ++w)
      for (int64_t i = 0; i < hwio[2]; ++i)
        for (int64_t o = 0; o < hwio[3]; ++o)
          oihw[((o * hwio[2] + i) * hwio[0] + h) * hwio[1] + w] =
              kernel[((h * hwio[1] + w) * hwio[2] + i) * hwio[3] + o];
  return oihw;
}

// The layers whose ONNX ops are written beside this file, by type.
using AddOp = absl::Status (*)(OnnxGraph*, const Layer&, const std::string&, const std::string&);
const std::map<std::string, AddOp>& SequenceOps() {
  static const auto* ops = new std::map<std::string, AddOp>{{"LSTM", AddRecurrentOp},
                                                            {"GRU", AddRecurrentOp},
                                                            {"SimpleRNN", AddRecurrentOp},
                                                            {"Bidirectional", AddRecurrentOp},
                                                            {"MultiHeadAttention", AddAttentionOp},
                                                            {"PositionEmbedding", AddAttentionOp}};
  return *ops;
}

absl::Status RefuseMask(const Layer& layer) {
  if (!layer.makes_mask()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "ONNX export: layer ", layer.name(), " (", layer.type(),
      ") masks padding steps, and ONNX's recurrent operators take sequence lengths, not "
      "masks; export the model without the mask (mask_zero = false, no Masking)"));
}

// `graph` in a ModelProto: IR version 8, opset 17.
absl::StatusOr<std::string> ModelProtoBytes(const OnnxGraph& graph) {
  WireWriter opset, onnx;
  opset.Bytes(1, "");
  opset.Varint(2, 17);
  onnx.Varint(1, 8);  // ir_version
  onnx.Bytes(2, "ringwork");
  onnx.Bytes(7, graph.data());
  onnx.Bytes(8, opset.data());
  if (onnx.data().size() > (uint64_t{1} << 31) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ONNX export: ", onnx.data().size(),
                     " bytes is over protobuf's 2 GiB limit (weights in "
                     "external data files are not written yet)"));
  }
  return onnx.data();
}

}  // namespace

absl::StatusOr<std::string> OnnxModelBytes(const Model& model) {
  if (!model.built()) {
    return absl::FailedPreconditionError(
        "cannot export a model that is not built (call Fit, Evaluate or Build first)");
  }
  OnnxGraph g;
  g.Name(model.model_name_);
  std::vector<std::string> tensor(model.layers_.size() + 1);  // Per activation (0: the input).
  tensor[0] = "input";
  g.Value(11, "input", model.input_shape_);
  for (size_t l = 0; l < model.layers_.size(); ++l) {
    // A shared layer's later call: the layer it runs, with the owner's values,
    // written as a layer of its own (the shared weights once more).
    const auto* call = dynamic_cast<const SharedLayerCall*>(model.layers_[l].get());
    const Layer& layer = call != nullptr ? call->WithOwnerValues() : *model.layers_[l];
    const std::string name = layer.name(), type = layer.type();
    std::vector<std::string> in;
    for (int a : model.inputs_[l]) in.push_back(tensor[static_cast<size_t>(a)]);
    const Shape& in_shape = model.inputs_[l][0] == 0
                                ? model.input_shape_
                                : model.layers_[model.inputs_[l][0] - 1]->output_shape();
    tensor[l + 1] = name;
    RW_RETURN_IF_ERROR(RefuseMask(layer));
    if (type == "Dropout" || type == "RandomFlip") {
      tensor[l + 1] = in[0];  // Nothing in inference.
    } else if (type == "Flatten") {
      g.Node("Flatten", {in[0]}, name, {{"axis", {1}}});
    } else if (type == "Reshape") {
      std::vector<int64_t> shape = {0};  // 0: the input's batch, whatever it is.
      for (int64_t d : layer.output_shape()) shape.push_back(d);
      g.Int64Initializer(name + "/shape", shape);
      g.Node("Reshape", {in[0], name + "/shape"}, name);
    } else if (type == "Dense") {
      std::string x = in[0];
      if (in_shape.size() != 1 && layer.output_shape().size() == 1) {  // flatten_input
        g.Node("Flatten", {x}, name + "/flat", {{"axis", {1}}});
        x = name + "/flat";
      }
      const std::vector<Variable*> vars = layer.weights();
      for (const Variable* v : vars) g.Initializer(v->name, v->value.shape(), v->value.data());
      const std::string linear = vars.size() > 1 ? name + "/linear" : name + "/matmul";
      g.Node("MatMul", {x, vars[0]->name}, name + "/matmul");
      if (vars.size() > 1) g.Node("Add", {name + "/matmul", vars[1]->name}, linear);
      RW_RETURN_IF_ERROR(AddActivation(&g, layer.activation_name(), name, linear, name));
    } else if (type == "Activation") {
      RW_RETURN_IF_ERROR(AddActivation(&g, layer.activation_name(), name, in[0], name));
    } else if (type == "Add" || type == "Multiply") {
      const std::string op = type == "Add" ? "Add" : "Mul";
      std::string sum = in[0];
      for (size_t i = 1; i < in.size(); ++i) {
        const std::string out = i + 1 == in.size() ? name : absl::StrCat(name, "/", i);
        g.Node(op, {sum, in[i]}, out);
        sum = out;
      }
    } else if (type == "Concatenate") {
      g.Node("Concat", in, name, {{"axis", {-1}}});
    } else if (type == "Conv2D" || type == "Conv1D") {
      const nlohmann::json config = layer.keras_config();
      const std::vector<Variable*> vars = layer.weights();
      const Tensor oihw = OihwFromHwio(vars[0]->value);
      g.Initializer(vars[0]->name, oihw.shape(), oihw.data());
      std::vector<std::string> conv_in = {in[0], vars[0]->name};
      if (vars.size() > 1) {  // use_bias=false: none (ONNX's B is optional).
        g.Initializer(vars[1]->name, vars[1]->value.shape(), vars[1]->value.data());
        conv_in.push_back(vars[1]->name);
      }
      ChannelsFirst(&g, "Conv", conv_in, name, name + "/linear", in_shape,
                    WindowAttributes(config, "kernel_size", in_shape, layer.output_shape()));
      RW_RETURN_IF_ERROR(AddActivation(&g, layer.activation_name(), name, name + "/linear", name));
    } else if (type == "MaxPooling2D" || type == "AveragePooling2D" || type == "MaxPooling1D" ||
               type == "AveragePooling1D") {
      ChannelsFirst(
          &g, type.rfind("Max", 0) == 0 ? "MaxPool" : "AveragePool", {in[0]}, name, name, in_shape,
          WindowAttributes(layer.keras_config(), "pool_size", in_shape, layer.output_shape()));
    } else if (type.rfind("Global", 0) == 0 && type.find("Pooling") != std::string::npos) {
      // Over every axis between the batch and the channels.
      std::vector<int64_t> axes;
      for (size_t a = 1; a < in_shape.size(); ++a) axes.push_back(static_cast<int64_t>(a));
      g.Node(type.find("Max") != std::string::npos ? "ReduceMax" : "ReduceMean", {in[0]}, name,
             {{"axes", axes}, {"keepdims", {0}}});
    } else if (type == "BatchNormalization" || type == "SyncBatchNormalization") {
      // Inference: x * gamma / sqrt(moving_variance + epsilon) + (beta - mean * that).
      const nlohmann::json config = layer.keras_config();
      const double epsilon = config["epsilon"].get<double>();
      std::map<std::string, const Variable*> vars;
      for (const Variable* v : layer.weights()) vars[v->name.substr(name.size() + 1)] = v;
      const int64_t channels = vars.at("moving_mean")->size();
      std::vector<float> scale(static_cast<size_t>(channels)), shift(scale.size());
      for (int64_t c = 0; c < channels; ++c) {
        const double gamma = vars.count("gamma") ? vars.at("gamma")->value[c] : 1.0;
        const double beta = vars.count("beta") ? vars.at("beta")->value[c] : 0.0;
        const double mul = gamma / std::sqrt(vars.at("moving_variance")->value[c] + epsilon);
        scale[static_cast<size_t>(c)] = static_cast<float>(mul);
        shift[static_cast<size_t>(c)] =
            static_cast<float>(beta - vars.at("moving_mean")->value[c] * mul);
      }
      g.Initializer(name + "/scale", {channels}, scale.data());
      g.Initializer(name + "/shift", {channels}, shift.data());
      g.Node("Mul", {in[0], name + "/scale"}, name + "/scaled");
      g.Node("Add", {name + "/scaled", name + "/shift"}, name);
    } else if (type == "LayerNormalization") {
      const nlohmann::json config = layer.keras_config();
      std::map<std::string, const Variable*> vars;
      for (const Variable* v : layer.weights()) vars[v->name.substr(name.size() + 1)] = v;
      const int64_t dim = in_shape.back();
      const std::vector<float> ones(static_cast<size_t>(dim), 1.f), zeros(ones.size(), 0.f);
      g.Initializer(name + "/gamma", {dim},
                    vars.count("gamma") ? vars.at("gamma")->value.data() : ones.data());
      g.Initializer(name + "/beta", {dim},
                    vars.count("beta") ? vars.at("beta")->value.data() : zeros.data());
      g.Node("LayerNormalization", {in[0], name + "/gamma", name + "/beta"}, name, {{"axis", {-1}}},
             {{"epsilon", config["epsilon"].get<float>()}});
    } else if (type == "Embedding") {
      const Variable* table = layer.weights()[0];
      g.Initializer(table->name, table->value.shape(), table->value.data());
      g.Node("Cast", {in[0]}, name + "/ids", {{"to", {kOnnxInt64}}});
      g.Node("Gather", {table->name, name + "/ids"}, name, {{"axis", {0}}});
    } else if (SequenceOps().count(type)) {
      RW_RETURN_IF_ERROR(SequenceOps().at(type)(&g, layer, in[0], name));
    } else if (type == "SliceLastAxis") {
      const nlohmann::json config = layer.keras_config();
      g.Int64Initializer(name + "/starts", {config["begin"].get<int64_t>()});
      g.Int64Initializer(name + "/ends", {config["end"].get<int64_t>()});
      g.Int64Initializer(name + "/axes", {-1});
      g.Node("Slice", {in[0], name + "/starts", name + "/ends", name + "/axes"}, name);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("ONNX export: layer ", name, " (", type, ") is not exported yet",
                       type == "InputLayer" ? " (a model of several inputs)" : ""));
    }
  }
  for (int a : model.outputs_) {
    const Layer& layer = *model.layers_[static_cast<size_t>(a - 1)];
    if (tensor[static_cast<size_t>(a)] != layer.name()) {
      g.Node("Identity", {tensor[static_cast<size_t>(a)]}, layer.name());
    }
    g.Value(12, layer.name(), layer.output_shape());
  }
  return ModelProtoBytes(g);
}

absl::Status ExportOnnx(const Model& model, const std::string& path) {
  absl::Status written;
  if (model.strategy()->is_chief()) {
    absl::StatusOr<std::string> bytes = OnnxModelBytes(model);
    written = bytes.ok() ? WriteFileAtomically(path, *bytes, "ONNX export") : bytes.status();
  }
  return model.strategy()->ShareChiefStatus(written);
}

}  // namespace ringwork
