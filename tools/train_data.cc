#include "tools/train_data.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/pipeline/csv_source.h"
#include "data/pipeline/image_folder.h"
#include "data/pipeline/npz_source.h"
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
  if ((spec.kind != "tfrecord" && spec.kind != "csv" && spec.kind != "images" &&
       spec.kind != "npz") ||
      spec.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", text,
                     ": expected tfrecord:GLOB (TFRecord files of tf.train.Example), csv:GLOB, "
                     "npz:GLOB (NumPy archives) or images:DIR (a folder per class)"));
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

// A Map that gives features new shapes of as many values (NumPy rows as images).
absl::StatusOr<Pipeline> Reshaped(Pipeline p, const std::vector<NamedShape>& shapes) {
  ElementSpec spec = p.spec();
  std::vector<std::pair<size_t, Shape>> changes;
  for (const NamedShape& n : shapes) {
    const int i = FeatureIndex(spec, n.name);
    if (i < 0 || !n.shape.has_value() || spec[static_cast<size_t>(i)].shape == *n.shape) continue;
    FeatureInfo& info = spec[static_cast<size_t>(i)];
    if (NumElements(info.shape) != NumElements(*n.shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature \"", n.name, "\": ", NumElements(info.shape), " values a row; its shape ",
          ShapeString(*n.shape), " has ", NumElements(*n.shape)));
    }
    info.shape = *n.shape;
    changes.emplace_back(static_cast<size_t>(i), *n.shape);
  }
  if (changes.empty()) return p;
  MapFn reshape = [changes](Element* e) {
    for (const auto& [i, shape] : changes) e->values[i].Reshape(shape);
    return absl::OkStatus();
  };
  return p.Map(std::move(reshape), 1, spec, "reshape");
}

// How one SPEC's files become parsed elements, the same for every data set.
struct Reader {
  std::string kind;
  std::optional<ExampleParser> tfrecord;  // kind "tfrecord"
  CsvPipelineOptions csv;                 // kind "csv"
  std::vector<std::string> npz_select;    // kind "npz": the arrays
  std::vector<NamedShape> npz_shapes;     // and the shapes asked for.
  absl::StatusOr<Pipeline> Open(const std::vector<std::string>& files, int threads) const {
    if (kind == "csv") return CsvPipeline(files, csv, threads);
    if (kind == "npz") {
      RW_ASSIGN_OR_RETURN(Pipeline rows, NpzPipeline(files, npz_select));
      return Reshaped(std::move(rows), npz_shapes);
    }
    return TFRecordPipeline(files).Map(ParseExamplesFn(*tfrecord), threads, ParsedSpec(*tfrecord),
                                       "parse");
  }
};

// The reader of `train_files`: its features' types and shapes from the first
// record (TFRecord) or the header and first rows (CSV).
absl::StatusOr<Reader> MakeReader(const std::string& kind, const std::vector<std::string>& files,
                                  const std::vector<NamedShape>& features,
                                  const std::vector<NamedShape>& targets) {
  Reader reader;
  reader.kind = kind;
  if (kind == "csv") {
    if (!features.empty()) {
      for (const NamedShape& n : features) reader.csv.select.push_back(n.name);
      for (const NamedShape& n : targets) reader.csv.select.push_back(n.name);
    }
    return reader;
  }
  if (kind == "npz") {
    if (!features.empty()) {
      for (const NamedShape& n : features) reader.npz_select.push_back(n.name);
      for (const NamedShape& n : targets) reader.npz_select.push_back(n.name);
    }
    reader.npz_shapes = features;
    reader.npz_shapes.insert(reader.npz_shapes.end(), targets.begin(), targets.end());
    return reader;
  }
  RW_ASSIGN_OR_RETURN(std::vector<ExampleFeature> found, FirstRecord(files[0]));
  RW_ASSIGN_OR_RETURN(std::vector<FeatureSpec> target_specs, Specs(found, files[0], targets, {}));
  RW_ASSIGN_OR_RETURN(std::vector<FeatureSpec> specs, Specs(found, files[0], features, targets));
  specs.insert(specs.end(), target_specs.begin(), target_specs.end());
  RW_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(specs));
  reader.tfrecord.emplace(std::move(parser));
  return reader;
}

