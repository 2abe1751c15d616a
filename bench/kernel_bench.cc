// kernel_bench: GFLOP/s of the oneDNN kernels on the shapes Ringwork trains with,
// next to this machine's measured peak, in float32 and bfloat16; then the whole MLP
// training step (forward, backward, Adam) against the sum of its raw matmul times,
// and the whole CNN step (train's --model=cnn, batch 128), both also as samples/s:
// the rate train could reach with nothing but kernels; last, the all-reduce's
// element loops (float32 sum, bfloat16 conversions and sum).
//
//   bazel-bin/bench/kernel_bench [--threads=1] [--precision=both] [--runs=5]
//
// Shapes: the MLP 784-256-128-10 at batch 128, a small CNN on 28x28x1 inputs
// (conv 3x3x16, pool 2, conv 3x3x32, pool 2, dense 10) at batch 64, and the 3x3
// convolutions of --model=resnet's three stages at batch 128. Times are the
// median of --runs blocks, each at least --min_block_s long.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <vector>

#include "base/exit_code.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/dense.h"
#include "kernels/losses.h"
#include "kernels/optimizers.h"
#include "kernels/pooling.h"
#include "tensor/reduce.h"
#include "tensor/tensor.h"

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  int64_t runs = 5;
  double min_block_s = 0.2;
};

// Median over blocks of the average time of `fn`, in microseconds.
double TimeUs(const Timing& t, const std::function<void()>& fn) {
  fn();  // Warm up (first-touch, caches).
  int64_t iterations = 1;
  while (true) {  // Calibrate a block to last min_block_s.
    const auto start = Clock::now();
    for (int64_t i = 0; i < iterations; ++i) fn();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s >= t.min_block_s / 4 || iterations > (1 << 24)) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(iterations * t.min_block_s / s));
      break;
    }
    iterations *= 4;
  }
  std::vector<double> blocks;
  for (int64_t r = 0; r < t.runs; ++r) {
    const auto start = Clock::now();
    for (int64_t i = 0; i < iterations; ++i) fn();
    blocks.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iterations *
                     1e6);
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks[blocks.size() / 2];
}

// Single-thread FMA throughput: 12 independent accumulator chains (in registers:
// an array would go through memory) hide the FMA latency; 2 flops per lane. Each
// chain starts from its own value: chains that start alike compute alike, and the
// compiler merges them into one (a "peak" 12x too high, as this loop once had).
#define RW_FMA12(fma, m, b) \
  a0 = fma(a0, m, b);       \
  a1 = fma(a1, m, b);       \
  a2 = fma(a2, m, b);       \
  a3 = fma(a3, m, b);       \
  a4 = fma(a4, m, b);       \
  a5 = fma(a5, m, b);       \
  a6 = fma(a6, m, b);       \
  a7 = fma(a7, m, b);       \
  a8 = fma(a8, m, b);       \
  a9 = fma(a9, m, b);       \
  a10 = fma(a10, m, b);     \
  a11 = fma(a11, m, b)

__attribute__((target("avx512f"))) double PeakAvx512(int64_t iterations) {
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f),
         a3 = _mm512_set1_ps(1.3f), a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f),
         a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f), a8 = _mm512_set1_ps(1.8f),
         a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
  const __m512 m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  const auto start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    RW_FMA12(_mm512_fmadd_ps, m, b);
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  const __m512 sum =
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                    _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),
                                  _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
  if (_mm512_reduce_add_ps(sum) == 42.f) std::printf(" ");
  return iterations * 12.0 * 16 * 2 / s / 1e9;
}

__attribute__((target("avx2,fma"))) double PeakAvx2(int64_t iterations) {
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f),
         a3 = _mm256_set1_ps(1.3f), a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f),
         a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f), a8 = _mm256_set1_ps(1.8f),
         a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
  const __m256 m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  const auto start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    RW_FMA12(_mm256_fmadd_ps, m, b);
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                      _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7))));
  if (out[0] + a8[0] + a9[0] + a10[0] + a11[0] == 42.f) std::printf(" ");
  return iterations * 12.0 * 8 * 2 / s / 1e9;
}

