// RandomFlip: Keras' image augmentation layer, active in training only.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "keras/layers.h"
#include "kernels/dropout.h"

namespace ringwork {
namespace {

class RandomFlipLayer : public Layer {
 public:
  RandomFlipLayer(std::string mode, uint64_t seed) : mode_(std::move(mode)), seed_(seed) {}
  std::string type() const override { return "RandomFlip"; }
  std::string config() const override { return mode_; }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    horizontal_ = mode_ == "horizontal" || mode_ == "horizontal_and_vertical";
    vertical_ = mode_ == "vertical" || mode_ == "horizontal_and_vertical";
    if (!horizontal_ && !vertical_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": mode \"", mode_,
                       "\" must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\""));
    }
    if (input.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " needs [height, width, channels] inputs, got ", ShapeString(input)));
    }
    // A stream of its own, as Dropout's: a function of (seed, replica, step, example).
    if (seed_ == 0) seed_ = ctx.seed ^ 0x9e3779b9 ^ Fnv1a64(name_);
    output_shape_ = input;
    return output_shape_;
  }
  void set_replica(int64_t replica) override { replica_ = replica; }
  void set_training_step(int64_t step) override { step_ = static_cast<uint64_t>(step); }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    const int64_t batch = x.dim(0);
    flips_.assign(static_cast<size_t>(batch), 0);
    if (training) {
      const uint64_t seed = seed_ + static_cast<uint64_t>(replica_) * 7919;
      for (int64_t b = 0; b < batch; ++b) {
        const uint64_t index = static_cast<uint64_t>(b) * 2;
        const bool h = horizontal_ && CounterUniform(seed, step_, index) < 0.5f;
        const bool v = vertical_ && CounterUniform(seed, step_, index + 1) < 0.5f;
        flips_[b] = static_cast<char>((h ? 1 : 0) | (v ? 2 : 0));
      }
      ++step_;
    }
    y->Resize(x.shape());
    Apply(x, y);
    return absl::OkStatus();
  }

  // A flip is its own transpose: the gradient flips back the same way.
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    if (dy.dim(0) != static_cast<int64_t>(flips_.size())) {
      return absl::FailedPreconditionError(absl::StrCat(name_, ": backward of a batch of ",
                                                        dy.dim(0), " after a forward pass of ",
                                                        flips_.size()));
    }
    dx->Resize(x.shape());
    Apply(dy, dx);
    return absl::OkStatus();
  }

 private:
  // out = in with each example flipped as flips_ says.
  void Apply(const Tensor& in, Tensor* out) const {
    const int64_t height = output_shape_[0], width = output_shape_[1], channels = output_shape_[2];
    const int64_t row = width * channels, image = height * row;
    for (int64_t b = 0; b < in.dim(0); ++b) {
      const float* src = in.data() + b * image;
      float* dst = out->data() + b * image;
      const bool h = flips_[b] & 1, v = flips_[b] & 2;
      for (int64_t i = 0; i < height; ++i) {
        const float* from = src + (v ? height - 1 - i : i) * row;
        float* to = dst + i * row;
        if (!h) {
          std::memcpy(to, from, sizeof(float) * row);
          continue;
        }
        for (int64_t j = 0; j < width; ++j) {
          std::memcpy(to + j * channels, from + (width - 1 - j) * channels,
                      sizeof(float) * channels);
        }
      }
    }
  }

  const std::string mode_;
  uint64_t seed_;
  int64_t replica_ = 0;
  uint64_t step_ = 0;
  bool horizontal_ = false, vertical_ = false;
  std::vector<char> flips_;  // Per example of the last Forward: 1 horizontal, 2 vertical.
};

}  // namespace

std::unique_ptr<Layer> RandomFlip(const std::string& mode, uint64_t seed) {
  return std::make_unique<RandomFlipLayer>(mode, seed);
}

}  // namespace ringwork
