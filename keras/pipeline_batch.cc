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
  if (binding.features.empty() && binding.targets.empty()) {
    if (spec.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the dataset's elements have ", spec.size(), " features (", Names(spec),
          "): name the model's input and target (DataBinding, or train's --features and "
          "--targets)"));
    }
    bound.input = 0;
    bound.target = 1;
  } else {
    if (binding.features.size() != 1 || binding.targets.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a model reads one input feature and trains toward one target for now (",
          binding.features.size(), " features and ", binding.targets.size(), " targets given)"));
    }
    bound.input = FeatureIndex(spec, binding.features[0]);
    bound.target = FeatureIndex(spec, binding.targets[0]);
    for (const auto& [name, index] :
         {std::pair{binding.features[0], bound.input}, {binding.targets[0], bound.target}}) {
      if (index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("the dataset has no feature \"", name, "\" (it has ", Names(spec), ")"));
      }
    }
  }
  const FeatureInfo& input = spec[static_cast<size_t>(bound.input)];
  const FeatureInfo& target = spec[static_cast<size_t>(bound.target)];
  if (input.type == ValueType::kString || target.type == ValueType::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature \"", input.type == ValueType::kString ? input.name : target.name,
                     "\" holds strings: a model takes numbers (map them to ids first)"));
  }
  for (int64_t d : input.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("the model's input \"", input.name,
                                                     "\" has shape ", ShapeString(input.shape),
                                                     ", which varies: give it a fixed shape"));
    }
  }
  if (NumElements(target.shape) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("the target \"", target.name, "\" has shape ",
                                                   ShapeString(target.shape),
                                                   ": one class id per example for now"));
  }
  bound.input_shape = input.shape;
  return bound;
}

absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out) {
  RW_RETURN_IF_ERROR(batch.values[static_cast<size_t>(bound.input)].ToFloat(&out->features));
  const TypedTensor& target = batch.values[static_cast<size_t>(bound.target)];
  const int64_t n = target.shape().empty() ? 1 : target.shape()[0];
  out->labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double v = target.ValueAsDouble(i);
    if (v != std::floor(v) || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target \"", spec[static_cast<size_t>(bound.target)].name, "\" = ", v,
          " is not a class id (float targets, for regression, are not supported yet)"));
    }
    out->labels[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  return absl::OkStatus();
}

}  // namespace ringwork
