// A pipeline's elements as a model's batches: which features are the model's
// inputs, its targets and its per-example weight (DataBinding), and a batch of
// them in the form a training step takes: the inputs as float32, side by side
// (a model of several inputs cuts them apart); per output, one integer target
// per example as class ids (Batch::labels), or numbers, or several values, as
// Batch::targets (several target features side by side: y0, ..., y9 make 10
// targets per example); a second output's targets in Batch::more_targets.
//
//   RW_ASSIGN_OR_RETURN(PipelineBinding bound, BindPipeline(pipeline.spec(),
//                                                           {.features = {"image"},
//                                                            .targets = {"label"}}));
//   RW_RETURN_IF_ERROR(ToModelBatch(element_batch, pipeline.spec(), bound, &batch));
//
// Keras binds a dataset of dicts by name: with a model's signature, inputs take
// the features named as they are, and each of several outputs the feature named
// as its layer.
#ifndef RINGWORK_KERAS_PIPELINE_BATCH_H_
#define RINGWORK_KERAS_PIPELINE_BATCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "data/pipeline/element.h"

namespace ringwork {

// Which features of a pipeline's elements the model reads and trains toward.
// Empty: by the model's names (ModelSignature), or for a model of one input and
// one output an element of two features is (input, target), as Keras takes a
// dataset of (x, y).
struct DataBinding {
  // The inputs, in the order of the model's inputs.
  std::vector<std::string> features;
  // One output: its targets, side by side. Several outputs: one per output, in
  // their order.
  std::vector<std::string> targets;
  std::string sample_weight;  // A feature of one number per example; "": weights 1.
};

// What a model reads and learns (Model::signature()): its inputs' names and
// shapes and its outputs' names. Empty: one input and one output, unnamed.
struct ModelSignature {
  std::vector<std::string> input_names;
  std::vector<Shape> input_shapes;
  std::vector<std::string> output_names;
};

struct OutputBinding {
  std::vector<int> targets;  // Feature indices in the element spec.
  bool class_ids = false;    // One integer target per example: labels, else targets.
  int64_t width = 0;         // Values per example over the targets.
};

struct PipelineBinding {
  std::vector<int> inputs;            // Feature indices in the element spec.
  std::vector<int64_t> input_widths;  // Values per example, per input.
  std::vector<OutputBinding> outputs;
  int weight = -1;
  // One example's input (the inputs' values side by side, flat, for several).
  Shape input_shape;
  // The first output's.
  bool class_ids() const { return outputs[0].class_ids; }
  int64_t target_width() const { return outputs[0].width; }
};

// INVALID_ARGUMENT naming the features the spec has: a name it lacks, strings, a
// shape that varies, inputs or targets that do not match the model's.
absl::StatusOr<PipelineBinding> BindPipeline(const ElementSpec& spec, const DataBinding& binding,
                                             const ModelSignature& model = {});

// Only the inputs (what predicting needs): `features` in the order of the model's
// inputs, into bound->inputs, input_widths and input_shape.
absl::Status BindInputs(const ElementSpec& spec, const std::vector<std::string>& features,
                        const ModelSignature& model, PipelineBinding* bound);

// The inputs of `batch` as one float32 tensor [n, ...] (several: flat, side by side).
absl::Status InputsToFloat(const Element& batch, const PipelineBinding& bound, Tensor* out);

// `batch` (features with a leading dimension) as the model's Batch. Class ids must
// be whole numbers in int32 (INVALID_ARGUMENT naming the target otherwise).
absl::Status ToModelBatch(const Element& batch, const ElementSpec& spec,
                          const PipelineBinding& bound, Batch* out);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_PIPELINE_BATCH_H_
