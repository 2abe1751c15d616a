// fit() on in-process clusters of real workers: every replica ends with the same
// weights, bit for bit, and reports the same history.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

TEST_CASE("replicas stay bit-identical and agree on every number", "[distributed]") {
  TrainTest data = SyntheticImages(3072, 512, 5);
  Dataset train = Dataset::FromExamples(data.train);
  Dataset test = Dataset::FromExamples(data.test);
  for (int inter_op : {1, 2}) {
    INFO("inter_op_threads " << inter_op);
    LocalCluster::Options options;
    options.num_workers = 3;
    options.strategy.inter_op_threads = inter_op;
    options.strategy.communication.bytes_per_pack =
        64 << 10;  // Several packs (in one all-reduce without overlap).
    std::vector<uint64_t> fingerprints(3);
    std::vector<double> losses(3), accuracies(3);
    auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      auto scope = w.strategy->scope();
      Sequential model;
      model.Add(Flatten());
      model.Add(Dense(64, {.activation = "relu"}));
      model.Add(Dropout(0.1));
      model.Add(Dense(10));
      CompileOptions compile;
      compile.loss = {"sparse_categorical_crossentropy", true};
      compile.intra_op_threads = 1;
      RW_RETURN_IF_ERROR(model.Compile(compile));
      FitOptions fit;
      fit.epochs = 2;
      fit.batch_size = 96;
      fit.verbose = 0;
      absl::StatusOr<History> history = model.Fit(train, fit);
      if (!history.ok()) return history.status();
      absl::StatusOr<EvaluateResult> result = model.Evaluate(test);
      if (!result.ok()) return result.status();
      fingerprints[w.rank] = WeightsFingerprint(model);
      losses[w.rank] = (*history)["loss"].back();
      accuracies[w.rank] = result->metrics["accuracy"];
      return absl::OkStatus();
    });
    for (int r = 0; r < 3; ++r) {
      INFO("worker " << r << ": " << results[r].message());
      REQUIRE(results[r].ok());
      CHECK(fingerprints[r] == fingerprints[0]);
      CHECK(losses[r] == losses[0]);
      CHECK(accuracies[r] == accuracies[0]);
    }
    CHECK(accuracies[0] > 0.3);
  }
}

// Trains a small MLP for two epochs with global batch 96 on `num_workers` workers;
// returns the chief's weights, flattened.
std::vector<float> TrainedWeights(int num_workers, const Dataset& train, int64_t batch = 96) {
  LocalCluster::Options options;
  options.num_workers = num_workers;
  std::vector<float> weights;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(32, {.activation = "relu"}));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.intra_op_threads = 1;
    // Plain SGD: unlike Adam, it sees the gradient's scale (a sum instead of a mean).
    compile.optimizer = {.name = "sgd", .learning_rate = 0.1f, .momentum = 0.9f};
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = batch;  // Global: each of N workers takes batch / N per step.
    fit.verbose = 0;
    RW_RETURN_IF_ERROR(model.Fit(train, fit).status());
    if (w.rank == 0) {
      for (const Variable* v : model.trainable_variables()) {
        weights.insert(weights.end(), v->value.data(), v->value.data() + v->value.size());
      }
    }
    return absl::OkStatus();
  });
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("worker " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
  }
  return weights;
}

// The largest |a[i] - b[i]| and the largest |b[i]|: how far two runs' weights are
// apart, against their size.
std::pair<double, double> LargestDifference(const std::vector<float>& a,
                                            const std::vector<float>& b) {
  double worst = 0, largest = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    largest = std::max(largest, std::abs(static_cast<double>(b[i])));
  }
  return {worst, largest};
}

// Trains Flatten -> BatchNormalization -> Dense for 2 epochs of global batch 96
// on `num_workers` workers; returns every worker's moving statistics of the
// normalization (which sees the raw input, so they depend on the data only) and
// its weights fingerprint.
struct MovingStatistics {
  std::vector<std::vector<float>> per_worker;
  std::vector<uint64_t> fingerprints;
};
MovingStatistics TrainedMovingStatistics(int num_workers, const Dataset& train) {
  LocalCluster::Options options;
  options.num_workers = num_workers;
  MovingStatistics out{std::vector<std::vector<float>>(num_workers),
                       std::vector<uint64_t>(num_workers)};
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(BatchNormalization({.momentum = 0.9f}));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = 96;
    fit.verbose = 0;
    RW_RETURN_IF_ERROR(model.Fit(train, fit).status());
    for (const Variable* v : model.weights()) {
      if (v->name.find("moving_") == std::string::npos) continue;
      out.per_worker[w.rank].insert(out.per_worker[w.rank].end(), v->value.data(),
                                    v->value.data() + v->size());
    }
    out.fingerprints[w.rank] = WeightsFingerprint(model);
    return absl::OkStatus();
  });
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("worker " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
  }
  return out;
}

