#include "keras/pipeline_batch.h"

#include <algorithm>
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

// The index of feature `name`, if a model can take it (numbers of a fixed shape).
absl::StatusOr<int> UsableFeature(const ElementSpec& spec, const std::string& name) {
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
}

}  // namespace

absl::Status BindInputs(const ElementSpec& spec, const std::vector<std::string>& features,
                        const ModelSignature& model, PipelineBinding* bound) {
  const size_t num_inputs = std::max<size_t>(1, model.input_names.size());
  if (features.size() != num_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", num_inputs, " input", num_inputs > 1 ? "s" : "", " (",
                     absl::StrJoin(model.input_names, ", "), "); ", features.size(),
                     " input features given (", absl::StrJoin(features, ", "), ")"));
  }
  bound->inputs.clear();
  bound->input_widths.clear();
  int64_t input_width = 0;
  for (size_t i = 0; i < features.size(); ++i) {
    RW_ASSIGN_OR_RETURN(const int index, UsableFeature(spec, features[i]));
    bound->inputs.push_back(index);
    const Shape& shape = spec[static_cast<size_t>(index)].shape;
    bound->input_widths.push_back(NumElements(shape));
    input_width += NumElements(shape);
    if (i < model.input_shapes.size() && NumElements(shape) != NumElements(model.input_shapes[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("the model's input \"", model.input_names[i], "\" takes examples of shape ",
                       ShapeString(model.input_shapes[i]), "; feature \"", features[i],
                       "\" has shape ", ShapeString(shape)));
    }
  }
  bound->input_shape =
      features.size() == 1 ? spec[static_cast<size_t>(bound->inputs[0])].shape : Shape{input_width};
  return absl::OkStatus();
}

absl::StatusOr<PipelineBinding> BindPipeline(const ElementSpec& spec, const DataBinding& binding,
                                             const ModelSignature& model) {
  PipelineBinding bound;
  auto in_spec = [&](const std::vector<std::string>& names) {
    if (names.empty()) return false;
    for (const std::string& name : names) {
      if (FeatureIndex(spec, name) < 0) return false;
    }
    return true;
  };
  const size_t num_inputs = std::max<size_t>(1, model.input_names.size());
  const size_t num_outputs = std::max<size_t>(1, model.output_names.size());
  std::vector<std::string> features = binding.features, targets = binding.targets;
  // The features not yet bound (nor the weight): what is left for the targets.
  auto rest = [&] {
    std::vector<std::string> left;
    for (const FeatureInfo& f : spec) {
      if (std::find(features.begin(), features.end(), f.name) == features.end() &&
          std::find(targets.begin(), targets.end(), f.name) == targets.end() &&
          f.name != binding.sample_weight) {
        left.push_back(f.name);
      }
    }
    return left;
  };
  // Each of several outputs learns the feature of its name (a dict's keys in Keras).
  if (targets.empty() && (num_outputs > 1 || in_spec(model.output_names))) {
    targets = model.output_names;
  }
  if (features.empty()) {
    if (in_spec(model.input_names)) {
      features = model.input_names;  // Keras: a dict's keys are the inputs' names.
    } else if (num_inputs == 1 && !targets.empty() && rest().size() == 1) {
      features = rest();
    } else if (num_inputs == 1 && targets.empty() && rest().size() == 2) {
      features = {rest()[0]};  // (x, y), as Keras takes a dataset of tuples.
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "the dataset's elements have ", spec.size(), " features (", Names(spec),
          "): name the model's input", num_inputs > 1 ? "s" : "", " and targets (DataBinding, ",
          "train's --features and --targets, or the names of the model's Input()s and output ",
          "layers)"));
    }
  }
  if (targets.empty()) {
    if (rest().size() == 1) {
      targets = rest();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("name the model's targets among the dataset's features (", Names(spec),
                       "): DataBinding, or train's --targets"));
    }
  }
  if (num_outputs > 1 && targets.size() != num_outputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model has ", num_outputs, " outputs (", absl::StrJoin(model.output_names, ", "),
        "): name one target feature per output, in their order; got ", targets.size(), " (",
        absl::StrJoin(targets, ", "), ")"));
  }
  RW_RETURN_IF_ERROR(BindInputs(spec, features, model, &bound));
  // One output learns every target side by side; several, one target each.
  std::vector<std::vector<std::string>> per_output;
  if (num_outputs == 1) {
    per_output.push_back(targets);
  } else {
    for (const std::string& t : targets) per_output.push_back({t});
  }
  for (const std::vector<std::string>& names : per_output) {
    OutputBinding out;
    bool integers = true;
    for (const std::string& name : names) {
      RW_ASSIGN_OR_RETURN(const int index, UsableFeature(spec, name));
      out.targets.push_back(index);
      const FeatureInfo& f = spec[static_cast<size_t>(index)];
      out.width += NumElements(f.shape);
      integers = integers && f.type != ValueType::kFloat32;
    }
    out.class_ids = integers && out.width == 1;
    bound.outputs.push_back(std::move(out));
  }
  if (!binding.sample_weight.empty()) {
    RW_ASSIGN_OR_RETURN(bound.weight, UsableFeature(spec, binding.sample_weight));
    if (NumElements(spec[static_cast<size_t>(bound.weight)].shape) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("the sample weight \"", binding.sample_weight,
                                                     "\" must be one number per example"));
    }
  }
  return bound;
}