// images:DIR: a folder per class, as Keras' image_dataset_from_directory; the
// pixels scaled to [0, 1], every file's class known from its folder.
absl::StatusOr<FileData> LoadImageFolders(const TrainFlags& f, const std::string& dir,
                                          const std::vector<NamedShape>& features,
                                          const std::vector<NamedShape>& targets) {
  ImageFolderOptions options{.height = 0, .width = 0, .color_mode = ""};
  if (features.size() > 1 || (features.size() == 1 && features[0].name != "image") ||
      targets.size() > 1 || (targets.size() == 1 && targets[0].name != "label")) {
    return absl::InvalidArgumentError(
        "images:DIR gives the features image and label: --features=image[:HxWxC] "
        "--targets=label, or neither");
  }
  if (!features.empty() && features[0].shape.has_value()) {
    const Shape& shape = *features[0].shape;
    if (shape.size() != 3 || (shape[2] != 1 && shape[2] != 3 && shape[2] != 4)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--features=", f.features, ": an image is HxWxC with 1, 3 or 4 channels"));
    }
    options.height = shape[0];
    options.width = shape[1];
    options.color_mode = shape[2] == 1 ? "grayscale" : shape[2] == 3 ? "rgb" : "rgba";
  }
  options.seed = static_cast<uint64_t>(f.seed);
  options.shuffle = f.shuffle_buffer > 0;
  options.rescale = 1.0f / 255;
  RW_ASSIGN_OR_RETURN(ImageFolder train, ImageFolderPipeline(dir, options));
  FileData data{train.pipeline};
  data.binding = {.features = {"image"}, .targets = {"label"}};
  data.input_shape = train.pipeline.spec()[0].shape;
  data.classes = static_cast<int64_t>(train.class_names.size());
  data.train_examples = train.files;
  if (f.num_classes > 0 && f.num_classes != data.classes) {
    return absl::InvalidArgumentError(absl::StrCat("--num_classes=", f.num_classes, ": ", dir,
                                                   " has ", data.classes, " class folders"));
  }
  if (data.classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, " has one class folder: a classifier needs 2 or more"));
  }
  // Validation and test folders at the training images' size, labelled alike.
  options.height = data.input_shape[0];
  options.width = data.input_shape[1];
  options.color_mode = data.input_shape[2] == 1   ? "grayscale"
                       : data.input_shape[2] == 3 ? "rgb"
                                                  : "rgba";
  options.shuffle = false;
  options.class_names = train.class_names;
  for (const auto& [flag, text, out] :
       {std::tuple{"validation_data", f.validation_data, &data.validation},
        std::tuple{"test_data", f.test_data, &data.test}}) {
    if (text.empty()) continue;
    RW_ASSIGN_OR_RETURN(const Spec spec, ParseSpec(flag, text));
    if (spec.kind != "images") {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", text, ": --train_data is images:DIR; so is this"));
    }
    absl::StatusOr<ImageFolder> folder = ImageFolderPipeline(spec.path, options);
    if (!folder.ok()) {
      return absl::Status(folder.status().code(),
                          absl::StrCat("--", flag, ": ", folder.status().message()));
    }
    out->emplace(std::move(folder->pipeline));
  }
  return data;
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
  if (train_spec.kind == "images") {
    RW_ASSIGN_OR_RETURN(FileData images, LoadImageFolders(f, train_spec.path, features, targets));
    return std::optional<FileData>(std::move(images));
  }
  if (targets.empty()) {
    return absl::InvalidArgumentError("--targets: name the features the model learns");
  }
  RW_ASSIGN_OR_RETURN(std::vector<std::string> train_files, ExpandGlob(train_spec.path));
  RW_ASSIGN_OR_RETURN(const Reader reader,
                      MakeReader(train_spec.kind, train_files, features, targets));
  RW_ASSIGN_OR_RETURN(Pipeline parsed, reader.Open(train_files, kAutotune));
  // The input: one feature as it is; several (CSV's columns) side by side in one
  // vector, "features".
  std::vector<std::string> target_names, input_names;
  for (const NamedShape& t : targets) {
    if (FeatureIndex(parsed.spec(), t.name) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--targets: the data has no feature \"",
                                                     t.name, "\" (it has ",
                                                     SpecString(parsed.spec()), ")"));
    }
    target_names.push_back(t.name);
  }
  for (const FeatureInfo& info : parsed.spec()) {
    if (std::find(target_names.begin(), target_names.end(), info.name) == target_names.end()) {
      input_names.push_back(info.name);
    }
  }
  if (input_names.empty()) return absl::InvalidArgumentError("--features: no input feature left");
  std::optional<ElementSpec> packed;
  std::string input = input_names[0];
  if (input_names.size() > 1 || parsed.spec()[FeatureIndex(parsed.spec(), input)].shape.empty()) {
    RW_ASSIGN_OR_RETURN(packed, PackedSpec(parsed.spec(), input_names, "features"));
    input = "features";
  }
  auto make = [&](const std::vector<std::string>& files) -> absl::StatusOr<Pipeline> {
    RW_ASSIGN_OR_RETURN(Pipeline p, reader.Open(files, kAutotune));
    if (packed.has_value()) {
      p = p.Map(PackFeaturesFn(p.spec(), input_names, "features"), 1, *packed, "pack");
    }
    return p;
  };
  RW_ASSIGN_OR_RETURN(Pipeline train, make(train_files));
  FileData data{train};
  if (f.shuffle_buffer > 0) {
    data.train = data.train.Shuffle(f.shuffle_buffer, static_cast<uint64_t>(f.seed));
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"validation_data", f.validation_data, &data.validation},
        std::tuple{"test_data", f.test_data, &data.test}}) {
    if (text.empty()) continue;
    RW_ASSIGN_OR_RETURN(const Spec spec, ParseSpec(flag, text));
    if (spec.kind != train_spec.kind) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": --train_data is ",
                                                     train_spec.kind, " files; so is this"));
    }
    RW_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandGlob(spec.path));
    RW_ASSIGN_OR_RETURN(Pipeline p, make(files));
    out->emplace(std::move(p));
  }
  data.binding = {.features = {input}, .targets = target_names};
  RW_ASSIGN_OR_RETURN(const PipelineBinding bound, BindPipeline(data.train.spec(), data.binding));
  data.input_shape = bound.input_shape;
  if (!bound.class_ids()) {
    // Numbers (regression, multi-label): an output per target value.
    data.target_width = bound.target_width();
    return std::optional<FileData>(std::move(data));
  }
  // Class ids: the classes (and the examples, for a schedule's length) from a
  // pass over the targets, unless neither is needed.
  data.classes = f.num_classes;
  if (f.num_classes > 0 && LearningRateScheduleName(f) == "none") {
    return std::optional<FileData>(std::move(data));
  }
  data.train_examples = 0;
  const int target = FeatureIndex(parsed.spec(), target_names[0]);
  auto it = parsed.Iterate({.ignore_errors = f.ignore_errors});
  Element e;
  int64_t max_label = -1;
  while (true) {
    absl::StatusOr<bool> more = it->Next(&e);
    if (!more.ok()) return InvalidDataError(more.status().message());
    if (!*more) break;
    const int64_t label =
        static_cast<int64_t>(e.values[static_cast<size_t>(target)].ValueAsDouble(0));
    if (label < 0) {
      return InvalidDataError(absl::StrCat(OriginOf(e), "target \"", target_names[0],
                                           "\" = ", label, ": class ids start at 0"));
    }
    max_label = std::max(max_label, label);
    ++data.train_examples;
  }
  if (data.classes == 0) data.classes = max_label + 1;
  if (data.classes < 2 || max_label >= data.classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the target \"", target_names[0], "\" has classes 0..", max_label,
        f.num_classes > 0 ? absl::StrCat(", more than --num_classes=", f.num_classes) : "",
        ": a classifier needs 2 or more"));
  }
  return std::optional<FileData>(std::move(data));
}

