#include "tools/train_data.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/pipeline/tfrecord_source.h"
#include "io/record_reader.h"

namespace ringwork {
namespace {

struct Spec {
  std::string kind, path;
};

absl::StatusOr<Spec> ParseSpec(const std::string& flag, const std::string& text) {
  const size_t colon = text.find(':');
  Spec spec;
  if (colon != std::string::npos) {
    spec.kind = text.substr(0, colon);
    spec.path = text.substr(colon + 1);
  }
  if (spec.kind != "tfrecord" || spec.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", text, ": expected tfrecord:GLOB (TFRecord files of tf.train.Example)"));
  }
  return spec;
}

struct NamedShape {
  std::string name;
  std::optional<Shape> shape;
};

// "image:28x28x1,label" -> {image, [28, 28, 1]}, {label, unset}.
absl::StatusOr<std::vector<NamedShape>> ParseNames(const std::string& flag,
                                                   const std::string& text) {
  std::vector<NamedShape> out;
  if (text.empty()) return out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    NamedShape n;
    const size_t colon = item.find(':');
    n.name = std::string(item.substr(0, colon));
    if (colon != absl::string_view::npos) {
      Shape shape;
      for (absl::string_view d : absl::StrSplit(item.substr(colon + 1), 'x')) {
        int64_t v = 0;
        if (!absl::SimpleAtoi(d, &v) || v < 1) {
          return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": \"", item,
                                                         "\": a shape is dimensions like 28x28x1"));
        }
        shape.push_back(v);
      }
      n.shape = shape;
    }
    if (n.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": an empty name"));
    }
    out.push_back(std::move(n));
  }
  return out;
}

// The features of the first record of `file`.
absl::StatusOr<std::vector<ExampleFeature>> FirstRecord(const std::string& file) {
  RW_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, RecordReader::Open(file));
  std::string record;
  RW_ASSIGN_OR_RETURN(bool any, reader->Next(&record));
  if (!any) return absl::InvalidArgumentError(absl::StrCat(file, " holds no record"));
  absl::StatusOr<std::vector<ExampleFeature>> features = DescribeExample(record);
  if (!features.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ", record 0: ", features.status().message()));
  }
  return features;
}

// The parser's spec for `wanted` (all features but the targets when empty).
absl::StatusOr<std::vector<FeatureSpec>> Specs(const std::vector<ExampleFeature>& found,
                                               const std::string& file,
                                               std::vector<NamedShape> wanted,
                                               const std::vector<NamedShape>& targets) {
  if (wanted.empty()) {
    for (const ExampleFeature& e : found) {
      if (std::none_of(targets.begin(), targets.end(),
                       [&](const NamedShape& t) { return t.name == e.name; })) {
        wanted.push_back({e.name, std::nullopt});
      }
    }
  }
  std::vector<std::string> names;
  for (const ExampleFeature& e : found) names.push_back(e.name);
  std::vector<FeatureSpec> specs;
  for (const NamedShape& w : wanted) {
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const ExampleFeature& e) { return e.name == w.name; });
    if (it == found.end()) {
      return absl::InvalidArgumentError(absl::StrCat("feature \"", w.name, "\" is not in ", file,
                                                     " (its first record has ",
                                                     absl::StrJoin(names, ", "), ")"));
    }
    FeatureSpec spec;
    spec.name = w.name;
    spec.type = it->type;
    spec.shape = w.shape.has_value() ? *w.shape : it->count == 1 ? Shape() : Shape{it->count};
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

