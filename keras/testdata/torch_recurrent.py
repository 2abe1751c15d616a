"""PyTorch's RNN (tanh), LSTM and GRU (Debian's python3-torch, an independent implementation)
on Keras-layout weights: forward, then backward from a given output gradient.

  python3 torch_recurrent.py CASE.json   # prints a JSON of y, dx and the weights' gradients

Layout mapping (Keras -> PyTorch, one layer, batch_first):
  SimpleRNN: PyTorch's RNN, weight_ih = kernel^T, weight_hh = recurrent_kernel^T,
        bias_ih = bias, bias_hh = 0.
  LSTM: weight_ih = kernel^T, weight_hh = recurrent_kernel^T, bias_ih = bias,
        bias_hh = 0 (Keras has one bias); gates i, f, g(c), o in both.
  GRU (reset_after=True only: PyTorch's GRU applies r after W_hn h + b_hn):
        Keras' gates [z, r, h] are PyTorch's [r, z, n] reordered;
        bias_ih = bias[0], bias_hh = bias[1] (reordered alike).
Everything runs in float64; gradients come back in Keras' layouts.
"""
import json
import sys

import torch


def blocks(t, units, order):
    """Rows of t ([gates * units, ...]) as the gate blocks in `order`."""
    return torch.cat([t[g * units:(g + 1) * units] for g in order], dim=0)


def main():
    case = json.load(open(sys.argv[1]))
    units, features = case["units"], case["features"]
    batch, steps = case["batch"], case["steps"]
    lstm, rnn = case["cell"] == "lstm", case["cell"] == "rnn"
    gates = 4 if lstm else 1 if rnn else 3
    dt = torch.float64
    kernel = torch.tensor(case["kernel"], dtype=dt).reshape(features, gates * units)
    recurrent = torch.tensor(case["recurrent"], dtype=dt).reshape(units, gates * units)
    bias = torch.tensor(case["bias"], dtype=dt).reshape(-1, gates * units)
    # Keras [z, r, h] -> PyTorch [r, z, n]; the same permutation maps back.
    order = [0, 1, 2, 3] if lstm else [0] if rnn else [1, 0, 2]
    layer = (torch.nn.LSTM if lstm else torch.nn.RNN if rnn else torch.nn.GRU)(
        features, units, batch_first=True).to(dt)
    with torch.no_grad():
        layer.weight_ih_l0.copy_(blocks(kernel.t(), units, order))
        layer.weight_hh_l0.copy_(blocks(recurrent.t(), units, order))
        layer.bias_ih_l0.copy_(blocks(bias[0], units, order))
        layer.bias_hh_l0.copy_(
            blocks(bias[1], units, order) if bias.shape[0] == 2 else torch.zeros_like(bias[0]))
    x = torch.tensor(case["x"], dtype=dt).reshape(batch, steps, features).requires_grad_(True)
    out, _ = layer(x)
    y = out if case["return_sequences"] else out[:, -1, :]
    dy = torch.tensor(case["dy"], dtype=dt).reshape(y.shape)
    y.backward(dy)
    kernel_grad = blocks(layer.weight_ih_l0.grad, units, order).t()
    recurrent_grad = blocks(layer.weight_hh_l0.grad, units, order).t()
    bias_ih = blocks(layer.bias_ih_l0.grad, units, order)
    bias_hh = blocks(layer.bias_hh_l0.grad, units, order)
    # One Keras bias takes both of PyTorch's gradients (they are equal: b_ih + b_hh).
    bias_grad = torch.stack([bias_ih, bias_hh]) if bias.shape[0] == 2 else bias_ih
    flat = lambda t: t.detach().reshape(-1).tolist()
    print(json.dumps({"y": flat(y), "dx": flat(x.grad), "kernel_grad": flat(kernel_grad),
                      "recurrent_grad": flat(recurrent_grad), "bias_grad": flat(bias_grad)}))


if __name__ == "__main__":
    main()