absl::StatusOr<PredictData> LoadPredictData(const std::string& spec_text,
                                            const std::string& features_text, bool pack) {
  RW_ASSIGN_OR_RETURN(const Spec spec, ParseSpec("data", spec_text));
  RW_ASSIGN_OR_RETURN(std::vector<NamedShape> features, ParseNames("features", features_text));
  if (spec.kind == "images") {
    TrainFlags f;
    f.features = features_text;
    f.shuffle_buffer = 0;  // In the folders' order.
    RW_ASSIGN_OR_RETURN(FileData images, LoadImageFolders(f, spec.path, features, {}));
    return PredictData{images.train, {.features = {"image"}}};
  }
  RW_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandGlob(spec.path));
  RW_ASSIGN_OR_RETURN(const Reader reader, MakeReader(spec.kind, files, features, {}));
  RW_ASSIGN_OR_RETURN(Pipeline parsed, reader.Open(files, kAutotune));
  std::vector<std::string> names;
  for (const FeatureInfo& info : parsed.spec()) names.push_back(info.name);
  if (!pack) return PredictData{parsed, {}};  // Bound by the model's input names.
  if (names.size() == 1 && !parsed.spec()[0].shape.empty()) {
    return PredictData{parsed, {.features = {names[0]}}};
  }
  RW_ASSIGN_OR_RETURN(const ElementSpec packed, PackedSpec(parsed.spec(), names, "features"));
  parsed = parsed.Map(PackFeaturesFn(parsed.spec(), names, "features"), 1, packed, "pack");
  return PredictData{parsed, {.features = {"features"}}};
}

}  // namespace ringwork