double MeasurePeak() {
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    runs.push_back(__builtin_cpu_supports("avx512f") ? PeakAvx512(20000000) : PeakAvx2(20000000));
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

// `peak` is the float32 FMA peak; bfloat16 dot products (vdpbf16ps) do twice the
// work per instruction, so their peak is twice as high.
void Row(const char* op, const std::string& shape, Precision p, double us, double flops,
         double peak) {
  if (p == Precision::kBFloat16) peak *= 2;
  const double gflops = flops / (us * 1e-6) / 1e9;
  std::printf("%-22s %-34s %-9s %10.1f %10.1f %7.0f%%\n", op, shape.c_str(),
              std::string(PrecisionName(p)).c_str(), us, gflops, 100 * gflops / peak);
}

std::string Dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

// The MLP: three dense layers, ReLU between them, softmax cross-entropy, Adam.
struct Mlp {
  static constexpr int64_t kBatch = 128;
  const std::vector<int64_t> widths = {784, 256, 128, 10};
  std::vector<std::unique_ptr<DenseKernel>> dense;
  std::vector<std::unique_ptr<ActivationKernel>> relu;
  std::vector<Tensor> w, b, dw, db, m_w, v_w, m_b, v_b, act, pre, grad;
  Tensor x{{kBatch, 784}};
  std::vector<int32_t> labels = std::vector<int32_t>(kBatch);
  int64_t step = 0;

  absl::Status Init(KernelContext& ctx) {
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      auto k = DenseKernel::Create(ctx, {kBatch, widths[l], widths[l + 1]});
      if (!k.ok()) return k.status();
      dense.push_back(std::move(*k));
      for (auto* list : {&w, &dw, &m_w, &v_w}) list->emplace_back(Shape{widths[l], widths[l + 1]});
      for (auto* list : {&b, &db, &m_b, &v_b}) list->emplace_back(Shape{widths[l + 1]});
      pre.emplace_back(Shape{kBatch, widths[l + 1]});
      act.emplace_back(Shape{kBatch, widths[l + 1]});
      grad.emplace_back(Shape{kBatch, widths[l + 1]});
      if (l + 2 < widths.size()) {
        auto r = ActivationKernel::Create(ctx, Activation::kRelu, kBatch * widths[l + 1]);
        if (!r.ok()) return r.status();
        relu.push_back(std::move(*r));
      }
      for (int64_t i = 0; i < w.back().size(); ++i) w.back()[i] = 0.01f * ((i * 37) % 101 - 50);
    }
    for (int64_t i = 0; i < x.size(); ++i) x[i] = ((i * 13) % 255) / 255.f;
    for (int64_t i = 0; i < kBatch; ++i) labels[i] = static_cast<int32_t>(i % 10);
    grad.emplace_back(Shape{kBatch, 784});  // Unused input gradient slot.
    return absl::OkStatus();
  }

  void Step(KernelContext& ctx) {
    const size_t layers = dense.size();
    const float* in = x.data();
    for (size_t l = 0; l < layers; ++l) {
      dense[l]->Forward(ctx, in, w[l].data(), b[l].data(), pre[l].data());
      if (l + 1 < layers) {
        relu[l]->Forward(ctx, pre[l].data(), act[l].data());
        in = act[l].data();
      }
    }
    (void)SoftmaxCrossEntropy(pre[layers - 1].data(), labels.data(), kBatch, 10, nullptr,
                              grad[layers - 1].data());
    for (size_t l = layers; l-- > 0;) {
      const float* layer_in = l == 0 ? x.data() : act[l - 1].data();
      dense[l]->BackwardWeights(ctx, layer_in, grad[l].data(), dw[l].data(), db[l].data());
      if (l > 0) {
        dense[l]->BackwardData(ctx, grad[l].data(), w[l].data(), grad[l - 1].data());
        relu[l - 1]->Backward(ctx, pre[l - 1].data(), grad[l - 1].data(), grad[l - 1].data());
      }
    }
    ++step;
    for (size_t l = 0; l < layers; ++l) {
      AdamUpdate(AdamOptions{}, step, w[l].data(), dw[l].data(), m_w[l].data(), v_w[l].data(),
                 w[l].size());
      AdamUpdate(AdamOptions{}, step, b[l].data(), db[l].data(), m_b[l].data(), v_b[l].data(),
                 b[l].size());
    }
  }
};

