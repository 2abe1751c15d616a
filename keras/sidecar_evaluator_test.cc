// The sidecar evaluator against a directory a test writes: it scores each new
// checkpoint, notices one rewritten under the same name, stops after the final
// one, and gives up (exit 4's status) when none comes.
#include "keras/sidecar_evaluator.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "base/exit_code.h"
#include "data/fashion_mnist.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

Sequential Model() {
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(10));
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", true};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({28, 28, 1}).ok());
  return model;
}

TEST_CASE("the evaluator follows checkpoints, even one rewritten under its name", "[evaluator]") {
  const std::string dir = FreshTestDir("sidecar");
  const Dataset test = Dataset::FromExamples(SyntheticImages(0, 256, 3).test);
  Sequential writer = Model();
  auto checkpoints = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(checkpoints.ok());
  REQUIRE(SaveTrainingState(writer, checkpoints->get(), {1, 0, 10}, /*final=*/false).ok());

  Sequential reader = Model();
  SidecarEvaluator evaluator(&reader, &test,
                             {.checkpoint_dir = dir,
                              .metrics_path = dir + "/eval.jsonl",
                              .poll_interval_s = 0.01,
                              .timeout_s = 30});
  absl::Status result;
  std::thread sidecar([&] { result = evaluator.Run(); });
  // Once the first is evaluated, the same step is written again, now final.
  for (int i = 0; i < 30000 && !fs::exists(dir + "/eval.jsonl"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(SaveTrainingState(writer, checkpoints->get(), {1, 0, 10}, /*final=*/true).ok());
  sidecar.join();
  INFO(result.message());
  REQUIRE(result.ok());
  REQUIRE(evaluator.evaluations().size() == 2);
  CHECK_FALSE(evaluator.evaluations()[0].final);
  CHECK(evaluator.evaluations()[1].final);
  CHECK(evaluator.evaluations()[1].result.examples == 256);
}

TEST_CASE("the evaluator writes TensorBoard's validation curves, epochs at epoch ends only",
          "[evaluator]") {
  const std::string dir = FreshTestDir("sidecar_summaries");
  const Dataset test = Dataset::FromExamples(SyntheticImages(0, 128, 3).test);
  Sequential writer = Model();
  auto checkpoints = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(checkpoints.ok());
  // Mid-epoch 2 (step 15 of 10 per epoch), then the end of epoch 2: epoch index 1.
  REQUIRE(SaveTrainingState(writer, checkpoints->get(), {1, 5, 15}, /*final=*/false).ok());
  Sequential reader = Model();
  SidecarEvaluator evaluator(&reader, &test,
                             {.checkpoint_dir = dir,
                              .metrics_path = dir + "/eval.jsonl",
                              .summary_dir = dir + "/validation",
                              .poll_interval_s = 0.01,
                              .timeout_s = 30});
  absl::Status result;
  std::thread sidecar([&] { result = evaluator.Run(); });
  for (int i = 0; i < 30000 && !fs::exists(dir + "/eval.jsonl"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(SaveTrainingState(writer, checkpoints->get(), {2, 0, 20}, /*final=*/true).ok());
  sidecar.join();
  REQUIRE(result.ok());
  REQUIRE(evaluator.evaluations().size() == 2);
  REQUIRE(EventFiles(dir + "/validation").size() == 1);
  absl::StatusOr<ScalarCurves> curves = ReadScalarCurves(dir + "/validation");
  REQUIRE(curves.ok());
  ScalarCurves& scalars = *curves;
  CHECK(scalars["evaluation_loss_vs_iterations"] ==
        std::map<int64_t, float>{{15, static_cast<float>(evaluator.evaluations()[0].result.loss)},
                                 {20, static_cast<float>(evaluator.evaluations()[1].result.loss)}});
  CHECK(scalars["epoch_loss"] ==
        std::map<int64_t, float>{{1, static_cast<float>(evaluator.evaluations()[1].result.loss)}});
  CHECK(scalars["epoch_accuracy"].size() == 1);
}

TEST_CASE("the evaluator gives up after its timeout, naming the flag", "[evaluator]") {
  const std::string dir = FreshTestDir("sidecar_empty");
  const Dataset test = Dataset::FromExamples(SyntheticImages(0, 64, 3).test);
  Sequential model = Model();
  SidecarEvaluator evaluator(&model, &test,
                             {.checkpoint_dir = dir,
                              .poll_interval_s = 0.01,
                              .timeout_s = 0.2,
                              .timeout_flag = "--evaluator_timeout_s"});
  absl::Status result = evaluator.Run();
  CHECK(ExitCodeFor(result) == kTimeout);
  CHECK(result.message().find("--evaluator_timeout_s") != absl::string_view::npos);
}

TEST_CASE("a latest naming a vanished file is read again; corrupt only if it stays",
          "[evaluator]") {
  const std::string dir = FreshTestDir("sidecar_vanished");
  const Dataset test = Dataset::FromExamples(SyntheticImages(0, 64, 3).test);
  // As if the trainer (keep=1) removed the file right after `latest` was read.
  std::ofstream(dir + "/latest") << CheckpointFileName(10) << "\n";
  Sequential reader = Model();
  SECTION("the next checkpoint arrives: evaluated") {
    SidecarEvaluator evaluator(
        &reader, &test,
        {.checkpoint_dir = dir, .poll_interval_s = 0.01, .timeout_s = 30, .vanished_grace_s = 30});
    absl::Status result;
    std::thread sidecar([&] { result = evaluator.Run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Sequential writer = Model();
    auto checkpoints = CheckpointDirectory::OpenForWriting(dir, 1);
    REQUIRE(checkpoints.ok());
    REQUIRE(SaveTrainingState(writer, checkpoints->get(), {1, 0, 20}, /*final=*/true).ok());
    sidecar.join();
    INFO(result.message());
    REQUIRE(result.ok());
    REQUIRE(evaluator.evaluations().size() == 1);
    CHECK(evaluator.evaluations()[0].step == 20);
  }
  SECTION("it stays missing: corrupt (exit 5)") {
    SidecarEvaluator evaluator(
        &reader, &test,
        {.checkpoint_dir = dir, .poll_interval_s = 0.01, .timeout_s = 30, .vanished_grace_s = 0.3});
    absl::Status result = evaluator.Run();
    CHECK(ExitCodeFor(result) == kInvalidCheckpoint);
    CHECK(result.message().find("missing") != absl::string_view::npos);
  }
}

TEST_CASE("an evaluator racing a trainer that keeps one checkpoint never calls it corrupt",
          "[evaluator]") {
  // The trainer replaces `latest`, then removes the file it named: an evaluator
  // that read `latest` just before finds that file gone.
  const std::string dir = FreshTestDir("sidecar_race");
  const Dataset test = Dataset::FromExamples(SyntheticImages(0, 16, 3).test);
  Sequential writer = Model();
  auto checkpoints = CheckpointDirectory::OpenForWriting(dir, 1);
  REQUIRE(checkpoints.ok());
  REQUIRE(SaveTrainingState(writer, checkpoints->get(), {0, 1, 1}, false).ok());
  Sequential reader = Model();
  SidecarEvaluator evaluator(
      &reader, &test,
      {.checkpoint_dir = dir, .batch_size = 16, .poll_interval_s = 0, .timeout_s = 60});
  absl::Status result;
  std::thread sidecar([&] { result = evaluator.Run(); });
  absl::Status written;
  for (int64_t step = 2; step <= 300 && written.ok(); ++step) {
    written = SaveTrainingState(writer, checkpoints->get(), {0, step, step}, step == 300).status();
  }
  sidecar.join();
  REQUIRE(written.ok());
  INFO(result.message());
  CHECK(result.ok());
  REQUIRE(!evaluator.evaluations().empty());
  CHECK(evaluator.evaluations().back().final);
}

}  // namespace
}  // namespace ringwork
