// Bidirectional: a recurrent layer over the steps first to last and its copy
// (go_backwards flipped, weights of its own) last to first, outputs merged as
// Keras' and TF.js' Bidirectional. Both read the input's mask.
#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/layers.h"

namespace ringwork {
namespace {

// Keras' snake-case name of a class: "SimpleRNN" -> "simple_rnn".
std::string SnakeCase(const std::string& type) {
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const bool upper = std::isupper(static_cast<unsigned char>(type[i]));
    const bool starts_word =
        upper && i > 0 &&
        (std::islower(static_cast<unsigned char>(type[i - 1])) ||
         (i + 1 < type.size() && std::islower(static_cast<unsigned char>(type[i + 1]))));
    if (starts_word) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(type[i])));
  }
  return out;
}

// `layer` rebuilt from its Keras config, running the other way.
absl::StatusOr<std::unique_ptr<Layer>> ReversedCopy(const Layer& layer) {
  const nlohmann::json c = layer.keras_config();
  RecurrentOptions options;
  options.return_sequences = c.value("return_sequences", false);
  options.go_backwards = !c.value("go_backwards", false);
  options.zero_output_for_mask = c.value("zero_output_for_mask", false);
  options.dropout = c.value("dropout", 0.f);
  options.recurrent_dropout = c.value("recurrent_dropout", 0.f);
  options.activation = c.value("activation", "tanh");
  options.recurrent_activation = c.value("recurrent_activation", "sigmoid");
  options.unit_forget_bias = c.value("unit_forget_bias", true);
  options.reset_after = c.value("reset_after", true);
  const int64_t units = c.value("units", int64_t{0});
  if (layer.type() == "LSTM") return LSTM(units, options);
  if (layer.type() == "GRU") return GRU(units, options);
  if (layer.type() == "SimpleRNN") return SimpleRNN(units, options);
  return absl::InvalidArgumentError(
      absl::StrCat("Bidirectional wraps SimpleRNN, LSTM or GRU, not ", layer.type()));
}