// train's --model=cnn: conv 3x3x16 (ReLU), max pool 2, conv 3x3x32 (ReLU), max
// pool 2, flatten, dense 128 (ReLU), dense 10; softmax cross-entropy; Adam.
struct Cnn {
  static constexpr int64_t kBatch = 128;
  std::vector<std::unique_ptr<Conv2DKernel>> conv;
  std::vector<std::unique_ptr<Pool2DKernel>> pool;
  std::vector<std::unique_ptr<DenseKernel>> dense;
  std::vector<std::unique_ptr<ActivationKernel>> relu;  // conv 0, conv 1, dense 0
  // Variables in order conv0 w, b, conv1 w, b, dense0 w, b, dense1 w, b; with their
  // gradients and Adam slots.
  std::vector<Tensor> vars, grads, m, v;
  // Activations: conv0 pre/act, pool0, conv1 pre/act, pool1, dense0 pre/act, logits;
  // and a gradient buffer of each.
  Tensor x{{kBatch, 28, 28, 1}};
  std::vector<Tensor> a, g;
  std::vector<int32_t> labels = std::vector<int32_t>(kBatch);
  int64_t step = 0;

  absl::Status Init(KernelContext& ctx) {
    const Conv2DShape c0{kBatch, 28, 28, 1, 16, 3, 3, 1, 1, Padding::kSame};
    const Conv2DShape c1{kBatch, 14, 14, 16, 32, 3, 3, 1, 1, Padding::kSame};
    for (const Conv2DShape& s : {c0, c1}) {
      RW_ASSIGN_OR_RETURN(auto k, Conv2DKernel::Create(ctx, s));
      conv.push_back(std::move(k));
      vars.emplace_back(Shape{3, 3, s.in_channels, s.out_channels});
      vars.emplace_back(Shape{s.out_channels});
      RW_ASSIGN_OR_RETURN(auto p, Pool2DKernel::Create(ctx, {PoolKind::kMax, kBatch, s.height,
                                                             s.width, s.out_channels}));
      pool.push_back(std::move(p));
    }
    for (auto [k, n] : {std::pair<int64_t, int64_t>{7 * 7 * 32, 128}, {128, 10}}) {
      RW_ASSIGN_OR_RETURN(auto d, DenseKernel::Create(ctx, {kBatch, k, n}));
      dense.push_back(std::move(d));
      vars.emplace_back(Shape{k, n});
      vars.emplace_back(Shape{n});
    }
    for (int64_t count : {kBatch * 28 * 28 * 16, kBatch * 14 * 14 * 32, kBatch * 128}) {
      RW_ASSIGN_OR_RETURN(auto r, ActivationKernel::Create(ctx, Activation::kRelu, count));
      relu.push_back(std::move(r));
    }
    for (const Tensor& t : vars) {
      for (auto* list : {&grads, &m, &v}) list->emplace_back(t.shape());
    }
    for (Tensor& t : vars) {
      for (int64_t i = 0; i < t.size(); ++i) t[i] = 0.01f * ((i * 37) % 101 - 50);
    }
    for (const Shape& s :
         {Shape{kBatch, 28, 28, 16}, Shape{kBatch, 28, 28, 16}, Shape{kBatch, 14, 14, 16},
          Shape{kBatch, 14, 14, 32}, Shape{kBatch, 14, 14, 32}, Shape{kBatch, 7, 7, 32},
          Shape{kBatch, 128}, Shape{kBatch, 128}, Shape{kBatch, 10}}) {
      a.emplace_back(s);
      g.emplace_back(s);
    }
    for (int64_t i = 0; i < x.size(); ++i) x[i] = ((i * 13) % 255) / 255.f;
    for (int64_t i = 0; i < kBatch; ++i) labels[i] = static_cast<int32_t>(i % 10);
    return absl::OkStatus();
  }

