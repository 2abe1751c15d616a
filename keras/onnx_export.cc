// ONNX's protobuf messages written by field number (onnx.proto, IR version 8):
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto.
#include "keras/onnx_export.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "io/proto_wire.h"

namespace ringwork {
namespace {

constexpr int kFloat = 1, kInt64 = 7;                 // TensorProto.DataType
constexpr int kAttributeInt = 2, kAttributeInts = 7;  // AttributeProto.AttributeType

// A graph being written: its nodes, initializers and the name of each of the
// model's activations.
class OnnxGraph {
 public:
  // `attributes`: (name, ints) pairs; one value makes an INT attribute.
  void Node(const std::string& op, const std::vector<std::string>& inputs,
            const std::string& output,
            const std::vector<std::pair<std::string, std::vector<int64_t>>>& attributes = {}) {
    WireWriter node;
    for (const std::string& in : inputs) node.Bytes(1, in);
    node.Bytes(2, output);
    node.Bytes(3, absl::StrCat(output, "/", op));
    node.Bytes(4, op);
    for (const auto& [name, values] : attributes) {
      WireWriter a;
      a.Bytes(1, name);
      if (values.size() == 1) {
        a.Varint(3, static_cast<uint64_t>(values[0]));
        a.Varint(20, kAttributeInt);
      } else {
        for (int64_t v : values) a.Varint(8, static_cast<uint64_t>(v));
        a.Varint(20, kAttributeInts);
      }
      node.Bytes(5, a.data());
    }
    graph_.Bytes(1, node.data());
  }
  void Initializer(const std::string& name, const Shape& shape, const float* values) {
    WireWriter t;
    for (int64_t d : shape) t.Varint(1, static_cast<uint64_t>(d));
    t.Varint(2, kFloat);
    t.Bytes(8, name);
    t.Bytes(9, absl::string_view(reinterpret_cast<const char*>(values),
                                 sizeof(float) * static_cast<size_t>(NumElements(shape))));
    graph_.Bytes(5, t.data());
  }
  void Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
    WireWriter t;
    t.Varint(1, values.size());
    t.Varint(2, kInt64);
    t.Bytes(8, name);
    t.Bytes(9, absl::string_view(reinterpret_cast<const char*>(values.data()),
                                 sizeof(int64_t) * values.size()));
    graph_.Bytes(5, t.data());
  }
  // A float tensor of [batch, shape...] (field 11: an input, 12: an output).
  void Value(int field, const std::string& name, const Shape& shape) {
    WireWriter dims;
    WireWriter batch;
    batch.Bytes(2, "batch");  // dim_param: any size.
    dims.Bytes(1, batch.data());
    for (int64_t d : shape) {
      WireWriter dim;
      dim.Varint(1, static_cast<uint64_t>(d));
      dims.Bytes(1, dim.data());
    }
    WireWriter tensor_type, type, value;
    tensor_type.Varint(1, kFloat);
    tensor_type.Bytes(2, dims.data());
    type.Bytes(1, tensor_type.data());
    value.Bytes(1, name);
    value.Bytes(2, type.data());
    graph_.Bytes(field, value.data());
  }
  const std::string& data() const { return graph_.data(); }
  void Name(const std::string& name) { graph_.Bytes(2, name); }

 private:
  WireWriter graph_;
};

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

}  // namespace

absl::StatusOr<std::string> OnnxModelBytes(const Model& model) {
  if (!model.built()) {
    return absl::FailedPreconditionError(
        "cannot export a model that is not built (call Fit, Evaluate or Build first)");
  }
  OnnxGraph g;
  g.Name(model.model_name_);
  // The tensor that holds each activation (0: the input).
  std::vector<std::string> tensor(model.layers_.size() + 1);
  tensor[0] = "input";
  g.Value(11, "input", model.input_shape_);
  for (size_t l = 0; l < model.layers_.size(); ++l) {
    const Layer& layer = *model.layers_[l];
    const std::string name = layer.name(), type = layer.type();
    std::vector<std::string> in;
    for (int a : model.inputs_[l]) in.push_back(tensor[static_cast<size_t>(a)]);
    const Shape& in_shape = model.inputs_[l][0] == 0
                                ? model.input_shape_
                                : model.layers_[model.inputs_[l][0] - 1]->output_shape();
    tensor[l + 1] = name;
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
      if (in_shape.size() != 1) {  // Dense flattens what it reads.
        g.Node("Flatten", {x}, name + "/flat", {{"axis", {1}}});
        x = name + "/flat";
      }
      const std::vector<Variable*> vars = layer.variables();
      for (const Variable* v : vars) g.Initializer(v->name, v->value.shape(), v->value.data());
      g.Node("MatMul", {x, vars[0]->name}, name + "/matmul");
      g.Node("Add", {name + "/matmul", vars[1]->name}, name + "/linear");
      RW_RETURN_IF_ERROR(AddActivation(&g, layer.activation_name(), name, name + "/linear", name));
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
  WireWriter opset, onnx;
  opset.Bytes(1, "");
  opset.Varint(2, 17);
  onnx.Varint(1, 8);  // ir_version
  onnx.Bytes(2, "ringwork");
  onnx.Bytes(7, g.data());
  onnx.Bytes(8, opset.data());
  if (onnx.data().size() > (uint64_t{1} << 31) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ONNX export: ", onnx.data().size(),
                     " bytes is over protobuf's 2 GiB limit (weights in "
                     "external data files are not written yet)"));
  }
  return onnx.data();
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
