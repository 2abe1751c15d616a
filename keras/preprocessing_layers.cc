// Normalization, Discretization, CategoryEncoding and IntegerLookup
// (keras/preprocessing.h), and Normalization's distributed Adapt.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "keras/preprocessing.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {
namespace {

constexpr float kEpsilon = 1e-7f;  // Keras' backend.epsilon().

// The value at `i` as an integer id; an error naming the layer when it is not one.
absl::StatusOr<int64_t> IdAt(const std::string& layer, const Tensor& x, int64_t i) {
  const float v = x.data()[i];
  if (!(v == std::floor(v)) || std::fabs(v) > 16777216.f) {
    return absl::InvalidArgumentError(
        absl::StrCat(layer, ": input value ", v, " (example ",
                     i / std::max<int64_t>(1, x.size() / std::max<int64_t>(1, x.dim(0))),
                     " of the batch) is not a whole number within 2^24 (what float32 holds "
                     "exactly)"));
  }
  return static_cast<int64_t>(v);
}

// No gradient flows into ids or buckets: zeros, as Keras' (integer outputs).
absl::Status NoInputGradient(const Tensor& x, Tensor* dx) {
  if (dx == nullptr) return absl::OkStatus();
  dx->Resize(x.shape());
  std::fill(dx->data(), dx->data() + dx->size(), 0.f);
  return absl::OkStatus();
}

nlohmann::json Floats(const std::vector<float>& v) {
  nlohmann::json j = nlohmann::json::array();
  for (float f : v) j.push_back(f);
  return j;
}

class NormalizationLayer : public Layer {
 public:
  explicit NormalizationLayer(NormalizationOptions options) : options_(std::move(options)) {}
  std::string type() const override { return "Normalization"; }
  nlohmann::json keras_config() const override {
    // The statistics travel as the layer's weights (Keras 3 writes them too).
    return {{"axis", -1}, {"mean", nullptr}, {"variance", nullptr}, {"invert", false}};
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": needs an input of rank 1 or more"));
    }
    features_ = input.back();
    mean_ = AddNonTrainableVariable("mean", {features_});
    variance_ = AddNonTrainableVariable("variance", {features_});
    RW_RETURN_IF_ERROR(Set(options_.mean, options_.variance));
    output_shape_ = input;
    return input;
  }

  // Before Build: kept for it; after: written into the variables.
  absl::Status Set(const std::vector<float>& mean, const std::vector<float>& variance) {
    if (mean_ == nullptr) {
      options_ = {mean, variance};
      return absl::OkStatus();
    }
    // Checked whole before anything is written: an error leaves the layer as it was.
    std::vector<float> m(static_cast<size_t>(features_)), v(m.size());
    for (const auto& [values, into, fallback] :
         {std::tuple{&mean, &m, 0.f}, std::tuple{&variance, &v, 1.f}}) {
      const int64_t n = static_cast<int64_t>(values->size());
      if (n != 0 && n != 1 && n != features_) {
        return absl::InvalidArgumentError(absl::StrCat(name_, ": ", n, " statistics for ",
                                                       features_, " features of the last axis"));
      }
      for (int64_t j = 0; j < features_; ++j) {
        (*into)[j] = n == 0 ? fallback : (*values)[n == 1 ? 0 : j];
      }
    }
    for (int64_t j = 0; j < features_; ++j) {
      if (!(v[j] >= 0) || !std::isfinite(v[j]) || !std::isfinite(m[j])) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ": feature ", j, " has mean ", m[j], " and variance ", v[j],
                         " (both finite, the variance not negative)"));
      }
    }
    std::copy(m.begin(), m.end(), mean_->value.data());
    std::copy(v.begin(), v.end(), variance_->value.data());
    return absl::OkStatus();
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(x.shape());
    const std::vector<float> inverse = Inverse();
    for (int64_t i = 0; i < x.size(); ++i) {
      const int64_t j = i % features_;
      y->data()[i] = (x.data()[i] - mean_->value[j]) * inverse[j];
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    dx->Resize(x.shape());
    const std::vector<float> inverse = Inverse();
    for (int64_t i = 0; i < x.size(); ++i) dx->data()[i] = dy.data()[i] * inverse[i % features_];
    return absl::OkStatus();
  }

 private:
  std::vector<float> Inverse() const {
    std::vector<float> inverse(static_cast<size_t>(features_));
    for (int64_t j = 0; j < features_; ++j) {
      inverse[j] = 1.f / std::max(std::sqrt(variance_->value[j]), kEpsilon);
    }
    return inverse;
  }

  NormalizationOptions options_;
  int64_t features_ = 0;
  Variable* mean_ = nullptr;
  Variable* variance_ = nullptr;
};