  void Step(KernelContext& ctx) {
    conv[0]->Forward(ctx, x.data(), vars[0].data(), vars[1].data(), a[0].data());
    relu[0]->Forward(ctx, a[0].data(), a[1].data());
    pool[0]->Forward(ctx, a[1].data(), a[2].data());
    conv[1]->Forward(ctx, a[2].data(), vars[2].data(), vars[3].data(), a[3].data());
    relu[1]->Forward(ctx, a[3].data(), a[4].data());
    pool[1]->Forward(ctx, a[4].data(), a[5].data());
    dense[0]->Forward(ctx, a[5].data(), vars[4].data(), vars[5].data(), a[6].data());
    relu[2]->Forward(ctx, a[6].data(), a[7].data());
    dense[1]->Forward(ctx, a[7].data(), vars[6].data(), vars[7].data(), a[8].data());
    (void)SoftmaxCrossEntropy(a[8].data(), labels.data(), kBatch, 10, nullptr, g[8].data());
    dense[1]->BackwardWeights(ctx, a[7].data(), g[8].data(), grads[6].data(), grads[7].data());
    dense[1]->BackwardData(ctx, g[8].data(), vars[6].data(), g[7].data());
    relu[2]->Backward(ctx, a[6].data(), g[7].data(), g[6].data());
    dense[0]->BackwardWeights(ctx, a[5].data(), g[6].data(), grads[4].data(), grads[5].data());
    dense[0]->BackwardData(ctx, g[6].data(), vars[4].data(), g[5].data());
    pool[1]->Backward(ctx, g[5].data(), g[4].data());
    relu[1]->Backward(ctx, a[3].data(), g[4].data(), g[3].data());
    conv[1]->BackwardWeights(ctx, a[2].data(), g[3].data(), grads[2].data(), grads[3].data());
    conv[1]->BackwardData(ctx, g[3].data(), vars[2].data(), g[2].data());
    pool[0]->Backward(ctx, g[2].data(), g[1].data());
    relu[0]->Backward(ctx, a[0].data(), g[1].data(), g[0].data());
    conv[0]->BackwardWeights(ctx, x.data(), g[0].data(), grads[0].data(), grads[1].data());
    ++step;
    for (size_t i = 0; i < vars.size(); ++i) {
      AdamUpdate(AdamOptions{}, step, vars[i].data(), grads[i].data(), m[i].data(), v[i].data(),
                 vars[i].size());
    }
  }
};

