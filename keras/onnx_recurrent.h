// SimpleRNN, LSTM, GRU and Bidirectional layers as ONNX's RNN, LSTM and GRU ops (opset 17, layout
// 0: time first), with transposes around them.
//
//   RW_RETURN_IF_ERROR(AddRecurrentOp(&graph, layer, "input", "lstm"));
//
// Weight layouts: ONNX's W is [1, gates x units, features] (Keras' kernel
// transposed), R [1, gates x units, units], B [1, 2 x gates x units] (input, then
// recurrent biases). ONNX's LSTM gates are i, o, f, c (Keras': i, f, c, o); its
// GRU's z, r, h as Keras', linear_before_reset = Keras' reset_after.
// Bidirectional: one op of direction "bidirectional" (the forward layer's weights,
// then the backward one's), its two outputs merged as merge_mode says.
#ifndef RINGWORK_KERAS_ONNX_RECURRENT_H_
#define RINGWORK_KERAS_ONNX_RECURRENT_H_

#include <string>

#include "absl/status/status.h"
#include "keras/layer.h"
#include "keras/onnx_graph.h"

namespace ringwork {

// `in`: the layer's input, [batch, steps, features]; `out`: its output.
absl::Status AddRecurrentOp(OnnxGraph* g, const Layer& layer, const std::string& in,
                            const std::string& out);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_ONNX_RECURRENT_H_