TEST_CASE(
    "BatchNormalization's moving statistics are the global batch's, identical on every replica",
    "[distributed]") {
  // 962 = 10 x 96 + 2: the last global batch of each epoch leaves one of 3 workers
  // without an example (it adds zeros to the statistics).
  TrainTest data = SyntheticImages(962, 0, 23);
  Dataset train = Dataset::FromExamples(data.train);
  const MovingStatistics single = TrainedMovingStatistics(1, train);
  const MovingStatistics multi = TrainedMovingStatistics(3, train);
  REQUIRE(single.per_worker[0].size() == 2 * 28 * 28);
  for (int r = 0; r < 3; ++r) {
    CHECK(multi.fingerprints[r] == multi.fingerprints[0]);  // Moving statistics included.
    CHECK(multi.per_worker[r] == multi.per_worker[0]);
  }
  const auto [worst, largest] = LargestDifference(multi.per_worker[0], single.per_worker[0]);
  INFO("largest difference " << worst << " of statistics up to " << largest);
  CHECK(largest > 0.01);          // They moved from their start (zeros and ones).
  CHECK(worst < 1e-5 * largest);  // Only the order of additions differs.
}

// Every weight of Flatten -> Dense(16) -> [Sync]BatchNormalization -> ReLU ->
// Dense(10) after an epoch of SGD steps of global batch `batch` on `num_workers`
// workers.
std::vector<float> TrainedNormalizedWeights(int num_workers, bool sync, const Dataset& train,
                                            int64_t batch = 96) {
  LocalCluster::Options options;
  options.num_workers = num_workers;
  std::vector<float> weights;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(16));
    model.Add(sync ? SyncBatchNormalization() : BatchNormalization());
    model.Add(ActivationLayer("relu"));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.intra_op_threads = 1;
    compile.optimizer = {.name = "sgd", .learning_rate = 0.1f};
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 1;
    fit.batch_size = batch;
    fit.verbose = 0;
    RW_RETURN_IF_ERROR(model.Fit(train, fit).status());
    if (w.rank == 0) {
      for (const Variable* v : model.weights())
        weights.insert(weights.end(), v->value.data(), v->value.data() + v->size());
    }
    // The moving statistics learned from the batches (they start at zero).
    for (const Variable* v : model.weights()) {
      if (v->name.find("moving_mean") == std::string::npos) continue;
      if (std::all_of(v->value.data(), v->value.data() + v->size(),
                      [](float x) { return x == 0.f; })) {
        return absl::InternalError(absl::StrCat(v->name, " never moved"));
      }
    }
    return absl::OkStatus();
  });
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("worker " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
  }
  return weights;
}

TEST_CASE("SyncBatchNormalization: N workers with global batch B train as 1 worker with batch B",
          "[distributed]") {
  // 1922 = 20 x 96 + 2: a last step where one of 3 workers has no example.
  const Dataset train = Dataset::FromExamples(SyntheticImages(1922, 0, 29).train);
  for (bool sync : {true, false}) {
    INFO((sync ? "SyncBatchNormalization" : "BatchNormalization"));
    const std::vector<float> single = TrainedNormalizedWeights(1, sync, train);
    const std::vector<float> multi = TrainedNormalizedWeights(3, sync, train);
    REQUIRE(multi.size() == single.size());
    const auto [worst, norm] = LargestDifference(multi, single);
    INFO("largest difference " << worst << " of weights up to " << norm);
    if (sync) {
      CHECK(worst < 1e-5 * norm);
    } else {
      CHECK(worst > 1e-4 * norm);  // Each replica normalizes with its own third of the batch.
    }
  }
  // Unequal shares that are none of them empty: 97 on 3 is 33, 32, 32, and the
  // last step's 79 (1922 = 19 x 97 + 79) is 27, 26, 26. Each replica's gradient
  // sums must count by its own rows.
  const std::vector<float> single = TrainedNormalizedWeights(1, true, train, 97);
  const std::vector<float> multi = TrainedNormalizedWeights(3, true, train, 97);
  REQUIRE(multi.size() == single.size());
  const auto [worst, norm] = LargestDifference(multi, single);
  INFO("unequal shares: largest difference " << worst << " of weights up to " << norm);
  CHECK(worst < 1e-5 * norm);
}

TEST_CASE("N workers with global batch B end where 1 worker with batch B does", "[distributed]") {
  TrainTest data = SyntheticImages(1920, 0, 11);
  Dataset train = Dataset::FromExamples(data.train);
  const std::vector<float> single = TrainedWeights(1, train);
  REQUIRE(!single.empty());
  for (int n : {2, 3}) {
    INFO(n << " workers");
    const std::vector<float> multi = TrainedWeights(n, train);
    REQUIRE(multi.size() == single.size());
    const auto [worst, norm] = LargestDifference(multi, single);
    INFO("largest difference " << worst << " of weights up to " << norm);
    // 40 SGD steps; only the order of float additions differs.
    CHECK(worst < 1e-4 * norm);
  }
}