class BidirectionalLayer : public Layer {
 public:
  // Keras' Bidirectional takes its layer's trainable.
  BidirectionalLayer(std::unique_ptr<Layer> layer, std::string merge_mode)
      : forward_(std::move(layer)), merge_mode_(std::move(merge_mode)) {
    set_trainable(forward_->trainable());  // Before backward_ exists: it copies it.
  }
  std::string type() const override { return "Bidirectional"; }
  nlohmann::json keras_config() const override {
    nlohmann::json inner = forward_->keras_config();
    inner["name"] = inner_name_;
    inner["trainable"] = trainable_;
    inner["dtype"] = "float32";
    return {{"layer",
             {{"module", "keras.layers"},
              {"class_name", forward_->type()},
              {"config", inner},
              {"registered_name", nullptr}}},
            {"merge_mode", merge_mode_}};
  }
  std::string config() const override {
    return absl::StrCat("merge_mode ", merge_mode_, "; ", forward_->type(), " ",
                        forward_->config());
  }
  MaskUse mask_use() const override { return forward_->mask_use(); }
  void set_input_mask(const uint8_t* mask) override {
    forward_->set_input_mask(mask);
    if (backward_ != nullptr) backward_->set_input_mask(mask);
  }
  void set_replica(int64_t replica) override {
    forward_->set_replica(replica);
    if (backward_ != nullptr) backward_->set_replica(replica);
  }
  void set_training_step(int64_t step) override {
    forward_->set_training_step(step);
    if (backward_ != nullptr) backward_->set_training_step(step);
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (merge_mode_ != "concat" && merge_mode_ != "sum" && merge_mode_ != "ave" &&
        merge_mode_ != "mul") {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": merge_mode \"", merge_mode_,
                                                     "\" is not one of concat, sum, ave, mul"));
    }
    if (backward_ == nullptr) {
      if (forward_->keras_config().value("go_backwards", false)) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_, ": the layer Bidirectional wraps must run first to last (go_backwards false)"));
      }
      RW_ASSIGN_OR_RETURN(backward_, ReversedCopy(*forward_));
      inner_name_ = forward_->name().empty() ? SnakeCase(forward_->type()) : forward_->name();
      // Keras 3 saves the wrapped layer as "forward_lstm" and strips the prefix.
      if (inner_name_.rfind("forward_", 0) == 0) inner_name_ = inner_name_.substr(8);
      forward_->set_name(absl::StrCat(name_, "/forward_", inner_name_));
      backward_->set_name(absl::StrCat(name_, "/backward_", inner_name_));
      sublayers_ = {forward_.get(), backward_.get()};
      set_trainable(trainable_);  // The copy too.
    }
    RW_ASSIGN_OR_RETURN(const Shape out, forward_->Build(input, ctx));
    RW_RETURN_IF_ERROR(backward_->Build(input, ctx).status());
    sequences_ = out.size() == 2;
    units_ = out.back();
    output_shape_ = out;
    if (merge_mode_ == "concat") output_shape_.back() *= 2;
    return output_shape_;
  }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override {
    RW_RETURN_IF_ERROR(forward_->Forward(k, x, &yf_, training));
    RW_RETURN_IF_ERROR(backward_->Forward(k, x, &yb_, training));
    y->Resize(WithBatch(x.dim(0), output_shape_));
    const int64_t positions = yf_.size() / units_;
    for (int64_t p = 0; p < positions; ++p) {
      const float* f = yf_.data() + p * units_;
      const float* b = yb_.data() + Backward(p) * units_;
      float* out = y->data() + p * output_shape_.back();
      for (int64_t u = 0; u < units_; ++u) {
        if (merge_mode_ == "concat") {
          out[u] = f[u];
          out[units_ + u] = b[u];
        } else {
          out[u] = merge_mode_ == "sum"   ? f[u] + b[u]
                   : merge_mode_ == "ave" ? 0.5f * (f[u] + b[u])
                                          : f[u] * b[u];
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    dyf_.Resize(yf_.shape());
    dyb_.Resize(yb_.shape());
    const int64_t positions = yf_.size() / units_;
    for (int64_t p = 0; p < positions; ++p) {
      const float* g = dy.data() + p * output_shape_.back();
      const int64_t back = Backward(p) * units_;
      for (int64_t u = 0; u < units_; ++u) {
        float& df = dyf_.data()[p * units_ + u];
        float& db = dyb_.data()[back + u];
        if (merge_mode_ == "concat") {
          df = g[u];
          db = g[units_ + u];
        } else if (merge_mode_ == "mul") {
          df = g[u] * yb_.data()[back + u];
          db = g[u] * yf_.data()[p * units_ + u];
        } else {
          df = db = merge_mode_ == "ave" ? 0.5f * g[u] : g[u];
        }
      }
    }
    RW_RETURN_IF_ERROR(forward_->Backward(k, x, yf_, dyf_, dx == nullptr ? nullptr : &dxf_));
    RW_RETURN_IF_ERROR(backward_->Backward(k, x, yb_, dyb_, dx));
    if (dx != nullptr) {
      for (int64_t i = 0; i < dx->size(); ++i) dx->data()[i] += dxf_.data()[i];
    }
    return absl::OkStatus();
  }

 private:
  // Where the backward layer's output for position p (example, step) is: its
  // sequences run last to first.
  int64_t Backward(int64_t p) const {
    if (!sequences_) return p;
    const int64_t steps = output_shape_[0], step = p % steps;
    return p - step + steps - 1 - step;
  }

  std::unique_ptr<Layer> forward_, backward_;
  const std::string merge_mode_;
  std::string inner_name_;
  bool sequences_ = false;
  int64_t units_ = 0;
  Tensor yf_, yb_, dyf_, dyb_, dxf_;  // Of the last Forward and Backward.
};

}  // namespace

std::unique_ptr<Layer> Bidirectional(std::unique_ptr<Layer> layer, std::string merge_mode) {
  return std::make_unique<BidirectionalLayer>(std::move(layer), std::move(merge_mode));
}

}  // namespace ringwork
