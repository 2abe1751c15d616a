// MultiHeadAttention and PositionEmbedding in ONNX as their parts (ONNX has no
// attention operator in opset 17):
//
//   RW_RETURN_IF_ERROR(AddAttentionOp(&graph, layer, "input", "multi_head_attention"));
//
// Attention: the q, k, v projections (MatMul + Add on [batch, steps, features]),
// heads split by Reshape and Transpose, softmax(q k^T / sqrt(key_dim)) over the
// keys, times v, heads joined and projected back. PositionEmbedding: the first
// `steps` rows of its table added. Masked models are refused before this.
#ifndef RINGWORK_KERAS_ONNX_ATTENTION_H_
#define RINGWORK_KERAS_ONNX_ATTENTION_H_

#include <string>

#include "absl/status/status.h"
#include "keras/layer.h"
#include "keras/onnx_graph.h"

namespace ringwork {

// `in`: the layer's input, [batch, steps, features]; `out`: its output.
absl::Status AddAttentionOp(OnnxGraph* g, const Layer& layer, const std::string& in,
                            const std::string& out);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_ONNX_ATTENTION_H_
