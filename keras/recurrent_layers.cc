// SimpleRNN, LSTM and GRU over [steps, features] sequences, as Keras': the input projection
// x W + b of every step is one matmul, then each step adds h_prev U (one matmul
// per step) and runs the cell (kernels/recurrent_cells.h). Backward runs the
// steps in reverse; dW, dU and dx are again one matmul each over all steps.
// Activations are kept time-major ([step][example][unit]) so that each step's
// rows are contiguous.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "base/status_macros.h"
#include "keras/initializers.h"
#include "keras/kernel_cache.h"
#include "keras/layers.h"
#include "kernels/dense.h"
#include "kernels/dropout.h"
#include "kernels/recurrent_cells.h"

namespace ringwork {
namespace {

enum class Cell { kSimple, kLstm, kGru };

// [B, T, F] <-> [T, B, F]; with `reverse`, the second axis of `in` read last to first.
void SwapFirstAxes(const float* in, int64_t first, int64_t second, int64_t inner, float* out,
                   bool reverse = false) {
  for (int64_t a = 0; a < first; ++a) {
    for (int64_t b = 0; b < second; ++b) {
      const int64_t from = reverse ? second - 1 - b : b;
      std::memcpy(out + (b * first + a) * inner, in + (a * second + from) * inner,
                  sizeof(float) * static_cast<size_t>(inner));
    }
  }
}

class RecurrentLayer : public Layer {
 public:
  RecurrentLayer(Cell cell, int64_t units, RecurrentOptions options)
      : cell_(cell), units_(units), options_(std::move(options)) {}
  std::string type() const override {
    return cell_ == Cell::kLstm ? "LSTM" : cell_ == Cell::kGru ? "GRU" : "SimpleRNN";
  }
  nlohmann::json keras_config() const override {
    nlohmann::json c = {{"units", units_},
                        {"activation", options_.activation},
                        {"recurrent_activation", options_.recurrent_activation},
                        {"use_bias", true},
                        {"return_sequences", options_.return_sequences},
                        {"return_state", false},
                        {"go_backwards", options_.go_backwards},
                        {"stateful", false},
                        {"unroll", false},
                        {"dropout", options_.dropout},
                        {"recurrent_dropout", options_.recurrent_dropout}};
    if (cell_ == Cell::kLstm) c["unit_forget_bias"] = options_.unit_forget_bias;
    if (cell_ == Cell::kGru) c["reset_after"] = options_.reset_after;
    if (cell_ == Cell::kSimple) c.erase("recurrent_activation");  // Keras' has none.
    if (options_.zero_output_for_mask) c["zero_output_for_mask"] = true;
    return c;
  }
  // A masked step leaves the state as it was, and outputs it again (Keras' and
  // TensorFlow.js' rnn: output = the previous output, state = the previous state).
  MaskUse mask_use() const override {
    return options_.return_sequences ? MaskUse::kReadsAndPasses : MaskUse::kReads;
  }
  void set_input_mask(const uint8_t* mask) override { mask_ = mask; }
  std::string config() const override {
    return absl::StrCat("return_sequences ", options_.return_sequences,
                        options_.go_backwards ? ", go_backwards" : "",
                        options_.zero_output_for_mask ? ", zero_output_for_mask" : "",
                        options_.dropout > 0 ? absl::StrCat(", dropout ", options_.dropout) : "",
                        options_.recurrent_dropout > 0
                            ? absl::StrCat(", recurrent_dropout ", options_.recurrent_dropout)
                            : "",
                        cell_ == Cell::kGru ? ", reset_after " : ", unit_forget_bias ",
                        cell_ == Cell::kGru ? options_.reset_after : options_.unit_forget_bias);
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (input.size() != 2 || input[0] <= 0 || input[1] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " (", type(), ") needs [steps, features] inputs, got ", ShapeString(input)));
    }
    if (units_ <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": units must be positive, got ", units_));
    }
    if (options_.activation != "tanh" ||
        (cell_ != Cell::kSimple && options_.recurrent_activation != "sigmoid")) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": activation \"", options_.activation, "\" and recurrent_activation \"",
          options_.recurrent_activation,
          "\" are not supported; Ringwork's cells use Keras' defaults, tanh and sigmoid"));
    }
    for (const float rate : {options_.dropout, options_.recurrent_dropout}) {
      if (!(rate >= 0 && rate < 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ": dropout and recurrent_dropout must be in [0, 1), got ", rate));
      }
    }
    // Draws of its own (as Dropout's): a function of (seed, worker, step, position).
    seed_ = ctx.seed ^ 0x2545f491 ^ Fnv1a64(name_);
    steps_ = input[0];
    features_ = input[1];
    gates_ = cell_ == Cell::kLstm ? 4 : cell_ == Cell::kGru ? 3 : 1;
    const int64_t width = gates_ * units_;
    Variable* kernel = AddVariable("kernel", {features_, width});
    GlorotUniform(kernel->value, features_, width, ctx.seed, kernel->name);
    Variable* recurrent = AddVariable("recurrent_kernel", {units_, width});
    Orthogonal(recurrent->value, units_, width, ctx.seed, recurrent->name);
    two_biases_ = cell_ == Cell::kGru && options_.reset_after;
    Variable* bias = AddVariable("bias", two_biases_ ? Shape{2, width} : Shape{width});
    if (cell_ == Cell::kLstm && options_.unit_forget_bias) {
      for (int64_t u = 0; u < units_; ++u) bias->value[units_ + u] = 1.f;  // The forget gate.
    }
    zeros_.assign(static_cast<size_t>(width), 0.f);
    output_shape_ = options_.return_sequences ? Shape{steps_, units_} : Shape{units_};
    return output_shape_;
  }

  void set_replica(int64_t replica) override { replica_ = replica; }
  void set_training_step(int64_t step) override { step_ = static_cast<uint64_t>(step); }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override {
    const int64_t batch = x.dim(0), width = gates_ * units_, rows = steps_ * batch;
    const int64_t step_size = batch * units_;
    const float* w = variables_[0]->value.data();
    const float* u = variables_[1]->value.data();
    const float* bias = variables_[2]->value.data();
    xt_.resize(static_cast<size_t>(rows * features_));
    SwapFirstAxes(x.data(), batch, steps_, features_, xt_.data(), options_.go_backwards);
    DrawDropoutMasks(training, batch);
    if (!x_mask_.empty()) {  // The same inputs dropped at every step (Keras').
      for (int64_t i = 0; i < rows * features_; ++i) xt_[i] *= x_mask_[i % (batch * features_)];
    }
    xw_.resize(static_cast<size_t>(rows * width));
    RW_ASSIGN_OR_RETURN(DenseKernel * projection, Matmul(k, rows, features_, width));
    projection->Forward(k, xt_.data(), w, bias, xw_.data());
    RW_ASSIGN_OR_RETURN(DenseKernel * recurrent, Matmul(k, batch, units_, width));
    // h_[t + 1]: the state after step t; h_[0] the initial zeros. c_ alike (LSTM).
    h_.assign(static_cast<size_t>((steps_ + 1) * step_size), 0.f);
    act_.resize(static_cast<size_t>(rows * width));
    hu_.resize(static_cast<size_t>(rows * width));
    if (cell_ == Cell::kLstm) {
      c_.assign(h_.size(), 0.f);
      tanh_c_.resize(static_cast<size_t>(rows * units_));
    }
    if (cell_ == Cell::kGru && !options_.reset_after) {
      CandidateKernel(u);
      rh_.resize(static_cast<size_t>(rows * units_));
      rhu_.resize(static_cast<size_t>(step_size));
    }
    for (int64_t t = 0; t < steps_; ++t) {
      RW_RETURN_IF_ERROR(StepForward(k, t, batch, recurrent));
      if (mask_ != nullptr) HoldMaskedRows(t, batch);
    }
    y->Resize(WithBatch(batch, output_shape_));
    if (options_.return_sequences) {
      SwapFirstAxes(h_.data() + step_size, steps_, batch, units_, y->data());
      if (mask_ != nullptr && options_.zero_output_for_mask) ZeroMaskedSteps(batch, y->data());
    } else {
      std::memcpy(y->data(), h_.data() + steps_ * step_size, sizeof(float) * step_size);
    }
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    return BackwardImpl(k, x, dy, dx);
  }

 private:
  // Step t of Forward: h_[t + 1] (and LSTM's c_) from h_[t] and the step's inputs.
  absl::Status StepForward(KernelContext& k, int64_t t, int64_t batch, DenseKernel* recurrent) {
    const int64_t width = gates_ * units_, step_size = batch * units_;
    const float* u = variables_[1]->value.data();
    const float* recurrent_bias = two_biases_ ? variables_[2]->value.data() + width : zeros_.data();
    const float* h_prev = h_.data() + t * step_size;
    float* h = h_.data() + (t + 1) * step_size;
    float* a = hu_.data() + t * batch * width;  // h_in U (+ recurrent bias)
    float* act = act_.data() + t * batch * width;
    const float* xw = xw_.data() + t * batch * width;
    // What the recurrent kernel reads: h_prev, or with recurrent_dropout h_prev
    // times the sequence's mask (the state itself goes on whole).
    const float* h_in = h_prev;
    if (!h_mask_.empty()) {
      float* dropped = h_in_.data() + t * step_size;
      for (int64_t i = 0; i < step_size; ++i) dropped[i] = h_prev[i] * h_mask_[i];
      h_in = dropped;
    }
    recurrent->Forward(k, h_in, u, recurrent_bias, a);
    if (cell_ == Cell::kSimple) {  // h = tanh(x W + b + h_prev U).
      for (int64_t i = 0; i < step_size; ++i) h[i] = std::tanh(a[i] + xw[i]);
      return absl::OkStatus();
    }
    if (cell_ == Cell::kLstm) {
      for (int64_t i = 0; i < batch * width; ++i) a[i] += xw[i];  // The pre-activations.
      LstmStepForward(batch, units_, a, c_.data() + t * step_size, act,
                      c_.data() + (t + 1) * step_size, tanh_c_.data() + t * step_size, h);
      return absl::OkStatus();
    }
    GruGates(batch, units_, xw, a, act);
    if (options_.reset_after) {
      GruCandidate(batch, units_, xw, a + 2 * units_, width, true, h_prev, act, h);
      return absl::OkStatus();
    }
    float* rh = rh_.data() + t * step_size;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < units_; ++j) {
        rh[b * units_ + j] = act[b * width + units_ + j] * h_in[b * units_ + j];
      }
    }
    RW_ASSIGN_OR_RETURN(DenseKernel * square, Matmul(k, batch, units_, units_));
    square->Forward(k, rh, candidate_u_.data(), zeros_.data(), rhu_.data());
    GruCandidate(batch, units_, xw, rhu_.data(), units_, false, h_prev, act, h);
    return absl::OkStatus();
  }

  // In step t of Backward, after the cell's: a masked example's step had no cell,
  // so its gradients reach the previous step's state unchanged.
  void PassMaskedRows(int64_t t, int64_t batch, float* da, float* dhu) {
    const int64_t width = gates_ * units_;
    for (int64_t b = 0; b < batch; ++b) {
      if (Kept(b, t)) continue;
      std::fill_n(da + b * width, width, 0.f);
      std::fill_n(dhu + b * width, width, 0.f);
      if (cell_ == Cell::kGru && !options_.reset_after) {
        std::fill_n(da_h_.data() + (t * batch + b) * units_, units_, 0.f);
      }
      std::copy_n(held_dh_.data() + b * units_, units_, dh_prev_.data() + b * units_);
      if (cell_ == Cell::kLstm) {
        std::copy_n(held_dc_.data() + b * units_, units_, dc_.data() + b * units_);
      }
    }
  }

  // In training with dropout: each example's input mask [batch, features] and
  // state mask [batch, units], 0 or 1 / (1 - rate), the same for every step;
  // empty otherwise.
  void DrawDropoutMasks(bool training, int64_t batch) {
    x_mask_.clear();
    h_mask_.clear();
    if (!training || (options_.dropout == 0 && options_.recurrent_dropout == 0)) return;
    const uint64_t stream = seed_ + static_cast<uint64_t>(replica_) * 7919, step = step_++;
    const auto draw = [&](float rate, int64_t count, uint64_t offset, std::vector<float>* mask) {
      mask->resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        const bool kept = CounterUniform(stream, step, offset + static_cast<uint64_t>(i)) >= rate;
        (*mask)[i] = kept ? 1.f / (1.f - rate) : 0.f;
      }
    };
    if (options_.dropout > 0) draw(options_.dropout, batch * features_, 0, &x_mask_);
    if (options_.recurrent_dropout > 0) {
      draw(options_.recurrent_dropout, batch * units_, 1ull << 40, &h_mask_);
      h_in_.resize(static_cast<size_t>(steps_ * batch * units_));
    }
  }

  // Whether example b holds data at step t (go_backwards: steps run last to first).
  bool Kept(int64_t b, int64_t t) const {
    return mask_[b * steps_ + (options_.go_backwards ? steps_ - 1 - t : t)] != 0;
  }
  // [batch, steps, units] outputs: 0 at the masked steps.
  void ZeroMaskedSteps(int64_t batch, float* y) const {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps_; ++t) {
        if (!Kept(b, t)) std::fill_n(y + (b * steps_ + t) * units_, units_, 0.f);
      }
    }
  }
  // [batch, steps, features] in place: each example's steps last to first.
  void ReverseSteps(int64_t batch, float* data) const {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps_ / 2; ++t) {
        std::swap_ranges(data + (b * steps_ + t) * features_,
                         data + (b * steps_ + t + 1) * features_,
                         data + (b * steps_ + steps_ - 1 - t) * features_);
      }
    }
  }

  // After step t of Forward: masked examples keep the state (h, and LSTM's c) of step t - 1.
  void HoldMaskedRows(int64_t t, int64_t batch) {
    const int64_t step_size = batch * units_;
    for (int64_t b = 0; b < batch; ++b) {
      if (Kept(b, t)) continue;
      const int64_t row = b * units_;
      std::copy_n(h_.data() + t * step_size + row, units_, h_.data() + (t + 1) * step_size + row);
      if (cell_ == Cell::kLstm) {
        std::copy_n(c_.data() + t * step_size + row, units_, c_.data() + (t + 1) * step_size + row);
      }
    }
  }

  absl::Status BackwardImpl(KernelContext& k, const Tensor& x, const Tensor& dy, Tensor* dx) {
    const int64_t batch = x.dim(0), width = gates_ * units_, rows = steps_ * batch;
    const int64_t step_size = batch * units_;
    const float* w = variables_[0]->value.data();
    const float* u = variables_[1]->value.data();
    // The output gradient, time-major.
    dht_.assign(static_cast<size_t>(rows * units_), 0.f);
    if (options_.return_sequences) {
      SwapFirstAxes(dy.data(), batch, steps_, units_, dht_.data());
      if (mask_ != nullptr && options_.zero_output_for_mask) {  // Those outputs were zeros.
        for (int64_t t = 0; t < steps_; ++t) {
          for (int64_t b = 0; b < batch; ++b) {
            if (!Kept(b, t)) std::fill_n(dht_.data() + (t * batch + b) * units_, units_, 0.f);
          }
        }
      }
    } else {
      std::memcpy(dht_.data() + (steps_ - 1) * step_size, dy.data(), sizeof(float) * step_size);
    }
    da_.resize(static_cast<size_t>(rows * width));   // Of the pre-activations (x W side).
    dhu_.resize(static_cast<size_t>(rows * width));  // Of h_prev U (+ recurrent bias).
    const size_t state = static_cast<size_t>(step_size);
    dh_.assign(state, 0.f);
    dc_.assign(state, 0.f);
    dh_prev_.resize(state);
    dc_prev_.resize(state);
    through_u_.resize(state);
    if (cell_ == Cell::kGru && !options_.reset_after) {
      drh_.resize(dh_.size());
      da_h_.resize(static_cast<size_t>(rows * units_));
    }
    RW_ASSIGN_OR_RETURN(DenseKernel * recurrent, Matmul(k, batch, units_, width));
    for (int64_t t = steps_ - 1; t >= 0; --t) {
      const float* h_prev = h_.data() + t * step_size;
      const float* act = act_.data() + t * batch * width;
      float* da = da_.data() + t * batch * width;
      float* dhu = dhu_.data() + t * batch * width;
      for (int64_t i = 0; i < step_size; ++i) dh_[i] += dht_[t * step_size + i];
      if (mask_ != nullptr) {  // A masked step passes its gradients to the previous one.
        held_dh_ = dh_;
        if (cell_ == Cell::kLstm) held_dc_ = dc_;
      }
      if (cell_ == Cell::kSimple) {  // Through tanh; h_prev is reached through U alone.
        const float* h = h_.data() + (t + 1) * step_size;
        for (int64_t i = 0; i < step_size; ++i) da[i] = dh_[i] * (1.f - h[i] * h[i]);
        std::copy(da, da + step_size, dhu);
        std::fill(dh_prev_.begin(), dh_prev_.end(), 0.f);
      } else if (cell_ == Cell::kLstm) {
        LstmStepBackward(batch, units_, dh_.data(), dc_.data(), act, c_.data() + t * step_size,
                         tanh_c_.data() + t * step_size, da, dc_prev_.data());
        std::copy(da, da + batch * width, dhu);
        dc_.swap(dc_prev_);
        std::fill(dh_prev_.begin(), dh_prev_.end(), 0.f);
      } else {
        GruStepBackward(batch, units_, dh_.data(), act, h_prev, da, dh_prev_.data());
        if (options_.reset_after) {
          // hh = tanh(xw_h + r * hu_h): dr = da_hh hu_h; d(hu_h) = da_hh r.
          const float* hu = hu_.data() + t * batch * width;
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t j = 0; j < units_; ++j) {
              through_u_[b * units_ + j] =
                  da[b * width + 2 * units_ + j] * hu[b * width + 2 * units_ + j];
            }
          }
          GruResetBackward(batch, units_, through_u_.data(), units_, act, da);
          std::copy(da, da + batch * width, dhu);
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t j = 0; j < units_; ++j) {
              dhu[b * width + 2 * units_ + j] *= act[b * width + units_ + j];
            }
          }
        } else {
          // hh = tanh(xw_h + (r h_prev) U_h): d(r h_prev) = da_hh U_h^T.
          float* da_h = da_h_.data() + t * step_size;
          for (int64_t b = 0; b < batch; ++b) {
            std::copy(da + b * width + 2 * units_, da + b * width + 3 * units_, da_h + b * units_);
          }
          RW_ASSIGN_OR_RETURN(DenseKernel * square, Matmul(k, batch, units_, units_));
          square->BackwardData(k, da_h, candidate_u_.data(), drh_.data());
          for (int64_t i = 0; i < step_size; ++i) {
            const float kept = h_mask_.empty() ? 1.f : h_mask_[i];
            through_u_[i] = drh_[i] * h_prev[i] * kept;  // dr
            dh_prev_[i] += drh_[i] * act[(i / units_) * width + units_ + i % units_] * kept;
          }
          GruResetBackward(batch, units_, through_u_.data(), units_, act, da);
          std::copy(da, da + batch * width, dhu);
          for (int64_t b = 0; b < batch; ++b) {  // U_h is reached through r h_prev alone.
            std::fill(dhu + b * width + 2 * units_, dhu + b * width + 3 * units_, 0.f);
          }
        }
      }
      if (mask_ != nullptr) PassMaskedRows(t, batch, da, dhu);
      recurrent->BackwardData(k, dhu, u, through_u_.data());
      for (size_t i = 0; i < h_mask_.size(); ++i) through_u_[i] *= h_mask_[i];
      for (int64_t i = 0; i < step_size; ++i) dh_[i] = dh_prev_[i] + through_u_[i];
    }
    // Every step at once: dW, the input bias, dU and the recurrent bias.
    float* bias_grad = variables_[2]->grad;
    RW_ASSIGN_OR_RETURN(DenseKernel * projection, Matmul(k, rows, features_, width));
    projection->BackwardWeights(k, xt_.data(), da_.data(), variables_[0]->grad, bias_grad);
    RW_ASSIGN_OR_RETURN(DenseKernel * all_steps, Matmul(k, rows, units_, width));
    scratch_bias_.resize(static_cast<size_t>(width));
    all_steps->BackwardWeights(k, h_mask_.empty() ? h_.data() : h_in_.data(), dhu_.data(),
                               variables_[1]->grad,
                               two_biases_ ? bias_grad + width : scratch_bias_.data());
    if (cell_ == Cell::kGru && !options_.reset_after) {
      RW_ASSIGN_OR_RETURN(DenseKernel * square_all, Matmul(k, rows, units_, units_));
      du_h_.resize(static_cast<size_t>(units_ * units_));
      scratch_bias_.resize(static_cast<size_t>(std::max(width, units_)));
      square_all->BackwardWeights(k, rh_.data(), da_h_.data(), du_h_.data(), scratch_bias_.data());
      for (int64_t i = 0; i < units_; ++i) {
        std::copy(du_h_.begin() + i * units_, du_h_.begin() + (i + 1) * units_,
                  variables_[1]->grad + i * width + 2 * units_);
      }
    }
    if (dx != nullptr) {
      dxt_.resize(static_cast<size_t>(rows * features_));
      projection->BackwardData(k, da_.data(), w, dxt_.data());
      for (size_t i = 0; i < dxt_.size() && !x_mask_.empty(); ++i) {
        dxt_[i] *= x_mask_[i % x_mask_.size()];
      }
      dx->Resize(x.shape());
      SwapFirstAxes(dxt_.data(), steps_, batch, features_, dx->data());
      if (options_.go_backwards) ReverseSteps(x.dim(0), dx->data());
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<DenseKernel*> Matmul(KernelContext& k, int64_t rows, int64_t in, int64_t out) {
    return matmuls_.Get(MatmulShape{rows, in, out}, [&](const MatmulShape&) {
      return DenseKernel::Create(k, {rows, in, out});
    });
  }
  // U_h, the candidate's columns of the recurrent kernel, contiguous (GRU without
  // reset_after).
  void CandidateKernel(const float* u) {
    const int64_t width = gates_ * units_;
    candidate_u_.resize(static_cast<size_t>(units_ * units_));
    for (int64_t i = 0; i < units_; ++i) {
      std::copy(u + i * width + 2 * units_, u + i * width + 3 * units_,
                candidate_u_.begin() + i * units_);
    }
  }

  const Cell cell_;
  const int64_t units_;
  const RecurrentOptions options_;
  int64_t steps_ = 0, features_ = 0, gates_ = 0;
  bool two_biases_ = false;  // GRU with reset_after: [input bias, recurrent bias].
  std::vector<float> zeros_, scratch_bias_, candidate_u_;
  // Of the last Forward, time-major: inputs, x W + b, states (T + 1 of them),
  // activated gates, h_prev U; LSTM's cells; GRU's r h_prev (without reset_after).
  std::vector<float> xt_, xw_, h_, act_, hu_, c_, tanh_c_, rh_, rhu_;
  std::vector<float> dht_, da_, dhu_, da_h_;
  // Backward's scratch, kept between steps: [B, U] states and the rest.
  std::vector<float> dh_, dh_prev_, dc_, dc_prev_, through_u_, drh_, du_h_, dxt_;
  std::vector<float> held_dh_, held_dc_;  // A step's incoming dh and dc (with a mask).
  const uint8_t* mask_ = nullptr;         // [batch, steps] of the next Forward, or null.
  uint64_t seed_ = 0, step_ = 0;          // Dropout's draws: (seed, replica, step).
  int64_t replica_ = 0;
  std::vector<float> x_mask_, h_mask_;  // Of the last training Forward (DrawDropoutMasks).
  std::vector<float> h_in_;             // [steps, batch, units]: h_prev x h_mask_.
  PerBatch<DenseKernel, MatmulShape> matmuls_;
};

}  // namespace

std::unique_ptr<Layer> SimpleRNN(int64_t units, RecurrentOptions options) {
  return std::make_unique<RecurrentLayer>(Cell::kSimple, units, std::move(options));
}
std::unique_ptr<Layer> LSTM(int64_t units, RecurrentOptions options) {
  return std::make_unique<RecurrentLayer>(Cell::kLstm, units, std::move(options));
}
std::unique_ptr<Layer> GRU(int64_t units, RecurrentOptions options) {
  return std::make_unique<RecurrentLayer>(Cell::kGru, units, std::move(options));
}

}  // namespace ringwork
