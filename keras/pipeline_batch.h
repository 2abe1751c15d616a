// A pipeline's elements as a model's batches: which features are the model's
// input and its target (DataBinding), and a batch of them in the form a training
// step takes (the input as float32, the target as integer class ids).
//
//   RW_ASSIGN_OR_RETURN(PipelineBinding bound, BindPipeline(pipeline.spec(),
//                                                           {.features = {"image"},
//                                                            .targets = {"label"}}));
//   RW_RETURN_IF_ERROR(ToModelBatch(element_batch, bound, &batch));
//
// For now a model reads one input feature and trains toward one integer target
// (a class id); float targets (regression) are refused with a message.
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
};

struct PipelineBinding {
  int input = -1, target = -1;  // Feature indices in the element spec.
  Shape input_shape;            // One example's (INVALID_ARGUMENT when it varies).
};

// INVALID_ARGUMENT naming the features the spec has: a name it lacks, more than
// one input or target, a target of strings.
absl::StatusOr<PipelineBinding> BindPipeline(const ElementSpec& spec, const DataBinding& binding);

// `batch` (features with a leading dimension) as the model's Batch. Targets must
// be whole numbers in int32 (a float target: INVALID_ARGUMENT naming it).
absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_PIPELINE_BATCH_H_
