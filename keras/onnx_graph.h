// An ONNX graph being written, for the exporters (keras/onnx_export.cc and the
// op groups beside it): nodes, initializers and the graph's inputs and outputs,
// as protobuf fields by number (onnx.proto, IR version 8).
//
//   OnnxGraph g;
//   g.Initializer("dense/kernel", {4, 3}, kernel);
//   g.Node("MatMul", {"input", "dense/kernel"}, "dense");
#ifndef RINGWORK_KERAS_ONNX_GRAPH_H_
#define RINGWORK_KERAS_ONNX_GRAPH_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/proto_wire.h"
#include "tensor/tensor.h"

namespace ringwork {

constexpr int kOnnxFloat = 1, kOnnxInt64 = 7;  // TensorProto.DataType
constexpr int kOnnxAttributeFloat = 1, kOnnxAttributeInt = 2, kOnnxAttributeString = 3,
              kOnnxAttributeInts = 7;  // AttributeType

class OnnxGraph {
 public:
  // `attributes`: (name, ints) pairs, INT or INTS as ONNX declares the name;
  // `floats`: FLOAT attributes.
  // `more_outputs`: a second and later output (LSTM's Y_h); `strings`: STRING
  // attributes (LSTM's direction).
  void Node(const std::string& op, const std::vector<std::string>& inputs,
            const std::string& output,
            const std::vector<std::pair<std::string, std::vector<int64_t>>>& attributes = {},
            const std::vector<std::pair<std::string, float>>& floats = {},
            const std::vector<std::string>& more_outputs = {},
            const std::vector<std::pair<std::string, std::string>>& strings = {}) {
    WireWriter node;
    for (const std::string& in : inputs) node.Bytes(1, in);
    node.Bytes(2, output);
    for (const std::string& o : more_outputs) node.Bytes(2, o);
    node.Bytes(3, absl::StrCat(output, "/", op));
    node.Bytes(4, op);
    for (const auto& [name, values] : attributes) {
      WireWriter a;
      // ONNX's list attributes stay lists with one value.
      static const std::set<std::string> lists = {"axes", "dilations", "kernel_shape",
                                                  "pads", "perm",      "strides"};
      const bool list = lists.count(name) > 0;
      a.Bytes(1, name);
      if (values.size() == 1 && !list) {
        a.Varint(3, static_cast<uint64_t>(values[0]));
        a.Varint(20, kOnnxAttributeInt);
      } else {
        for (int64_t v : values) a.Varint(8, static_cast<uint64_t>(v));
        a.Varint(20, kOnnxAttributeInts);
      }
      node.Bytes(5, a.data());
    }
    for (const auto& [name, value] : floats) {
      WireWriter a;
      a.Bytes(1, name);
      a.Float(2, value);
      a.Varint(20, kOnnxAttributeFloat);
      node.Bytes(5, a.data());
    }
    for (const auto& [name, value] : strings) {
      WireWriter a;
      a.Bytes(1, name);
      a.Bytes(4, value);
      a.Varint(20, kOnnxAttributeString);
      node.Bytes(5, a.data());
    }
    graph_.Bytes(1, node.data());
  }
  void Initializer(const std::string& name, const Shape& shape, const float* values) {
    WireWriter t;
    for (int64_t d : shape) t.Varint(1, static_cast<uint64_t>(d));
    t.Varint(2, kOnnxFloat);
    t.Bytes(8, name);
    t.Bytes(9, absl::string_view(reinterpret_cast<const char*>(values),
                                 sizeof(float) * static_cast<size_t>(NumElements(shape))));
    graph_.Bytes(5, t.data());
  }
  void Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
    WireWriter t;
    t.Varint(1, values.size());
    t.Varint(2, kOnnxInt64);
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
    tensor_type.Varint(1, kOnnxFloat);
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

}  // namespace ringwork

#endif  // RINGWORK_KERAS_ONNX_GRAPH_H_