int Run(int threads, Precision precision, const Timing& timing, double peak) {
  KernelContext ctx({threads, precision});
  // MLP matmuls.
  double matmul_sum_us = 0;
  for (auto [k, n] : {std::pair<int64_t, int64_t>{784, 256}, {256, 128}, {128, 10}}) {
    const DenseShape s{Mlp::kBatch, k, n};
    auto kernel = DenseKernel::Create(ctx, s);
    if (!kernel.ok()) ExitWithStatus(kernel.status());
    Tensor x({s.batch, k}), w({k, n}), b({n}), y({s.batch, n}), dy({s.batch, n}), dx({s.batch, k}),
        dw({k, n}), db({n});
    x.Fill(0.5f);
    w.Fill(0.01f);
    dy.Fill(0.1f);
    const std::string shape = Dims({s.batch, k, n});
    double us =
        TimeUs(timing, [&] { (*kernel)->Forward(ctx, x.data(), w.data(), b.data(), y.data()); });
    Row("dense forward", shape, precision, us, s.ForwardFlops(), peak);
    matmul_sum_us += us;
    if (k != 784) {  // The first layer needs no input gradient.
      us = TimeUs(timing, [&] { (*kernel)->BackwardData(ctx, dy.data(), w.data(), dx.data()); });
      Row("dense backward data", shape, precision, us, s.ForwardFlops(), peak);
      matmul_sum_us += us;
    }
    us = TimeUs(timing, [&] {
      (*kernel)->BackwardWeights(ctx, x.data(), dy.data(), dw.data(), db.data());
    });
    Row("dense backward weights", shape, precision, us, s.ForwardFlops(), peak);
    matmul_sum_us += us;
  }
  Mlp mlp;
  absl::Status status = mlp.Init(ctx);
  if (!status.ok()) ExitWithStatus(status);
  const double step_us = TimeUs(timing, [&] { mlp.Step(ctx); });
  std::printf(
      "%-22s %-34s %-9s %10.1f   (sum of its 8 matmuls %.1f us: step / matmuls = %.2f; %.0f "
      "samples/s)\n",
      "MLP training step", "784-256-128-10, batch 128, Adam",
      std::string(PrecisionName(precision)).c_str(), step_us, matmul_sum_us,
      step_us / matmul_sum_us, Mlp::kBatch / (step_us * 1e-6));
  // The small CNN.
  const int64_t batch = 64;
  // The small CNN's two layers, then the 3x3 layers of each stage of --model=resnet
  // (keras/applications.h) at its per-worker batch of 128.
  for (Conv2DShape s : {Conv2DShape{batch, 28, 28, 1, 16, 3, 3, 1, 1, Padding::kSame},
                        Conv2DShape{batch, 14, 14, 16, 32, 3, 3, 1, 1, Padding::kSame},
                        Conv2DShape{128, 28, 28, 16, 16, 3, 3, 1, 1, Padding::kSame},
                        Conv2DShape{128, 14, 14, 32, 32, 3, 3, 1, 1, Padding::kSame},
                        Conv2DShape{128, 7, 7, 64, 64, 3, 3, 1, 1, Padding::kSame}}) {
    auto kernel = Conv2DKernel::Create(ctx, s);
    if (!kernel.ok()) ExitWithStatus(kernel.status());
    Tensor x({s.batch, s.height, s.width, s.in_channels});
    Tensor w({s.kernel_h, s.kernel_w, s.in_channels, s.out_channels}), b({s.out_channels});
    Tensor y({s.batch, s.rows().out, s.cols().out, s.out_channels}), dy(y.shape()), dx(x.shape()),
        dw(w.shape()), db(b.shape());
    x.Fill(0.5f);
    w.Fill(0.01f);
    dy.Fill(0.1f);
    const std::string shape = Dims({s.batch, s.height, s.width, s.in_channels}) + " k3x3 -> " +
                              std::to_string(s.out_channels);
    Row("conv2d forward", shape, precision,
        TimeUs(timing, [&] { (*kernel)->Forward(ctx, x.data(), w.data(), b.data(), y.data()); }),
        s.ForwardFlops(), peak);
    if (s.in_channels > 1) {
      Row("conv2d backward data", shape, precision,
          TimeUs(timing, [&] { (*kernel)->BackwardData(ctx, dy.data(), w.data(), dx.data()); }),
          s.ForwardFlops(), peak);
    }
    Row("conv2d backward weights", shape, precision,
        TimeUs(timing,
               [&] { (*kernel)->BackwardWeights(ctx, x.data(), dy.data(), dw.data(), db.data()); }),
        s.ForwardFlops(), peak);
  }
  for (Pool2DShape s : {Pool2DShape{PoolKind::kMax, batch, 28, 28, 16}}) {
    auto kernel = Pool2DKernel::Create(ctx, s);
    if (!kernel.ok()) ExitWithStatus(kernel.status());
    Tensor x({s.batch, s.height, s.width, s.channels}), y({s.batch, 14, 14, s.channels});
    const double us = TimeUs(timing, [&] { (*kernel)->Forward(ctx, x.data(), y.data()); });
    std::printf("%-22s %-34s %-9s %10.1f   (%.2f GB/s read)\n", "max pool forward",
                Dims({s.batch, 28, 28, 16}).c_str(), std::string(PrecisionName(precision)).c_str(),
                us, x.size() * 4.0 / (us * 1e-6) / 1e9);
  }
  Cnn cnn;
  status = cnn.Init(ctx);
  if (!status.ok()) ExitWithStatus(status);
  const double cnn_step_us = TimeUs(timing, [&] { cnn.Step(ctx); });
  std::printf("%-22s %-34s %-9s %10.1f   (%.0f samples/s)\n", "CNN training step",
              "train --model=cnn, batch 128, Adam", std::string(PrecisionName(precision)).c_str(),
              cnn_step_us, Cnn::kBatch / (cnn_step_us * 1e-6));
  return 0;
}