class DiscretizationLayer : public Layer {
 public:
  explicit DiscretizationLayer(std::vector<float> boundaries)
      : boundaries_(std::move(boundaries)) {}
  std::string type() const override { return "Discretization"; }
  std::string config() const override {
    return absl::StrCat("bin_boundaries ", absl::StrJoin(boundaries_, " "));
  }
  nlohmann::json keras_config() const override {
    return {{"bin_boundaries", Floats(boundaries_)}, {"output_mode", "int"}};
  }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (boundaries_.empty() || !std::is_sorted(boundaries_.begin(), boundaries_.end()) ||
        std::any_of(boundaries_.begin(), boundaries_.end(),
                    [](float b) { return !std::isfinite(b); })) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": bin_boundaries must be finite and sorted, got [",
                       absl::StrJoin(boundaries_, ", "), "]"));
    }
    output_shape_ = input;
    return input;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(x.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      const float v = x.data()[i];
      if (std::isnan(v)) {
        return absl::InvalidArgumentError(absl::StrCat(name_, ": a NaN input has no bucket"));
      }
      y->data()[i] = static_cast<float>(
          std::upper_bound(boundaries_.begin(), boundaries_.end(), v) - boundaries_.begin());
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor&,
                        Tensor* dx) override {
    return NoInputGradient(x, dx);
  }

 private:
  std::vector<float> boundaries_;
};

class CategoryEncodingLayer : public Layer {
 public:
  CategoryEncodingLayer(int64_t num_tokens, std::string mode)
      : num_tokens_(num_tokens), mode_(std::move(mode)) {}
  std::string type() const override { return "CategoryEncoding"; }
  std::string config() const override { return absl::StrCat(num_tokens_, " tokens, ", mode_); }
  nlohmann::json keras_config() const override {
    return {{"num_tokens", num_tokens_}, {"output_mode", mode_}, {"sparse", false}};
  }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (num_tokens_ <= 0 || (mode_ != "one_hot" && mode_ != "multi_hot" && mode_ != "count")) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": num_tokens must be positive and output_mode one_hot, multi_hot or count, got ",
          num_tokens_, " and ", mode_));
    }
    if (input.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": takes each example's ids as a vector, got ", ShapeString(input)));
    }
    ids_ = input.empty() ? 1 : input[0];
    // one_hot of several ids: one row each (Keras: [batch, k, num_tokens]).
    output_shape_ = mode_ == "one_hot" && ids_ > 1 ? Shape{ids_, num_tokens_} : Shape{num_tokens_};
    return output_shape_;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    const int64_t batch = x.dim(0);
    y->Resize(WithBatch(batch, output_shape_));
    std::fill(y->data(), y->data() + y->size(), 0.f);
    for (int64_t i = 0; i < x.size(); ++i) {
      RW_ASSIGN_OR_RETURN(const int64_t id, IdAt(name_, x, i));
      if (id < 0 || id >= num_tokens_) {
        return absl::InvalidArgumentError(absl::StrCat(name_, ": id ", id, " (example ", i / ids_,
                                                       ") is outside [0, ", num_tokens_, ")"));
      }
      const int64_t row = mode_ == "one_hot" ? i : i / ids_;
      float& slot = y->data()[row * num_tokens_ + id];
      slot = mode_ == "count" ? slot + 1.f : 1.f;
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor&,
                        Tensor* dx) override {
    return NoInputGradient(x, dx);
  }

 private:
  int64_t num_tokens_;
  std::string mode_;
  int64_t ids_ = 1;
};