absl::Status InputsToFloat(const Element& batch, const PipelineBinding& bound, Tensor* out) {
  if (bound.inputs.size() == 1) {
    return batch.values[static_cast<size_t>(bound.inputs[0])].ToFloat(out);
  }
  // Several inputs: each example's values of every input, one after the other.
  const int64_t n = batch.values[static_cast<size_t>(bound.inputs[0])].shape()[0];
  const int64_t width = bound.input_shape[0];
  out->Resize({n, width});
  Tensor one;
  int64_t column = 0;
  for (size_t i = 0; i < bound.inputs.size(); ++i) {
    RW_RETURN_IF_ERROR(batch.values[static_cast<size_t>(bound.inputs[i])].ToFloat(&one));
    const int64_t per = bound.input_widths[i];
    if (one.size() != n * per) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i + 1, " has ", one.size(),
                                                     " values for ", n, " examples, not ", per,
                                                     " each"));
    }
    for (int64_t i = 0; i < n; ++i) {
      std::copy(one.data() + i * per, one.data() + (i + 1) * per, out->data() + i * width + column);
    }
    column += per;
  }
  return absl::OkStatus();
}

namespace {

// One output's targets from `batch`: class ids into `labels`, or numbers into `targets`.
absl::Status ToTargets(const Element& batch, const ElementSpec& spec, const OutputBinding& bound,
                       int64_t n, std::vector<int32_t>* labels, Tensor* targets) {
  if (bound.class_ids) {
    *targets = Tensor();
    const TypedTensor& target = batch.values[static_cast<size_t>(bound.targets[0])];
    labels->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double v = target.ValueAsDouble(i);
      if (v != std::floor(v) || v < std::numeric_limits<int32_t>::min() ||
          v > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("target \"", spec[static_cast<size_t>(bound.targets[0])].name, "\" = ", v,
                         " is not a class id"));
      }
      (*labels)[static_cast<size_t>(i)] = static_cast<int32_t>(v);
    }
    return absl::OkStatus();
  }
  // Numbers: every target's values side by side, example by example.
  labels->clear();
  targets->Resize({n, bound.width});
  int64_t column = 0;
  for (int index : bound.targets) {
    const TypedTensor& t = batch.values[static_cast<size_t>(index)];
    const int64_t per = n > 0 ? t.size() / n : 0;
    for (int64_t i = 0; i < n; ++i) {
      float* row = targets->data() + i * bound.width + column;
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

}  // namespace

absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out) {
  RW_RETURN_IF_ERROR(InputsToFloat(batch, bound, &out->features));
  const int64_t n = out->features.dim(0);
  out->weights.clear();
  if (bound.weight >= 0) {
    const TypedTensor& w = batch.values[static_cast<size_t>(bound.weight)];
    out->weights.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out->weights[i] = static_cast<float>(w.ValueAsDouble(i));
  }
  RW_RETURN_IF_ERROR(ToTargets(batch, spec, bound.outputs[0], n, &out->labels, &out->targets));
  out->more_targets.resize(bound.outputs.size() - 1);
  for (size_t k = 1; k < bound.outputs.size(); ++k) {
    OutputTargets& more = out->more_targets[k - 1];
    RW_RETURN_IF_ERROR(ToTargets(batch, spec, bound.outputs[k], n, &more.labels, &more.targets));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
