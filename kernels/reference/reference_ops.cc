#include "kernels/reference/reference_ops.h"

#include <cmath>
#include <limits>
#include <vector>

namespace ringwork {
namespace reference {

void DenseForward(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t k,
                  int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias[j];
      for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(x[i * k + p]) * w[p * n + j];
      y[i * n + j] = static_cast<float>(acc);
    }
  }
}

void DenseBackwardData(const float* dy, const float* w, float* dx, int64_t m, int64_t k,
                       int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += static_cast<double>(dy[i * n + j]) * w[p * n + j];
      dx[i * k + p] = static_cast<float>(acc);
    }
  }
}

void DenseBackwardWeights(const float* x, const float* dy, float* dw, float* dbias, int64_t m,
                          int64_t k, int64_t n) {
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < m; ++i) acc += static_cast<double>(x[i * k + p]) * dy[i * n + j];
      dw[p * n + j] = static_cast<float>(acc);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < m; ++i) acc += dy[i * n + j];
    dbias[j] = static_cast<float>(acc);
  }
}

namespace {

// Index helpers for NHWC activations and HWIO kernels.
struct ConvIndex {
  const Conv2DShape& s;
  int64_t oh, ow;
  int64_t X(int64_t b, int64_t h, int64_t w, int64_t c) const {
    return ((b * s.height + h) * s.width + w) * s.in_channels + c;
  }
  int64_t Y(int64_t b, int64_t h, int64_t w, int64_t f) const {
    return ((b * oh + h) * ow + w) * s.out_channels + f;
  }
  int64_t W(int64_t kh, int64_t kw, int64_t c, int64_t f) const {
    return ((kh * s.kernel_w + kw) * s.in_channels + c) * s.out_channels + f;
  }
};

// Calls fn(b, oy, ox, f, iy, ix, kh, kw) for every (output, tap) pair that lands
// inside the input.
template <typename Fn>
void ForEachTap(const Conv2DShape& s, Fn fn) {
  const Window1D r = s.rows(), c = s.cols();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oy = 0; oy < r.out; ++oy)
      for (int64_t ox = 0; ox < c.out; ++ox)
        for (int64_t kh = 0; kh < s.kernel_h; ++kh)
          for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
            const int64_t iy = oy * s.stride_h + kh * s.dilation_h - r.pad_before;
            const int64_t ix = ox * s.stride_w + kw * s.dilation_w - c.pad_before;
            if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
            fn(b, oy, ox, iy, ix, kh, kw);
          }
}

}  // namespace

void Conv2DForward(const Conv2DShape& s, const float* x, const float* w, const float* bias,
                   float* y) {
  const ConvIndex at{s, s.rows().out, s.cols().out};
  std::vector<double> acc(static_cast<size_t>(s.batch * at.oh * at.ow * s.out_channels), 0.0);
  ForEachTap(
      s, [&](int64_t b, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t kh, int64_t kw) {
        for (int64_t f = 0; f < s.out_channels; ++f) {
          double sum = 0;
          for (int64_t c = 0; c < s.in_channels; ++c) {
            sum += static_cast<double>(x[at.X(b, iy, ix, c)]) * w[at.W(kh, kw, c, f)];
          }
          acc[at.Y(b, oy, ox, f)] += sum;
        }
      });
  for (size_t i = 0; i < acc.size(); ++i) {
    y[i] = static_cast<float>(acc[i] + bias[i % s.out_channels]);
  }
}

void Conv2DBackwardData(const Conv2DShape& s, const float* dy, const float* w, float* dx) {
  const ConvIndex at{s, s.rows().out, s.cols().out};
  std::vector<double> acc(static_cast<size_t>(s.batch * s.height * s.width * s.in_channels), 0.0);
  ForEachTap(
      s, [&](int64_t b, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t kh, int64_t kw) {
        for (int64_t c = 0; c < s.in_channels; ++c) {
          double sum = 0;
          for (int64_t f = 0; f < s.out_channels; ++f) {
            sum += static_cast<double>(dy[at.Y(b, oy, ox, f)]) * w[at.W(kh, kw, c, f)];
          }
          acc[at.X(b, iy, ix, c)] += sum;
        }
      });
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<float>(acc[i]);
}

void Conv2DBackwardWeights(const Conv2DShape& s, const float* x, const float* dy, float* dw,
                           float* dbias) {
  const ConvIndex at{s, s.rows().out, s.cols().out};
  std::vector<double> acc(
      static_cast<size_t>(s.kernel_h * s.kernel_w * s.in_channels * s.out_channels), 0.0);
  ForEachTap(
      s, [&](int64_t b, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t kh, int64_t kw) {
        for (int64_t c = 0; c < s.in_channels; ++c)
          for (int64_t f = 0; f < s.out_channels; ++f)
            acc[at.W(kh, kw, c, f)] +=
                static_cast<double>(x[at.X(b, iy, ix, c)]) * dy[at.Y(b, oy, ox, f)];
      });
  for (size_t i = 0; i < acc.size(); ++i) dw[i] = static_cast<float>(acc[i]);
  for (int64_t f = 0; f < s.out_channels; ++f) {
    double sum = 0;
    for (int64_t i = 0; i < s.batch * at.oh * at.ow; ++i) sum += dy[i * s.out_channels + f];
    dbias[f] = static_cast<float>(sum);
  }
}

