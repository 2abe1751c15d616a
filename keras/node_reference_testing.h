// For tests that check Ringwork against programs the machine's node runs
// (TensorFlow.js, ONNX Runtime; scripts/setup.sh --suite installs them in
// /opt/ringwork-npm, RINGWORK_NODE_MODULES overrides), and the small models
// they compare.
//
//   RequireNodePackage("@tensorflow/tfjs");
//   SubprocessResult r = RunSubprocess({"/usr/bin/node", "script.js"}, NodeOptions());
//   TrainFewSteps(model, DeterministicInputs({8, 28, 28, 1}), 10);
#ifndef RINGWORK_KERAS_NODE_REFERENCE_TESTING_H_
#define RINGWORK_KERAS_NODE_REFERENCE_TESTING_H_

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "keras/model.h"
#include "testing/subprocess.h"

namespace ringwork {

inline std::string NodeModules() {
  const char* dir = std::getenv("RINGWORK_NODE_MODULES");
  return dir != nullptr ? dir : "/opt/ringwork-npm/node_modules";
}

// Fails the test, saying how to install it, when npm package `name` is missing.
inline void RequireNodePackage(const std::string& name) {
  std::ifstream package(NodeModules() + "/" + name + "/package.json");
  INFO(name << " is missing from " << NodeModules() << ": run scripts/setup.sh --suite");
  REQUIRE(package.good());
}

// A child process that finds the packages (NODE_PATH).
inline Subprocess::Options NodeOptions() {
  Subprocess::Options options;
  options.env["NODE_PATH"] = NodeModules();
  return options;
}

// The same values in every run: sines of the index.
inline Tensor DeterministicInputs(Shape shape) {
  Tensor x(std::move(shape));
  for (int64_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) + 0.2f * std::cos(1.3f * i);
  return x;
}

// Three steps on `x` with class ids i % classes: weights (and batch
// normalization's moving statistics) that are not the initial ones.
inline void TrainFewSteps(Model& model, const Tensor& x, int classes) {
  Batch batch;
  batch.features = x;
  for (int64_t i = 0; i < x.dim(0); ++i) batch.labels.push_back(static_cast<int32_t>(i % classes));
  for (int step = 0; step < 3; ++step) REQUIRE(model.TrainStep(batch).ok());
}

// What another runtime wrote to `path` (raw float32) equals `model.Predict(x)`
// within `margin`, value by value.
inline void RequireSameAsPredict(Model& model, const Tensor& x, const std::string& path,
                                 double margin) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::StatusOr<Tensor> ours = model.Predict(x);
  REQUIRE(ours.ok());
  REQUIRE(static_cast<int64_t>(bytes.size()) == ours->size() * 4);
  std::vector<float> theirs(static_cast<size_t>(ours->size()));
  std::memcpy(theirs.data(), bytes.data(), bytes.size());
  for (int64_t i = 0; i < ours->size(); ++i) {
    INFO("value " << i);
    CHECK(theirs[static_cast<size_t>(i)] == Approx((*ours)[i]).margin(margin));
  }
}

inline CompileOptions AdamOneThread() {
  CompileOptions compile;
  compile.optimizer = {.name = "adam", .learning_rate = 0.01f};
  compile.intra_op_threads = 1;
  return compile;
}

}  // namespace ringwork

#endif  // RINGWORK_KERAS_NODE_REFERENCE_TESTING_H_
