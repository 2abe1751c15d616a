// train on your files: --train_data, --validation_data, --test_data name them by
// a SPEC ("tfrecord:GLOB", "csv:GLOB", "npz:GLOB" or "images:DIR"), --features
// and --targets the features the model reads and learns (as NAME[:SHAPE], e.g.
// image:28x28x1; several CSV columns go side by side into one input vector,
// several targets into one target vector). The pipelines stream the files; the
// training one is shuffled through a buffer each epoch.
//
//   RW_ASSIGN_OR_RETURN(std::optional<FileData> files, LoadFileData(flags));
//   if (files) model.Fit(files->train, {.binding = files->binding, ...});
//
// The features' types come from the first record of the first file (a float
// list is float32, an int64 list int64; NumPy: the arrays' dtypes); a feature
// without a shape takes its count there (1: a scalar; NumPy: the row's shape).
// The classes of an integer target are counted by a pass over the training
// files (with the examples, for a learning rate schedule's length), unless
// --num_classes gives them. images:DIR: a class per sub-folder, labels from the
// folders, the images at the first one's size or --features=image:HxWxC.
#ifndef RINGWORK_TOOLS_TRAIN_DATA_H_
#define RINGWORK_TOOLS_TRAIN_DATA_H_

#include <optional>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"
#include "keras/pipeline_batch.h"
#include "tools/train_flags.h"

namespace ringwork {

struct FileData {
  Pipeline train;
  std::optional<Pipeline> validation, test;
  DataBinding binding;
  Shape input_shape;
  int64_t classes = 0;          // Class ids' (target_width 0).
  int64_t target_width = 0;     // Numbers: values per example over the targets.
  int64_t train_examples = -1;  // Over every file; -1: not counted.
};

// nullopt without --train_data. INVALID_ARGUMENT (exit 2) for a SPEC, feature or
// shape that cannot be used, naming the flag; NOT_FOUND for a glob without files.
absl::StatusOr<std::optional<FileData>> LoadFileData(const TrainFlags& f);

// model predict --data=SPEC [--features=...]: every element of the files, in
// their order. With `pack`, the input as train binds it: the one feature (or the
// one named) as it is, several (CSV's columns) side by side as "features";
// without, the features as they are, for a model of several inputs to bind by name.
struct PredictData {
  Pipeline data;
  DataBinding binding;
};
absl::StatusOr<PredictData> LoadPredictData(const std::string& spec, const std::string& features,
                                            bool pack);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_TRAIN_DATA_H_