// The all-reduce's element loops over the MLP's gradients (235,146 floats): what a
// hop costs besides moving bytes, and what --allreduce_compression=bf16 adds.
void RunReductions(const Timing& timing) {
  const size_t n = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
  std::vector<float> a(n, 1.25f), b(n, 0.5f);
  std::vector<BFloat16> x(n), y(n);
  ConvertToBFloat16(b.data(), y.data(), n);
  auto row = [&](const char* op, double us, size_t bytes_touched) {
    std::printf("%-22s %-34s %-9s %10.1f   (%.2f GB/s touched)\n", op,
                (std::to_string(n) + " elements").c_str(), "", us,
                static_cast<double>(bytes_touched) / (us * 1e-6) / 1e9);
  };
  row("sum float32",
      TimeUs(timing,
             [&] { Accumulate(DataType::kFloat32, ReduceOp::kSum, a.data(), b.data(), n); }),
      n * 12);
  row("float32 -> bfloat16", TimeUs(timing, [&] { ConvertToBFloat16(a.data(), x.data(), n); }),
      n * 6);
  row("sum bfloat16",
      TimeUs(timing,
             [&] { Accumulate(DataType::kBFloat16, ReduceOp::kSum, x.data(), y.data(), n); }),
      n * 6);
  row("bfloat16 -> float32", TimeUs(timing, [&] { ConvertFromBFloat16(x.data(), a.data(), n); }),
      n * 6);
}

int Main(int argc, char** argv) {
  FlagSet flags("kernel_bench: GFLOP/s of Ringwork's oneDNN kernels next to the machine's peak");
  int64_t threads = 1;
  std::string precision = "both";
  Timing timing;
  flags.Int("threads", &threads, "intra-op threads");
  flags.String("precision", &precision, "float32, bfloat16 or both");
  flags.Int("runs", &timing.runs, "measured blocks per row; the median is shown");
  flags.Double("min_block_s", &timing.min_block_s, "length of one block");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("kernel_bench");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (precision != "float32" && precision != "bfloat16" && precision != "both") {
    ExitWithStatus(absl::InvalidArgumentError("--precision: expected float32, bfloat16 or both"));
  }
  const double peak = MeasurePeak() * static_cast<double>(threads);
  std::printf(
      "# peak: %.1f GFLOP/s float32 (%s FMA loop, one thread, x %lld threads), twice "
      "that for bfloat16 dot products; oneDNN ISA %d; native bfloat16: %s\n"
      "# convolution FLOPs count the padded taps too (the usual convention)\n",
      peak, __builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2", static_cast<long long>(threads),
      static_cast<int>(dnnl::get_effective_cpu_isa()),
      KernelContext::HasNativeBFloat16() ? "yes" : "no");
  std::printf("%-22s %-34s %-9s %10s %10s %8s\n", "op", "shape", "precision", "time(us)", "GFLOP/s",
              "of peak");
  if (precision != "bfloat16") Run(static_cast<int>(threads), Precision::kFloat32, timing, peak);
  if (precision != "float32") Run(static_cast<int>(threads), Precision::kBFloat16, timing, peak);
  RunReductions(timing);
  return 0;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