namespace {

// Calls fn(out_index, list of input indices in the window).
template <typename Fn>
void ForEachWindow(const Pool2DShape& s, Fn fn) {
  const Window1D r = s.rows(), c = s.cols();
  std::vector<int64_t> inputs;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oy = 0; oy < r.out; ++oy)
      for (int64_t ox = 0; ox < c.out; ++ox)
        for (int64_t ch = 0; ch < s.channels; ++ch) {
          inputs.clear();
          for (int64_t ky = 0; ky < s.pool_h; ++ky)
            for (int64_t kx = 0; kx < s.pool_w; ++kx) {
              const int64_t iy = oy * s.stride_h + ky - r.pad_before;
              const int64_t ix = ox * s.stride_w + kx - c.pad_before;
              if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
              inputs.push_back(((b * s.height + iy) * s.width + ix) * s.channels + ch);
            }
          fn(((b * r.out + oy) * c.out + ox) * s.channels + ch, inputs);
        }
}

}  // namespace

void Pool2DForward(const Pool2DShape& s, const float* x, float* y) {
  ForEachWindow(s, [&](int64_t out, const std::vector<int64_t>& in) {
    if (s.kind == PoolKind::kMax) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t i : in) best = std::max(best, x[i]);
      y[out] = best;
    } else {
      double sum = 0;
      for (int64_t i : in) sum += x[i];
      y[out] = static_cast<float>(sum / static_cast<double>(in.size()));
    }
  });
}

void Pool2DBackward(const Pool2DShape& s, const float* x, const float* dy, float* dx) {
  for (int64_t i = 0; i < s.batch * s.height * s.width * s.channels; ++i) dx[i] = 0;
  ForEachWindow(s, [&](int64_t out, const std::vector<int64_t>& in) {
    if (s.kind == PoolKind::kMax) {
      int64_t best = in[0];
      for (int64_t i : in) {
        if (x[i] > x[best]) best = i;
      }
      dx[best] += dy[out];
    } else {
      for (int64_t i : in) dx[i] += dy[out] / static_cast<float>(in.size());
    }
  });
}

void ActivationForward(Activation a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    double r = v;
    switch (a) {
      case Activation::kRelu:
        r = v > 0 ? v : 0;
        break;
      case Activation::kTanh:
        r = std::tanh(v);
        break;
      case Activation::kSigmoid:
        r = 1 / (1 + std::exp(-v));
        break;
      case Activation::kGelu:
        r = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        break;
      case Activation::kLinear:
        break;
    }
    y[i] = static_cast<float>(r);
  }
}

void ActivationBackward(Activation a, const float* x, const float* dy, float* dx, int64_t n) {
  const double kPi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    double d = 1;
    switch (a) {
      case Activation::kRelu:
        d = v > 0 ? 1 : 0;
        break;
      case Activation::kTanh:
        d = 1 - std::tanh(v) * std::tanh(v);
        break;
      case Activation::kSigmoid: {
        const double s = 1 / (1 + std::exp(-v));
        d = s * (1 - s);
        break;
      }
      case Activation::kGelu:
        d = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) +
            v * std::exp(-v * v / 2) / std::sqrt(2 * kPi);
        break;
      case Activation::kLinear:
        break;
    }
    dx[i] = static_cast<float>(d * dy[i]);
  }
}

void SoftmaxForward(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double max = x[r * cols];
    for (int64_t c = 1; c < cols; ++c) max = std::max<double>(max, x[r * cols + c]);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - max);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>(std::exp(x[r * cols + c] - max) / sum);
    }
  }
}

void SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c)
      dot += static_cast<double>(y[r * cols + c]) * dy[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] = static_cast<float>(y[r * cols + c] * (dy[r * cols + c] - dot));
    }
  }
}

void SgdUpdate(const SgdOptions& o, double* param, const double* grad, double* velocity,
               int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    param[i] -= static_cast<double>(o.learning_rate) * o.weight_decay * param[i];
    if (o.momentum == 0) {
      param[i] -= o.learning_rate * grad[i];
      continue;
    }
    velocity[i] = o.momentum * velocity[i] - o.learning_rate * grad[i];
    param[i] += o.nesterov ? o.momentum * velocity[i] - o.learning_rate * grad[i] : velocity[i];
  }
}

void RmspropUpdate(const RmspropOptions& o, double* param, const double* grad, double* velocity,
                   double* momentum, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    param[i] -= static_cast<double>(o.learning_rate) * o.weight_decay * param[i];
    velocity[i] = o.rho * velocity[i] + (1.0 - o.rho) * grad[i] * grad[i];
    const double step = o.learning_rate * grad[i] / std::sqrt(velocity[i] + o.epsilon);
    if (o.momentum != 0) {
      momentum[i] = o.momentum * momentum[i] + step;
      param[i] -= momentum[i];
    } else {
      param[i] -= step;
    }
  }
}

void AdagradUpdate(const AdagradOptions& o, double* param, const double* grad, double* accumulator,
                   int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    param[i] -= static_cast<double>(o.learning_rate) * o.weight_decay * param[i];
    accumulator[i] += grad[i] * grad[i];
    param[i] -= o.learning_rate * grad[i] / std::sqrt(accumulator[i] + o.epsilon);
  }
}

void AdamUpdate(const AdamOptions& o, int64_t step, double* param, const double* grad, double* m,
                double* v, int64_t n) {
  const double t = static_cast<double>(step);
  const double lr_t =
      o.learning_rate * std::sqrt(1 - std::pow(o.beta2, t)) / (1 - std::pow(o.beta1, t));
  for (int64_t i = 0; i < n; ++i) {
    param[i] -= o.learning_rate * o.weight_decay * param[i];
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * grad[i];
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * grad[i] * grad[i];
    param[i] -= lr_t * m[i] / (std::sqrt(v[i]) + o.epsilon);
  }
}

}  // namespace reference
}  // namespace ringwork
