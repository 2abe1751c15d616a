// Embedding: its table's gradient matches finite differences; bad ids are refused;
// on 3 workers the sparse (ids, rows) all-gather and the dense all-reduce of the
// table's gradient train to the same weights, replicas identical either way.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "keras/gradient_check_testing.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Two ids per example from [0, vocabulary); the label is their sum modulo 10.
Examples Ids(int64_t count, int64_t vocabulary) {
  Examples e;
  e.features = Tensor({count, 2});
  for (int64_t i = 0; i < count; ++i) {
    const int64_t a = (i * 7919) % vocabulary, b = (i * 104729 + 13) % vocabulary;
    e.features[2 * i] = static_cast<float>(a);
    e.features[2 * i + 1] = static_cast<float>(b);
    e.labels.push_back(static_cast<int32_t>((a + b) % 10));
  }
  return e;
}

TEST_CASE("an Embedding table's gradient matches finite differences", "[embedding]") {
  Sequential model;
  model.Add(Embedding(7, 3));
  model.Add(Flatten());
  model.Add(Dense(3, {.activation = "tanh"}));
  model.Add(Dense(3));
  CompileOptions options;
  options.loss = {"sparse_categorical_crossentropy", true};
  options.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  options.intra_op_threads = 1;
  REQUIRE(model.Compile(options).ok());
  Batch batch;
  batch.features = Tensor({4, 2}, {0, 3, 3, 5, 6, 0, 2, 2});  // Row 3 twice, rows 1 and 4 never.
  batch.labels = {0, 2, 1, 2};
  CheckGradientsByFiniteDifferences(model, batch, 1);
  const Variable* table = model.trainable_variables()[0];
  CHECK(table->name == "embedding/embeddings");
  CHECK(table->touched_rows == std::vector<int64_t>{0, 2, 3, 5, 6});
  CHECK(table->grad[1 * 3] == 0.f);
  CHECK_THAT(model.Summary(), Contains("embedding (Embedding)       (None, 2, 3)              21"));

  Batch bad = batch;
  bad.features[3] = 7;
  CHECK_THAT(std::string(model.TrainStep(bad).status().message()),
             Contains("embedding: input value 7 (example 1 of the batch) is not an id in [0, 7)"));
}

// Trains Embedding(2000, 8) -> Flatten -> Dense(10) on `workers` workers for 2
// epochs of global batch 96; returns each worker's weights fingerprint and the
// chief's weights.
struct Trained {
  std::vector<uint64_t> fingerprints;
  std::vector<float> weights;
};
Trained Train(SparseReduction mode, int workers = 3,
              const OptimizerSpec& optimizer = {.name = "sgd", .learning_rate = 0.5f}) {
  // 481 = 5 x 96 + 1: the last global batch leaves two workers without an example.
  static const Dataset* data = new Dataset(Dataset::FromExamples(Ids(481, 2000)));
  LocalCluster::Options options;
  options.num_workers = workers;
  options.strategy.communication.sparse_reduction = mode;
  Trained out;
  out.fingerprints.resize(static_cast<size_t>(workers));
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Embedding(2000, 8));
    model.Add(Flatten());
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.optimizer = optimizer;
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = 96;
    fit.verbose = 0;
    RW_RETURN_IF_ERROR(model.Fit(*data, fit).status());
    out.fingerprints[w.rank] = WeightsFingerprint(model);
    if (w.rank == 0) {
      for (const Variable* v : model.weights())
        out.weights.insert(out.weights.end(), v->value.data(), v->value.data() + v->size());
    }
    return absl::OkStatus();
  });
  for (int r = 0; r < workers; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
    CHECK(out.fingerprints[r] == out.fingerprints[0]);
  }
  return out;
}

// The largest difference between two runs' weights, and the largest weight.
std::pair<double, double> LargestDifference(const Trained& a, const Trained& b) {
  REQUIRE(a.weights.size() == b.weights.size());
  double worst = 0, largest = 0;
  for (size_t i = 0; i < a.weights.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a.weights[i]) - b.weights[i]));
    largest = std::max(largest, std::abs(static_cast<double>(b.weights[i])));
  }
  return {worst, largest};
}

TEST_CASE("sparse and dense reduction of an embedding gradient train alike; auto picks sparse",
          "[embedding][distributed]") {
  const Trained sparse = Train(SparseReduction::kSparse);
  const Trained dense = Train(SparseReduction::kDense);
  const Trained automatic = Train(SparseReduction::kAuto);
  // 3 x 64 ids x (8 B + 32 B) against twice a 2000 x 8 table: auto sends rows.
  CHECK(automatic.fingerprints[0] == sparse.fingerprints[0]);
  const auto [worst, largest] = LargestDifference(sparse, dense);
  INFO("largest difference " << worst << " of weights up to " << largest);
  CHECK(worst < 1e-5 * largest);
  CHECK(sparse.fingerprints[0] !=
        dense.fingerprints[0]);  // Another summation order, so not bit-equal.
}

TEST_CASE("an Embedding trains on 3 workers as on 1, with SGD and with Adam",
          "[embedding][distributed]") {
  // 2 epochs of 481 examples in global batches of 96; the last leaves two of the 3
  // workers without an example. Adam moves every row whose moments are not zero,
  // also rows the batch does not touch (TensorFlow's Adam, not a lazy one).
  for (const OptimizerSpec& optimizer : {OptimizerSpec{.name = "sgd", .learning_rate = 0.5f},
                                         OptimizerSpec{.name = "adam", .learning_rate = 0.01f}}) {
    const Trained one = Train(SparseReduction::kAuto, 1, optimizer);
    for (SparseReduction mode : {SparseReduction::kSparse, SparseReduction::kDense}) {
      const Trained three = Train(mode, 3, optimizer);
      const auto [worst, largest] = LargestDifference(three, one);
      INFO(optimizer.name << (mode == SparseReduction::kSparse ? ", sparse" : ", dense")
                          << ": largest difference " << worst << " of weights up to " << largest);
      CHECK(largest > 0.05);  // Trained away from the start.
      CHECK(worst < 1e-5 * largest);
    }
  }
}

}  // namespace
}  // namespace ringwork
