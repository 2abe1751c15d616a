// Ringwork's public API in one include, for apps that depend on //:ringwork (or
// @ringwork//:ringwork from another workspace).
//
//   #include "ringwork.h"
//   auto created = ringwork::MultiWorkerMirroredStrategy::Create();   // TF_CONFIG
//   if (!created.ok()) ringwork::ExitWithStatus(created.status());
//   std::unique_ptr<ringwork::MultiWorkerMirroredStrategy> strategy = std::move(*created);
//   auto scope = strategy->scope();             // models created here are mirrored
//   ringwork::Sequential model;                 // a ringwork::Model
//   model.Add(ringwork::Dense(10));
//   absl::Status compiled = model.Compile({.loss = {"sparse_categorical_crossentropy", true}});
//   if (!compiled.ok()) ringwork::ExitWithStatus(compiled);
//
// Options (CompileOptions, FitOptions, DenseOptions, StrategyOptions, ...) are
// plain structs whose fields have defaults: set the fields one by one
// (`FitOptions fit; fit.epochs = 5;`) or use C++20 designated initializers, which
// must name the fields in the order the struct declares them
// (`{.epochs = 5, .batch_size = 256}`, not the other way round); a field left out
// keeps its default.
// The headers included below are the public API: each opens with a usage example
// that //docs:header_examples_test compiles (docs/header_examples.sh says how an
// example is written). Include only ringwork.h; the types those headers use
// (Tensor, Variable, FlagSet, CheckpointDirectory, ...) come with it.
// See examples/own_data.cc (a functional model on your CSV files),
// examples/keras_app.cc (Keras-style) and examples/custom_training_loop.cc (your
// own loop with the kernels and the strategy), examples/evaluator_app.cc (an
// evaluator task beside the workers: ResolveThisTask, SidecarEvaluator).
#ifndef RINGWORK_RINGWORK_H_
#define RINGWORK_RINGWORK_H_

#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/csv_reader.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "keras/applications.h"
#include "keras/callbacks.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/custom_objects.h"
#include "keras/functional.h"
#include "keras/initializers.h"
#include "keras/keras_import.h"
#include "keras/layers.h"
#include "keras/model.h"
#include "keras/onnx_export.h"
#include "keras/preprocessing.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "keras/sidecar_evaluator.h"
#include "keras/tensorboard_callback.h"
#include "keras/tfjs_export.h"
#include "keras/training_callbacks.h"
#include "keras/training_state.h"
#include "kernels/dense.h"
#include "kernels/kernel_context.h"
#include "kernels/losses.h"
#include "kernels/optimizers.h"
#include "runtime/config/cluster_source.h"
#include "runtime/worker_runtime.h"
#include "strategy/elastic_loop.h"
#include "strategy/multi_worker_mirrored_strategy.h"

#endif  // RINGWORK_RINGWORK_H_
