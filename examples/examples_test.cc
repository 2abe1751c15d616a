// Builds (as a dependency) and runs the examples on a 2-worker localhost cluster.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

SubprocessResult Launch(std::vector<std::string> program) {
  std::vector<std::string> argv = {"tools/launch/launch", "--num_workers=2", "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  Subprocess::Options options;
  options.timeout_s = 120;
  return RunSubprocess(argv, options);
}

TEST_CASE("the Keras-style example trains on two workers", "[examples]") {
  SubprocessResult r = Launch({"examples/keras_app", "--synthetic"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[worker:0] keras_app: test accuracy") != std::string::npos);
  CHECK(r.output.find("on 2 worker(s)") != std::string::npos);
}

TEST_CASE("an app's evaluator task evaluates the workers' checkpoints until the final one",
          "[examples]") {
  const std::string dir = FreshTestDir("evaluator_app");
  std::vector<std::string> argv = {
      "tools/launch/launch", "--num_workers=2", "--evaluator", "--", "examples/evaluator_app", dir};
  Subprocess::Options options;
  options.timeout_s = 120;
  SubprocessResult r = RunSubprocess(argv, options);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[worker:0] evaluator_app: trained on 2 workers") != std::string::npos);
  double accuracy = 0;
  size_t checkpoints = 0;
  const size_t at = r.output.find("[evaluator:0] evaluator_app: evaluated ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(r.output.c_str() + at,
                      "[evaluator:0] evaluator_app: evaluated %zu checkpoints; final accuracy %lf",
                      &checkpoints, &accuracy) == 2);
  CHECK(checkpoints >= 1);  // Polled: at least the final one (training is quick).
  // Its last evaluation is of the final checkpoint: 2 epochs of 2048 / 128 steps.
  std::ifstream lines(dir + "/evaluations.jsonl");
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  INFO(last);
  const nlohmann::json evaluation = nlohmann::json::parse(last, nullptr, false);
  REQUIRE(evaluation.is_object());
  CHECK(evaluation.value("final", false));
  CHECK(evaluation.value("step", 0) == 32);
  CHECK(evaluation.value("accuracy", -1.0) == Approx(accuracy).margin(1e-4));
}

TEST_CASE("the README's own-data example trains on a CSV file on two workers", "[examples]") {
  // Three classes of points around three centres in 4 dimensions: separable, so a
  // model that trains on every worker's share learns them.
  const std::string csv = FreshTestDir("own_data") + "/train.csv";
  {
    std::ofstream out(csv);
    out << "a,b,c,d,label\n";
    for (int i = 0; i < 600; ++i) {
      const int label = i % 3;
      for (int f = 0; f < 4; ++f) {
        const double centre = f == label ? 2.0 : 0.0;
        out << centre + 0.5 * std::sin(1.7 * i + f) << ",";
      }
      out << label << "\n";
    }
  }
  SubprocessResult r = Launch({"examples/own_data", csv});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  double accuracy = 0;
  const size_t at = r.output.find("[worker:0] accuracy ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(r.output.c_str() + at, "[worker:0] accuracy %lf", &accuracy) == 1);
  CHECK(accuracy >= 0.95);
  CHECK(r.output.find("[worker:1] accuracy") == std::string::npos);  // The chief prints.
}

TEST_CASE("the functional ResNet example trains on two workers", "[examples]") {
  SubprocessResult r = Launch({"examples/resnet_app", "--synthetic"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Model: \"model\"") != std::string::npos);
  CHECK(r.output.find("[worker:0] resnet_app: test accuracy") != std::string::npos);
  CHECK(r.output.find("on 2 worker(s)") != std::string::npos);
}

TEST_CASE("the custom training loop example trains on two workers", "[examples]") {
  SubprocessResult r = Launch({"examples/custom_training_loop"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[worker:0] custom_training_loop: epoch 2 loss") != std::string::npos);
  // launch made a token, and the app (no flags of its own) uses it.
  CHECK(r.output.find("calls authenticated by the cluster token") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
