// Builds (as a dependency) and runs the examples on a 2-worker localhost cluster.
#include <catch2/catch.hpp>

#include "testing/subprocess.h"

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
