#include "keras/pipeline_batch.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

std::string Names(const ElementSpec& spec) {
  std::vector<std::string> names;
  for (const FeatureInfo& f : spec) names.push_back(f.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<PipelineBinding> BindPipeline(const ElementSpec& spec, const DataBinding& binding) {
  PipelineBinding bound;
  auto find = [&](const std::string& name) -> absl::StatusOr<int> {
    const int index = FeatureIndex(spec, name);
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the dataset has no feature \"", name, "\" (it has ", Names(spec), ")"));
    }
    const FeatureInfo& f = spec[static_cast<size_t>(index)];
    if (f.type == ValueType::kString) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature \"", name, "\" holds strings: a model takes numbers (map them to ids first)"));
    }
    for (int64_t d : f.shape) {
      if (d < 0) {
        return absl::InvalidArgumentError(absl::StrCat("feature \"", name, "\" has shape ",
                                                       ShapeString(f.shape),
                                                       ", which varies: give it a fixed shape"));
      }
    }
    return index;
  };
  std::vector<std::string> features = binding.features, targets = binding.targets;
  if (features.empty() && targets.empty()) {
    if (spec.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the dataset's elements have ", spec.size(), " features (", Names(spec),
          "): name the model's input and targets (DataBinding, or train's --features and "
          "--targets)"));
    }
    features = {spec[0].name};
    targets = {spec[1].name};
  }
  if (features.size() != 1 || targets.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a model reads one input feature for now, and learns one or more targets (",
                     features.size(), " features and ", targets.size(), " targets given)"));
  }
  RW_ASSIGN_OR_RETURN(bound.input, find(features[0]));
  bool integers = true;
  for (const std::string& name : targets) {
    RW_ASSIGN_OR_RETURN(const int index, find(name));
    bound.targets.push_back(index);
    const FeatureInfo& f = spec[static_cast<size_t>(index)];
    bound.target_width += NumElements(f.shape);
    integers = integers && f.type != ValueType::kFloat32;
  }
  bound.class_ids = integers && bound.target_width == 1;
  if (!binding.sample_weight.empty()) {
    RW_ASSIGN_OR_RETURN(bound.weight, find(binding.sample_weight));
    if (NumElements(spec[static_cast<size_t>(bound.weight)].shape) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("the sample weight \"", binding.sample_weight,
                                                     "\" must be one number per example"));
    }
  }
  bound.input_shape = spec[static_cast<size_t>(bound.input)].shape;
  return bound;
}

absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out) {
  RW_RETURN_IF_ERROR(batch.values[static_cast<size_t>(bound.input)].ToFloat(&out->features));
  const int64_t n = out->features.dim(0);
  out->weights.clear();
  if (bound.weight >= 0) {
    const TypedTensor& w = batch.values[static_cast<size_t>(bound.weight)];
    out->weights.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out->weights[i] = static_cast<float>(w.ValueAsDouble(i));
  }
  if (bound.class_ids) {
    out->targets = Tensor();
    const TypedTensor& target = batch.values[static_cast<size_t>(bound.targets[0])];
    out->labels.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double v = target.ValueAsDouble(i);
      if (v != std::floor(v) || v < std::numeric_limits<int32_t>::min() ||
          v > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("target \"", spec[static_cast<size_t>(bound.targets[0])].name, "\" = ", v,
                         " is not a class id"));
      }
      out->labels[static_cast<size_t>(i)] = static_cast<int32_t>(v);
    }
    return absl::OkStatus();
  }
  // Numbers: every target's values side by side, example by example.
  out->labels.clear();
  out->targets.Resize({n, bound.target_width});
  int64_t column = 0;
  for (int index : bound.targets) {
    const TypedTensor& t = batch.values[static_cast<size_t>(index)];
    const int64_t per = n > 0 ? t.size() / n : 0;
    for (int64_t i = 0; i < n; ++i) {
      float* row = out->targets.data() + i * bound.target_width + column;
      if (t.type() == ValueType::kFloat32) {
        std::copy(t.data<float>() + i * per, t.data<float>() + (i + 1) * per, row);
      } else {
        for (int64_t k = 0; k < per; ++k) row[k] = static_cast<float>(t.ValueAsDouble(i * per + k));
      }
    }
    column += per;
  }
  return absl::OkStatus();
}

}  // namespace ringwork
