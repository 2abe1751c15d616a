// A pipeline's elements as a model's batches: which features are the model's
// input, its targets and its per-example weight (DataBinding), and a batch of
// them in the form a training step takes: the input as float32; one integer
// target per example as class ids (Batch::labels); numbers, or several values,
// as Batch::targets (several target features side by side: y0, ..., y9 make 10
// targets per example).
//
//   RW_ASSIGN_OR_RETURN(PipelineBinding bound, BindPipeline(pipeline.spec(),
//                                                           {.features = {"image"},
//                                                            .targets = {"label"}}));
//   RW_RETURN_IF_ERROR(ToModelBatch(element_batch, bound, &batch));
//
// For now a model reads one input feature and has one output.
#ifndef RINGWORK_KERAS_PIPELINE_BATCH_H_
#define RINGWORK_KERAS_PIPELINE_BATCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "data/pipeline/element.h"

namespace ringwork {

// Which features of a pipeline's elements the model reads and trains toward (its
// input, its target). Empty: an element of two features is (input, target), as
// Keras takes a dataset of (x, y).
struct DataBinding {
  std::vector<std::string> features;
  std::vector<std::string> targets;
  std::string sample_weight;  // A feature of one number per example; "": weights 1.
};

struct PipelineBinding {
  int input = -1;  // Feature indices in the element spec.
  std::vector<int> targets;
  int weight = -1;
  Shape input_shape;         // One example's (INVALID_ARGUMENT when it varies).
  bool class_ids = false;    // One integer target per example: labels, else targets.
  int64_t target_width = 0;  // Values per example over the targets.
};

// INVALID_ARGUMENT naming the features the spec has: a name it lacks, more than
// one input, strings, a shape that varies.
absl::StatusOr<PipelineBinding> BindPipeline(const ElementSpec& spec, const DataBinding& binding);

// `batch` (features with a leading dimension) as the model's Batch. Class ids must
// be whole numbers in int32 (INVALID_ARGUMENT naming the target otherwise).
absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_PIPELINE_BATCH_H_
