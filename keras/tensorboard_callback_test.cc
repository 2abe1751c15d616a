// The TensorBoard callback on an in-process cluster of two real workers: the
// chief alone writes; every record decodes with both CRCs checked; the tags,
// steps and values are History's; a second run adds a file and leaves the first.
#include "keras/tensorboard_callback.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/sequential.h"
#include "keras/step_breakdown.h"
#include "testing/local_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr int kEpochs = 3;
constexpr int kBatch = 64;

ScalarCurves Scalars(const std::string& dir) {
  absl::StatusOr<ScalarCurves> curves = ReadScalarCurves(dir);
  INFO(curves.status().message());
  REQUIRE(curves.ok());
  return *curves;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<History> FitWithTensorBoard(const std::string& log_dir) {
  std::vector<History> histories(2);
  LocalCluster::Options options;
  options.num_workers = 2;
  const Dataset train = Dataset::FromExamples(SyntheticImages(640, 0, 3).train);
  const Dataset validation = Dataset::FromExamples(SyntheticImages(128, 0, 4).train);
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        model.Add(Flatten());
        model.Add(Dense(16, {.activation = "relu"}));
        model.Add(Dense(10));
        CompileOptions compile;
        compile.loss = {"sparse_categorical_crossentropy", true};
        compile.optimizer = {.name = "sgd", .learning_rate = 0.05f};
        compile.metrics = {"accuracy"};
        compile.intra_op_threads = 1;
        RW_RETURN_IF_ERROR(model.Compile(compile));
        TensorBoard tensorboard({.log_dir = log_dir, .update_freq = 4, .histogram_freq = 2});
        FitOptions fit;
        fit.epochs = kEpochs;
        fit.batch_size = kBatch;
        fit.verbose = 0;
        fit.validation_data = &validation;
        fit.callbacks.push_back(&tensorboard);
        RW_ASSIGN_OR_RETURN(histories[w.rank], model.Fit(train, fit));
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  return histories;
}

TEST_CASE("the chief writes Keras' curves, as History has them, and a rerun adds a file",
          "[tensorboard]") {
  const std::string dir = FreshTestDir("tensorboard");
  const History history = FitWithTensorBoard(dir)[0];
  REQUIRE(EventFiles(dir + "/train").size() == 1);  // The chief's only.
  REQUIRE(EventFiles(dir + "/validation").size() == 1);
  auto train = Scalars(dir + "/train");
  auto validation = Scalars(dir + "/validation");
  for (const std::string name : {"loss", "accuracy"}) {
    REQUIRE(train["epoch_" + name].size() == kEpochs);
    REQUIRE(validation["epoch_" + name].size() == kEpochs);
    for (int epoch = 0; epoch < kEpochs; ++epoch) {
      CHECK(train["epoch_" + name][epoch] == static_cast<float>(history[name][epoch]));
      CHECK(validation["epoch_" + name][epoch] ==
            static_cast<float>(history["val_" + name][epoch]));
    }
  }
  CHECK(train["epoch_learning_rate"].size() == kEpochs);
  CHECK(train["epoch_learning_rate"][2] == 0.05f);
  REQUIRE(train["epoch_samples_per_second"].size() == kEpochs);
  CHECK(train["epoch_samples_per_second"][0] > 0);
  // 10 steps an epoch, a batch summary every 4 steps done: 4, 8, ..., 28.
  REQUIRE(train["batch_loss"].size() == 7);
  CHECK(train["batch_loss"].begin()->first == 4);
  CHECK(train["batch_loss"].rbegin()->first == 28);
  CHECK(train.count("epoch_val_loss") == 0);
  // fit's step breakdown: in History, summing to 1 each epoch, and as scalars.
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    double sum = 0;
    for (const char* name :
         {kBreakdownCompute, kBreakdownHidden, kBreakdownExposed, kBreakdownDataWait}) {
      REQUIRE(history[name].size() == kEpochs);
      sum += history[name][epoch];
      CHECK(train[name][epoch] == static_cast<float>(history[name][epoch]));
    }
    CHECK(sum == Approx(1.0));
  }
  CHECK(train[kSlowestWorkerRank].size() == history[kSlowestWorkerRank].size());
  // Histograms at epochs 0 and 2 of each of the 4 variables.
  auto events = ReadEventFile(EventFiles(dir + "/train")[0]);
  REQUIRE(events.ok());
  std::map<std::string, std::vector<int64_t>> histograms;
  for (const EventRecord& e : *events) {
    for (const auto& [tag, h] : e.histograms) {
      histograms[tag].push_back(e.step);
      CHECK(h.num > 0);
      CHECK(h.min <= h.max);
    }
  }
  CHECK(histograms.size() == 4);
  CHECK(histograms.begin()->second == std::vector<int64_t>{0, 2});

  const std::string first = EventFiles(dir + "/train")[0];
  const std::string before = Contents(first);
  FitWithTensorBoard(dir);
  CHECK(EventFiles(dir + "/train").size() == 2);
  CHECK(Contents(first) == before);
}

TEST_CASE("TensorBoard refuses negative frequencies on every worker", "[tensorboard]") {
  TensorBoard tensorboard({.log_dir = FreshTestDir("tensorboard_bad"), .update_freq = -1});
  TrainInfo info;
  info.is_chief = false;
  CHECK(tensorboard.OnTrainBegin(info).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a TensorBoard that cannot write warns and lets training go on", "[tensorboard]") {
  const std::string dir = FreshTestDir("tensorboard_gone");
  TensorBoard tensorboard({.log_dir = dir, .update_freq = 1});
  Sequential model;
  model.Add(Dense(2));
  REQUIRE(model.Compile({}).ok());
  REQUIRE(model.Build({3}).ok());
  tensorboard.set_model(&model);
  TrainInfo info;
  info.steps_per_epoch = 2;
  REQUIRE(tensorboard.OnTrainBegin(info).ok());
  // A file where the validation directory would go: it cannot be made.
  std::ofstream(dir + "/validation") << "in the way";
  REQUIRE(tensorboard.OnEpochBegin(0).ok());
  CHECK(tensorboard.OnBatchEnd(1, {{"loss", 1.0}}).ok());
  CHECK(tensorboard.OnEpochEnd(0, {{"loss", 1.0}, {"val_loss", 2.0}}).ok());
  CHECK(tensorboard.OnBatchEnd(2, {{"loss", 1.0}}).ok());
  // What came before the failure is there; nothing after it.
  ScalarCurves train = Scalars(dir + "/train");
  CHECK(train["batch_loss"] == std::map<int64_t, float>{{1, 1.0f}});
  CHECK(train["epoch_loss"] == std::map<int64_t, float>{{0, 1.0f}});
  CHECK(train.count("epoch_learning_rate") == 0);
}

}  // namespace
}  // namespace ringwork