absl::StatusOr<std::optional<FileData>> LoadFileData(const TrainFlags& f) {
  if (f.train_data.empty()) {
    if (!f.validation_data.empty() || !f.test_data.empty()) {
      return absl::InvalidArgumentError("--validation_data and --test_data go with --train_data");
    }
    return std::optional<FileData>();
  }
  RW_ASSIGN_OR_RETURN(const Spec train_spec, ParseSpec("train_data", f.train_data));
  RW_ASSIGN_OR_RETURN(std::vector<NamedShape> features, ParseNames("features", f.features));
  RW_ASSIGN_OR_RETURN(std::vector<NamedShape> targets, ParseNames("targets", f.targets));
  if (targets.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--targets=", f.targets, ": name the one target feature the model learns (a class id)"));
  }
  RW_ASSIGN_OR_RETURN(std::vector<std::string> train_files, ExpandGlob(train_spec.path));
  RW_ASSIGN_OR_RETURN(std::vector<ExampleFeature> found, FirstRecord(train_files[0]));
  RW_ASSIGN_OR_RETURN(std::vector<FeatureSpec> target_specs,
                      Specs(found, train_files[0], targets, {}));
  RW_ASSIGN_OR_RETURN(std::vector<FeatureSpec> input_specs,
                      Specs(found, train_files[0], features, targets));
  if (input_specs.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--features: the built-in models read one input feature, ", input_specs.size(),
                     " given or found (name it: --features=NAME[:SHAPE])"));
  }
  if (target_specs[0].type != ValueType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--targets=", f.targets, ": \"", target_specs[0].name, "\" is a ",
                     ValueTypeName(target_specs[0].type),
                     " feature; the built-in models learn class ids (an int64 feature) for now"));
  }
  std::vector<FeatureSpec> specs = {input_specs[0], target_specs[0]};
  RW_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(specs));
  const ElementSpec parsed = ParsedSpec(parser);
  auto make = [&](const std::vector<std::string>& files) {
    return TFRecordPipeline(files).Map(ParseExamplesFn(parser), kAutotune, parsed);
  };
  FileData data{make(train_files)};
  if (f.shuffle_buffer > 0) {
    data.train = data.train.Shuffle(f.shuffle_buffer, static_cast<uint64_t>(f.seed));
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"validation_data", f.validation_data, &data.validation},
        std::tuple{"test_data", f.test_data, &data.test}}) {
    if (text.empty()) continue;
    RW_ASSIGN_OR_RETURN(const Spec spec, ParseSpec(flag, text));
    RW_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandGlob(spec.path));
    out->emplace(make(files));
  }
  data.binding = {.features = {specs[0].name}, .targets = {specs[1].name}};
  data.input_shape = specs[0].shape;
  // The classes (and the examples, for a schedule's length) from a pass over the
  // targets alone, unless neither is needed.
  data.classes = f.num_classes;
  data.train_examples = -1;
  if (f.num_classes > 0 && LearningRateScheduleName(f) == "none") {
    return std::optional<FileData>(std::move(data));
  }
  data.train_examples = 0;
  RW_ASSIGN_OR_RETURN(ExampleParser labels, ExampleParser::Create({specs[1]}));
  auto it = TFRecordPipeline(train_files)
                .Map(ParseExamplesFn(labels), 1, ParsedSpec(labels))
                .Iterate({.ignore_errors = f.ignore_errors});
  Element e;
  int64_t max_label = -1;
  while (true) {
    absl::StatusOr<bool> more = it->Next(&e);
    if (!more.ok()) return InvalidDataError(more.status().message());
    if (!*more) break;
    const int64_t label = e.values[0].data<int64_t>()[0];
    if (label < 0) {
      return InvalidDataError(absl::StrCat(OriginOf(e), "target \"", specs[1].name, "\" = ", label,
                                           ": class ids start at 0"));
    }
    max_label = std::max(max_label, label);
    ++data.train_examples;
  }
  if (data.classes == 0) data.classes = max_label + 1;
  if (data.classes < 2 || max_label >= data.classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the target \"", specs[1].name, "\" has classes 0..", max_label,
        f.num_classes > 0 ? absl::StrCat(", more than --num_classes=", f.num_classes) : "",
        ": a classifier needs 2 or more"));
  }
  return std::optional<FileData>(std::move(data));
}

}  // namespace ringwork
