// Checkpoint directories: atomic writes with `latest`, the last K kept, one writer
// at a time, leftovers of a crashed writer removed, a garbled `latest` refused.
#include "checkpoint/checkpoint_directory.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace ringwork {
namespace {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

CheckpointManifest AtStep(int64_t step) {
  CheckpointManifest m;
  m.step = step;
  return m;
}

std::vector<TensorData> Tensors(const std::vector<float>& values) {
  return {{"w", DataType::kFloat32, {static_cast<int64_t>(values.size())}, values.data()}};
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST_CASE("writes point latest at the newest and keep the last K", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_keep") + "/nested/deeper";
  CHECK(LatestCheckpoint(dir).status().code() == absl::StatusCode::kNotFound);
  auto writer = CheckpointDirectory::OpenForWriting(dir, 2);
  REQUIRE(writer.ok());
  const std::vector<float> values = {1, 2, 3};
  for (int64_t step : {10, 20, 30}) {
    auto path = (*writer)->Write(AtStep(step), Tensors(values));
    REQUIRE(path.ok());
    CHECK(*path == dir + "/" + CheckpointFileName(step));
    CHECK(*LatestCheckpoint(dir) == *path);
  }
  const std::vector<std::string> kept = ListCheckpoints(dir);
  REQUIRE(kept.size() == 2);
  CHECK(kept[0] == dir + "/ckpt-000000000020.rwckpt");
  CHECK(kept[1] == dir + "/ckpt-000000000030.rwckpt");
  REQUIRE((*writer)->RemoveAll().ok());
  CHECK(ListCheckpoints(dir).empty());
  CHECK(LatestCheckpoint(dir).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a writer that takes over never moves latest behind the step written before",
          "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_take_over");
  const std::vector<float> values = {1, 2, 3};
  {
    auto before = CheckpointDirectory::OpenForWriting(dir, 3);
    REQUIRE(before.ok());
    REQUIRE((*before)->Write(AtStep(300), Tensors(values)).ok());
  }
  CHECK(CheckpointDirectory::LatestStep(dir) == 300);
  auto after = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(after.ok());
  (*after)->RefuseStepsBefore(CheckpointDirectory::LatestStep(dir));
  const absl::StatusOr<std::string> behind = (*after)->Write(AtStep(150), Tensors(values));
  REQUIRE_FALSE(behind.ok());
  CHECK(behind.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(behind.status().message()),
             Catch::Contains("not writing the checkpoint of step 150") &&
                 Catch::Contains("wrote step 300"));
  CHECK(CheckpointDirectory::LatestStep(dir) == 300);
  CHECK(ListCheckpoints(dir).size() == 1);
  CHECK((*after)->Write(AtStep(310), Tensors(values)).ok());
  CHECK(CheckpointDirectory::LatestStep(dir) == 310);
}

TEST_CASE("a second writer of one directory is refused with a config error", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_lock");
  auto first = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(first.ok());
  auto second = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(!second.ok());
  CHECK(second.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(second.status().message()),
             Catch::Contains("checkpoint directory " + dir + " is in use by another job (pid " +
                             std::to_string(::getpid()) + " holds"));
  first->reset();  // Released: the next job may write.
  CHECK(CheckpointDirectory::OpenForWriting(dir, 3).ok());
}

TEST_CASE("a directory others may write, or another user's, is refused", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_shared");
  REQUIRE(CheckpointDirectory::OpenForWriting(dir, 1).ok());
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  auto open = CheckpointDirectory::OpenForWriting(dir, 1);
  REQUIRE(!open.ok());
  CHECK(open.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(open.status().message()),
             Catch::Contains(dir + " (owner " + std::to_string(::geteuid()) +
                             ") is writable by every user (mode 0777)"));
  REQUIRE(::chmod(dir.c_str(), 0755) == 0);
  // Only root outside a user namespace (not Bazel's sandbox) can give it away.
  if (::chown(dir.c_str(), ::geteuid() + 1, static_cast<gid_t>(-1)) == 0) {
    open = CheckpointDirectory::OpenForWriting(dir, 1);
    REQUIRE(!open.ok());
    CHECK_THAT(std::string(open.status().message()),
               Catch::Contains(dir + " belongs to user " + std::to_string(::geteuid() + 1)));
    REQUIRE(::chown(dir.c_str(), ::geteuid(), static_cast<gid_t>(-1)) == 0);
  }
}

TEST_CASE("links planted where the writer creates files are not followed", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_links");
  const std::string target = FreshDir("ckpt_links_target");
  std::ofstream(target) << "precious";
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  SECTION("the lock") {
    REQUIRE(::symlink(target.c_str(), (dir + "/.lock").c_str()) == 0);
    auto open = CheckpointDirectory::OpenForWriting(dir, 1);
    REQUIRE(!open.ok());
    CHECK_THAT(std::string(open.status().message()), Catch::Contains("is a symbolic link"));
  }
  SECTION("the temporary file of latest") {
    auto writer = CheckpointDirectory::OpenForWriting(dir, 1);
    REQUIRE(writer.ok());
    const std::string temp = dir + "/.tmp-latest-" + std::to_string(::getpid());
    REQUIRE(::symlink(target.c_str(), temp.c_str()) == 0);
    REQUIRE((*writer)->Write(AtStep(1), Tensors({1})).ok());
    CHECK(*LatestCheckpoint(dir) == dir + "/" + CheckpointFileName(1));
  }
  std::ifstream in(target);
  std::string text;
  in >> text;
  CHECK(text == "precious");  // Never written through the link.
}

TEST_CASE("a writer killed mid-write leaves the previous checkpoint intact", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_crash");
  const std::vector<float> before = {1, 2, 3, 4};
  {
    auto writer = CheckpointDirectory::OpenForWriting(dir, 3);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Write(AtStep(5), Tensors(before)).ok());
  }
  // A child writes step 6 and is SIGKILLed halfway through (the crash point).
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setenv("RINGWORK_CRASH_AT", "checkpoint_write", 1);
    auto writer = CheckpointDirectory::OpenForWriting(dir, 3);
    std::vector<float> big(1 << 20, 7.f);
    std::vector<TensorData> tensors = {{"a", DataType::kFloat32, {1 << 20}, big.data()},
                                       {"b", DataType::kFloat32, {1 << 20}, big.data()}};
    (void)(*writer)->Write(AtStep(6), tensors);
    ::_exit(0);  // Not reached: killed inside Write.
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // latest still names step 5, which reads back whole.
  auto latest = LatestCheckpoint(dir);
  REQUIRE(latest.ok());
  CHECK(*latest == dir + "/" + CheckpointFileName(5));
  CHECK(!Exists(dir + "/" + CheckpointFileName(6)));
  auto reader = CheckpointReader::Open(*latest);
  REQUIRE(reader.ok());
  std::vector<float> got(4);
  REQUIRE((*reader)->Read((*reader)->manifest().tensors[0], got.data()).ok());
  CHECK(got == before);
  // The half-written temporary file is there until the next writer removes it.
  const std::string temp = dir + "/.tmp-" + CheckpointFileName(6) + "-" + std::to_string(child);
  CHECK(Exists(temp));
  REQUIRE(CheckpointDirectory::OpenForWriting(dir, 3).ok());
  CHECK(!Exists(temp));
}

TEST_CASE("a garbled or dangling latest is refused as corrupt", "[checkpoint]") {
  const std::string dir = FreshDir("ckpt_latest");
  auto writer = CheckpointDirectory::OpenForWriting(dir, 3);
  REQUIRE(writer.ok());
  const std::vector<float> values = {1};
  REQUIRE((*writer)->Write(AtStep(1), Tensors(values)).ok());
  std::ofstream(dir + "/latest") << "../../etc/passwd\n";
  auto garbled = LatestCheckpoint(dir);
  CHECK(garbled.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(garbled.status().message()),
             Catch::Contains("does not name a checkpoint file"));
  std::ofstream(dir + "/latest") << CheckpointFileName(99) << "\n";
  auto dangling = LatestCheckpoint(dir);
  CHECK(dangling.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(dangling.status().message()),
             Catch::Contains("names ckpt-000000000099.rwckpt, which is missing"));
}

}  // namespace
}  // namespace ringwork