class IntegerLookupLayer : public Layer {
 public:
  explicit IntegerLookupLayer(std::vector<int64_t> vocabulary)
      : vocabulary_(std::move(vocabulary)) {}
  std::string type() const override { return "IntegerLookup"; }
  std::string config() const override {
    return absl::StrCat("vocabulary ", absl::StrJoin(vocabulary_, " "));
  }
  nlohmann::json keras_config() const override {
    return {{"vocabulary", vocabulary_}, {"num_oov_indices", 1}, {"mask_token", nullptr},
            {"oov_token", -1},           {"output_mode", "int"}, {"invert", false}};
  }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    index_.clear();
    for (size_t i = 0; i < vocabulary_.size(); ++i) {
      if (!index_.emplace(vocabulary_[i], static_cast<int64_t>(i) + 1).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ": ", vocabulary_[i], " is twice in the vocabulary"));
      }
    }
    output_shape_ = input;
    return input;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(x.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      RW_ASSIGN_OR_RETURN(const int64_t id, IdAt(name_, x, i));
      const auto it = index_.find(id);
      y->data()[i] = it == index_.end() ? 0.f : static_cast<float>(it->second);
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor&,
                        Tensor* dx) override {
    return NoInputGradient(x, dx);
  }

 private:
  std::vector<int64_t> vocabulary_;
  std::map<int64_t, int64_t> index_;
};

}  // namespace

std::unique_ptr<Layer> Normalization(NormalizationOptions options) {
  return std::make_unique<NormalizationLayer>(std::move(options));
}
std::unique_ptr<Layer> Discretization(std::vector<float> bin_boundaries) {
  return std::make_unique<DiscretizationLayer>(std::move(bin_boundaries));
}
std::unique_ptr<Layer> CategoryEncoding(int64_t num_tokens, const std::string& output_mode) {
  return std::make_unique<CategoryEncodingLayer>(num_tokens, output_mode);
}
std::unique_ptr<Layer> IntegerLookup(std::vector<int64_t> vocabulary) {
  return std::make_unique<IntegerLookupLayer>(std::move(vocabulary));
}

absl::Status Adapt(Layer& normalization, const Dataset& data) {
  auto* layer = dynamic_cast<NormalizationLayer*>(&normalization);
  if (layer == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("Adapt: ", normalization.name(), " is a ",
                                                   normalization.type(), ", not a Normalization"));
  }
  const Tensor& features = data.examples().features;
  const int64_t count = data.examples().count();
  const int64_t width = features.rank() >= 2 ? features.shape().back() : 0;
  const int64_t per_example = count > 0 ? features.size() / count : 0;
  MultiWorkerMirroredStrategy* strategy = MultiWorkerMirroredStrategy::Current();
  // A worker joining an elastic job reads the whole data alone (the chief's
  // statistics replace its own when it joins).
  if (strategy != nullptr && strategy->joining()) strategy = nullptr;
  const int64_t workers = strategy != nullptr ? strategy->num_replicas_in_sync() : 1;
  const int64_t rank = strategy != nullptr ? strategy->rank() : 0;
  if (workers > 1) {
    // The collectives below need the same data everywhere: say so now, not by timing out.
    RW_RETURN_IF_ERROR(strategy->CheckSameOnEveryWorker(
        "Adapt's data",
        {absl::StrCat(count, " examples of ", per_example, " values, ", width, " features")}));
  }
  if (count == 0 || width == 0) {
    return absl::InvalidArgumentError("Adapt: the data has no examples with features");
  }
  // Pass 1: [values per feature, sums]; pass 2: squared deviations from the mean.
  std::vector<double> sums(static_cast<size_t>(2 * width), 0.0);
  auto each_value = [&](const std::function<void(int64_t feature, double value)>& add) {
    for (int64_t e = rank; e < count; e += workers) {
      const float* row = features.data() + e * per_example;
      for (int64_t i = 0; i < per_example; ++i) add(i % width, row[i]);
    }
  };
  each_value([&](int64_t j, double v) {
    sums[j] += 1;
    sums[width + j] += v;
  });
  auto reduce = [&]() -> absl::Status {
    if (strategy == nullptr || workers == 1) return absl::OkStatus();
    return strategy->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size()));
  };
  RW_RETURN_IF_ERROR(reduce());
  const std::vector<double> counted(sums.begin(), sums.begin() + width);
  std::vector<double> mean(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) mean[j] = sums[width + j] / counted[j];
  std::fill(sums.begin(), sums.end(), 0.0);
  each_value([&](int64_t j, double v) { sums[width + j] += (v - mean[j]) * (v - mean[j]); });
  RW_RETURN_IF_ERROR(reduce());
  std::vector<float> m(static_cast<size_t>(width)), var(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) {
    m[j] = static_cast<float>(mean[j]);
    var[j] = static_cast<float>(sums[width + j] / counted[j]);
  }
  return layer->Set(m, var);
}

}  // namespace ringwork
