#include "base/logging.h"

#include <catch2/catch.hpp>
#include <vector>

#include "base/check.h"

namespace ringwork {
namespace {

TEST_CASE("log lines carry the task tag, severity and source", "[logging]") {
  std::vector<std::string> lines;
  SetLogSinkForTest([&](const std::string& line) { lines.push_back(line); });
  SetLogTask("worker:3");
  RW_LOG(WARNING) << "peer " << 2 << " is slow";
  SetLogSinkForTest(nullptr);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("[worker:3] W ", 0) == 0);
  CHECK(lines[0].find("logging_test.cc:") != std::string::npos);
  CHECK(lines[0].find("] peer 2 is slow\n") != std::string::npos);
}

TEST_CASE("verbose logs appear only at or above the verbosity", "[logging]") {
  std::vector<std::string> lines;
  SetLogSinkForTest([&](const std::string& line) { lines.push_back(line); });
  SetLogVerbosity(1);
  RW_VLOG(1) << "shown";
  RW_VLOG(2) << "hidden";
  SetLogVerbosity(0);
  SetLogSinkForTest(nullptr);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("shown") != std::string::npos);
}

TEST_CASE("passing checks have no effect", "[logging]") {
  int evaluations = 0;
  RW_CHECK(++evaluations == 1);
  RW_CHECK_EQ(evaluations, 1);
  RW_CHECK_LE(1, 2) << "never printed";
  CHECK(evaluations == 1);
}

}  // namespace
}  // namespace ringwork
