"""PyTorch's MultiheadAttention (Debian's python3-torch) as self-attention on
Keras-layout weights: forward, then backward from a given output gradient.

  python3 torch_attention.py CASE.json   # prints a JSON of y, dx and the weights' gradients

A case's optional "mask" ([batch x steps] of 0 and 1) marks padding keys:
PyTorch's key_padding_mask.

Layout mapping (Keras -> PyTorch, batch_first, heads x key_dim = features):
  in_proj_weight = [query/kernel; key/kernel; value/kernel], each [features,
  heads x dim] transposed (heads outermost in both); in_proj_bias = the three
  biases flattened; out_proj.weight = attention_output/kernel as [heads x
  value_dim, features], transposed; out_proj.bias = attention_output/bias.
Everything runs in float64; gradients come back in Keras' layouts, in Keras'
variable order (query kernel, bias, key kernel, bias, value kernel, bias, output
kernel, bias).
"""
import json
import sys

import torch


def main():
    case = json.load(open(sys.argv[1]))
    batch, steps, features, heads = case["batch"], case["steps"], case["features"], case["heads"]
    dt = torch.float64
    w = [torch.tensor(v, dtype=dt) for v in case["weights"]]
    layer = torch.nn.MultiheadAttention(features, heads, batch_first=True).to(dt)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([w[i].reshape(features, -1).t() for i in (0, 2, 4)]))
        layer.in_proj_bias.copy_(torch.cat([w[i].reshape(-1) for i in (1, 3, 5)]))
        layer.out_proj.weight.copy_(w[6].reshape(-1, features).t())
        layer.out_proj.bias.copy_(w[7])
    x = torch.tensor(case["x"], dtype=dt).reshape(batch, steps, features).requires_grad_(True)
    padding = None
    if "mask" in case:
        padding = torch.tensor(case["mask"]).reshape(batch, steps) == 0
    y, _ = layer(x, x, x, need_weights=False, key_padding_mask=padding)
    y.backward(torch.tensor(case["dy"], dtype=dt).reshape(y.shape))
    g_in, g_in_bias = layer.in_proj_weight.grad, layer.in_proj_bias.grad
    grads = []
    for part in range(3):
        grads.append(g_in[part * features:(part + 1) * features].t().reshape(-1).tolist())
        grads.append(g_in_bias[part * features:(part + 1) * features].reshape(-1).tolist())
    grads.append(layer.out_proj.weight.grad.t().reshape(-1).tolist())
    grads.append(layer.out_proj.bias.grad.reshape(-1).tolist())
    print(json.dumps({"y": y.detach().reshape(-1).tolist(),
                      "dx": x.grad.reshape(-1).tolist(), "grads": grads}))


if __name__ == "__main__":
    main()
