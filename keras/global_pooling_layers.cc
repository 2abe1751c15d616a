// GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D: every position of each
// channel to one value ([steps, channels] or [height, width, channels] ->
// [channels]). The max's gradient goes to the positions that hold it, split
// evenly among ties, as TensorFlow's reduce_max gradient does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "keras/layers.h"

namespace ringwork {
namespace {

class GlobalPoolingLayer : public Layer {
 public:
  GlobalPoolingLayer(int rank, bool max) : rank_(rank), max_(max) {}
  std::string type() const override {
    return absl::StrCat(max_ ? "GlobalMaxPooling" : "GlobalAveragePooling", rank_, "D");
  }
  // GlobalAveragePooling1D averages the steps a mask keeps (all masked: 0, where
  // Keras divides 0 by 0).
  MaskUse mask_use() const override {
    return rank_ == 1 && !max_ ? MaskUse::kReads : MaskUse::kRefuses;
  }
  void set_input_mask(const uint8_t* mask) override { mask_ = mask; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (static_cast<int>(input.size()) != rank_ + 1 || NumElements(input) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " needs ", rank_ == 2 ? "[height, width, channels]" : "[steps, channels]",
          " inputs, got ", ShapeString(input)));
    }
    positions_ = NumElements(input) / input.back();
    output_shape_ = {input.back()};
    return output_shape_;
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    const int64_t batch = x.dim(0), channels = output_shape_[0];
    y->Resize({batch, channels});
    std::vector<double> sums(static_cast<size_t>(channels));
    for (int64_t b = 0; b < batch; ++b) {
      const float* in = x.data() + b * positions_ * channels;
      float* out = y->data() + b * channels;
      if (max_) {
        std::fill(out, out + channels, -std::numeric_limits<float>::infinity());
        for (int64_t p = 0; p < positions_; ++p) {
          // NaN wins, as in TensorFlow's max.
          for (int64_t c = 0; c < channels; ++c) {
            const float v = in[p * channels + c];
            if (v > out[c] || v != v) out[c] = v;
          }
        }
        continue;
      }
      std::fill(sums.begin(), sums.end(), 0.0);
      for (int64_t p = 0; p < positions_; ++p) {
        if (!Kept(b, p)) continue;
        for (int64_t c = 0; c < channels; ++c) sums[c] += in[p * channels + c];
      }
      const int64_t kept = KeptSteps(b);
      for (int64_t c = 0; c < channels; ++c) {
        out[c] = kept == 0 ? 0.f : static_cast<float>(sums[c] / static_cast<double>(kept));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    const int64_t batch = x.dim(0), channels = output_shape_[0];
    dx->Resize(x.shape());
    std::vector<int64_t> ties(static_cast<size_t>(channels));
    for (int64_t b = 0; b < batch; ++b) {
      const float* in = x.data() + b * positions_ * channels;
      float* out = dx->data() + b * positions_ * channels;
      const float* g = dy.data() + b * channels;
      if (!max_) {
        const int64_t kept = KeptSteps(b);
        const float share = kept == 0 ? 0.f : 1.0f / static_cast<float>(kept);
        for (int64_t p = 0; p < positions_; ++p) {
          const float step_share = Kept(b, p) ? share : 0.f;
          for (int64_t c = 0; c < channels; ++c) out[p * channels + c] = g[c] * step_share;
        }
        continue;
      }
      const float* top = y.data() + b * channels;
      std::fill(ties.begin(), ties.end(), 0);
      for (int64_t p = 0; p < positions_; ++p) {
        for (int64_t c = 0; c < channels; ++c) ties[c] += in[p * channels + c] == top[c];
      }
      for (int64_t p = 0; p < positions_; ++p) {
        for (int64_t c = 0; c < channels; ++c) {
          // A NaN max equals nothing: 0 / 0 everywhere, as TensorFlow's gradient.
          out[p * channels + c] = ties[c] == 0 ? g[c] * NAN
                                  : in[p * channels + c] == top[c]
                                      ? g[c] / static_cast<float>(ties[c])
                                      : 0.f;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  bool Kept(int64_t example, int64_t step) const {
    return mask_ == nullptr || mask_[example * positions_ + step] != 0;
  }
  int64_t KeptSteps(int64_t example) const {
    if (mask_ == nullptr) return positions_;
    return std::count(mask_ + example * positions_, mask_ + (example + 1) * positions_, 1);
  }
  const int rank_;
  const bool max_;
  int64_t positions_ = 0;
  const uint8_t* mask_ = nullptr;  // [batch, steps] (1D average), or null.
};

}  // namespace

std::unique_ptr<Layer> GlobalAveragePooling2D() {
  return std::make_unique<GlobalPoolingLayer>(2, false);
}
std::unique_ptr<Layer> GlobalAveragePooling1D() {
  return std::make_unique<GlobalPoolingLayer>(1, false);
}
std::unique_ptr<Layer> GlobalMaxPooling2D() {
  return std::make_unique<GlobalPoolingLayer>(2, true);
}
std::unique_ptr<Layer> GlobalMaxPooling1D() {
  return std::make_unique<GlobalPoolingLayer>(1, true);
}

}  // namespace ringwork