TEST_CASE("a short last batch split unevenly averages like one worker's", "[distributed]") {
  // 103 = 6 x 15 + 13: the last global batch of each epoch is split 5/4/4 over 3
  // workers and 3/3/3/2/2 over 5; the gradient average must weigh each replica by
  // its examples to equal the mean over the 13.
  TrainTest data = SyntheticImages(103, 0, 17);
  Dataset train = Dataset::FromExamples(data.train);
  const std::vector<float> single = TrainedWeights(1, train, 15);
  REQUIRE(!single.empty());
  for (int n : {3, 5}) {
    INFO(n << " workers");
    const std::vector<float> multi = TrainedWeights(n, train, 15);
    REQUIRE(multi.size() == single.size());
    const auto [worst, norm] = LargestDifference(multi, single);
    INFO("largest difference " << worst << " of weights up to " << norm);
    CHECK(worst < 1e-5 * norm);
  }
}

TEST_CASE("workers with different models refuse to train, showing the difference",
          "[distributed]") {
  TrainTest data = SyntheticImages(384, 0, 3);
  Dataset train = Dataset::FromExamples(data.train);
  LocalCluster::Options options;
  options.num_workers = 3;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(w.rank == 2 ? 32 : 64, {.activation = "relu"}));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.verbose = 0;
    fit.batch_size = 96;
    return model.Fit(train, fit).status();
  });
  for (int r = 0; r < 3; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    CHECK(results[r].code() == absl::StatusCode::kFailedPrecondition);
  }
  // The odd one and the chief show the first differing line on both sides.
  for (int r : {0, 2}) {
    const std::string message(results[r].message());
    CHECK_THAT(message, Catch::Contains("the model differs between workers, refusing to train"));
    CHECK_THAT(message, Catch::Contains("`variable dense/kernel: float32 [784, 64]`"));
    CHECK_THAT(message, Catch::Contains("`variable dense/kernel: float32 [784, 32]`"));
  }
}

TEST_CASE("workers with different optimizer settings refuse to train", "[distributed]") {
  TrainTest data = SyntheticImages(384, 0, 3);
  Dataset train = Dataset::FromExamples(data.train);
  LocalCluster::Options options;
  options.num_workers = 2;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(10));
    CompileOptions compile;
    compile.optimizer.learning_rate = w.rank == 0 ? 0.001f : 0.01f;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.verbose = 0;
    fit.batch_size = 64;
    return model.Fit(train, fit).status();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    CHECK(results[r].code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(results[r].message()),
               Catch::Contains("`optimizer: adam, learning_rate 0.01,"));
  }
}

// Changes one weight on one worker after global step `at`: the replicas drift.
class CorruptReplica : public Callback {
 public:
  CorruptReplica(int rank, int64_t at) : rank_(rank), at_(at) {}
  absl::Status OnBatchEnd(int64_t step, const Logs&) override {
    if (model_->strategy()->rank() == rank_ && ++seen_ == at_) {
      model_->trainable_variables()[0]->value[3] += 1e-3f;
    }
    return absl::OkStatus();
  }

 private:
  int rank_;
  int64_t at_;
  int64_t seen_ = 0;
};

TEST_CASE("replicas that drift apart stop training with exit 7, naming the variable", "[fit]") {
  TrainTest data = SyntheticImages(640, 0, 3);
  Dataset train = Dataset::FromExamples(data.train);
  LocalCluster::Options options;
  options.num_workers = 2;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(10));
    RW_RETURN_IF_ERROR(model.Compile(CompileOptions()));
    CorruptReplica corrupt(1, 3);
    FitOptions fit;
    fit.verbose = 0;
    fit.batch_size = 64;
    fit.replica_check_steps = 5;
    fit.callbacks = {&corrupt};
    return model.Fit(train, fit).status();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    CHECK(ExitCodeFor(results[r]) == kMismatch);
    CHECK_THAT(std::string(results[r].message()),
               Catch::Contains("the replicas differ after step 5: variable dense/kernel"));
  }
}

TEST_CASE("learning rates that differ after the 6th digit are refused, shown exactly", "[fit]") {
  TrainTest data = SyntheticImages(384, 0, 3);
  Dataset train = Dataset::FromExamples(data.train);
  LocalCluster::Options options;
  options.num_workers = 2;
  const float a = 0.001f, b = std::nextafter(0.001f, 1.0f);
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(10));
    CompileOptions compile;
    compile.optimizer.learning_rate = w.rank == 0 ? a : b;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.verbose = 0;
    fit.batch_size = 64;
    return model.Fit(train, fit).status();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    CHECK(results[r].code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(results[r].message()), Catch::Contains("learning_rate 0.001,"));
    CHECK_THAT(std::string(results[r].message()), Catch::Contains("learning_rate 0.0010000002,"));
  }
}

}  // namespace
}  // namespace ringwork
