// Timelines: nothing is recorded while none is installed; spans and instants from
// several threads come back as Chrome trace events with thread names; the ring and
// the step window bound what is kept; merging moves every task onto the chief's
// clock and names missing files and broken ones.
#include "observability/timeline.h"

#include <pthread.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <thread>

#include "nlohmann/json.hpp"
#include "observability/timeline_merge.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> EventsNamed(const nlohmann::json& trace, const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") == name) found.push_back(e);
  }
  return found;
}

TEST_CASE("no timeline installed: spans record nothing", "[timeline]") {
  Timeline timeline({});
  {
    TimelineSpan span("compute", "forward ", "dense");
    CHECK_FALSE(span.active());
    span.Arg("bytes", 5);
  }
  CHECK(Timeline::Active() == nullptr);
  CHECK(timeline.recorded() == 0);
}

TEST_CASE("spans, instants and args from two threads become trace events", "[timeline]") {
  const std::string dir = FreshTestDir("timeline_spans");
  Timeline timeline({});
  REQUIRE(Timeline::Install(&timeline));
  Timeline other({});
  CHECK_FALSE(Timeline::Install(&other));  // One per process.
  {
    TimelineSpan span("compute", "forward ", "dense_1");
    span.Arg("bytes", 4096);
    span.Arg("algorithm", "ring \"x\"");
    Timeline::Active()->Instant("gradients", "pack 0 ready");
  }
  std::thread worker([] {
    pthread_setname_np(pthread_self(), "rw-test-thread");
    TimelineSpan span("communication", "all-reduce");
  });
  worker.join();
  Timeline::Uninstall(&timeline);
  { TimelineSpan after("compute", "after uninstall"); }
  REQUIRE(timeline.recorded() == 3);
  REQUIRE(
      timeline.WriteJson(dir + "/t.json", {.rank = 1, .task = "worker:1", .clock_offset_us = -7})
          .ok());

  const nlohmann::json trace = ReadJson(dir + "/t.json");
  CHECK(trace["otherData"]["task"] == "worker:1");
  CHECK(trace["otherData"]["clock_offset_us"] == -7);
  const auto forward = EventsNamed(trace, "forward dense_1");
  REQUIRE(forward.size() == 1);
  CHECK(forward[0]["ph"] == "X");
  CHECK(forward[0]["pid"] == 1);
  CHECK(forward[0]["dur"].get<int64_t>() >= 0);
  CHECK(forward[0]["args"]["bytes"] == 4096);
  CHECK(forward[0]["args"]["algorithm"] == "ring \"x\"");
  const auto ready = EventsNamed(trace, "pack 0 ready");
  REQUIRE(ready.size() == 1);
  CHECK(ready[0]["ph"] == "i");
  CHECK(ready[0]["ts"].get<int64_t>() >= forward[0]["ts"].get<int64_t>());
  const auto reduce = EventsNamed(trace, "all-reduce");
  REQUIRE(reduce.size() == 1);
  CHECK(reduce[0]["tid"] != forward[0]["tid"]);
  bool thread_named = false;
  for (const auto& e : EventsNamed(trace, "thread_name")) {
    if (e["tid"] == reduce[0]["tid"]) thread_named = e["args"]["name"] == "rw-test-thread";
  }
  CHECK(thread_named);
  CHECK(EventsNamed(trace, "after uninstall").empty());
}

TEST_CASE("the ring keeps the newest events and counts the dropped ones", "[timeline]") {
  const std::string dir = FreshTestDir("timeline_ring");
  Timeline timeline({.max_events = 4});
  for (int i = 0; i < 10; ++i) timeline.Complete("compute", "e" + std::to_string(i), i, i + 1);
  CHECK(timeline.recorded() == 4);
  CHECK(timeline.dropped() == 6);
  REQUIRE(timeline.WriteJson(dir + "/t.json", {}).ok());
  const nlohmann::json trace = ReadJson(dir + "/t.json");
  std::vector<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") names.push_back(e["name"]);
  }
  CHECK(names == std::vector<std::string>{"e6", "e7", "e8", "e9"});  // Oldest first.
  CHECK(trace["otherData"]["dropped_events"] == 6);
}

TEST_CASE("only steps inside the window are recorded; startup always is", "[timeline]") {
  Timeline timeline({.first_step = 2, .last_step = 3});
  timeline.Complete("startup", "rendezvous", 0, 1);
  for (int64_t step = 0; step < 6; ++step) {
    timeline.SetStep(step);
    timeline.Complete("step", "step " + std::to_string(step), step, step + 1);
  }
  CHECK(timeline.recorded() == 3);  // rendezvous, step 2, step 3
}

TEST_CASE("merging puts every task on the chief's clock, one process row each", "[timeline]") {
  const std::string dir = FreshTestDir("timeline_merge");
  Timeline chief({}), worker({});
  chief.Complete("communication", "all-reduce", 1000, 1100);
  worker.Complete("communication", "all-reduce", 5000, 5100);  // Its clock is 4000 us ahead.
  REQUIRE(chief.WriteJson(dir + "/w0.json", {.rank = 0, .task = "worker:0"}).ok());
  REQUIRE(
      worker
          .WriteJson(
              dir + "/w1.json",
              {.rank = 1, .task = "worker:1", .clock_offset_us = -4000, .clock_offset_rtt_us = 80})
          .ok());
  absl::StatusOr<TimelineMergeResult> merged =
      MergeTimelines({dir + "/w0.json", dir + "/w1.json", dir + "/w2.json"}, dir + "/job.json");
  REQUIRE(merged.ok());
  CHECK(merged->tasks == 2);
  CHECK(merged->missing == std::vector<std::string>{dir + "/w2.json"});
  const nlohmann::json trace = ReadJson(dir + "/job.json");
  const auto spans = EventsNamed(trace, "all-reduce");
  REQUIRE(spans.size() == 2);
  std::set<int> pids;
  for (const auto& e : spans) {
    pids.insert(e["pid"].get<int>());
    CHECK(e["ts"] == 0);  // Both at 1000 on the chief's clock, the job's start.
  }
  CHECK(pids == std::set<int>{0, 1});
  std::set<std::string> rows;
  for (const auto& e : EventsNamed(trace, "process_name")) rows.insert(e["args"]["name"]);
  CHECK(rows == std::set<std::string>{"worker:0", "worker:1"});
  CHECK(trace["otherData"]["tasks"][1]["clock_offset_rtt_us"] == 80);
  CHECK(trace["otherData"]["tasks"][1]["applied_shift_us"] ==
        -5000);  // Onto the chief's, then to 0.
}

TEST_CASE("tasks under the chief's kernel keep their clock: it is the chief's", "[timeline]") {
  const std::string dir = FreshTestDir("timeline_same_host");
  Timeline chief({}), worker({});
  chief.Complete("communication", "allreduce", 1000, 1100);
  worker.Complete("communication", "allreduce", 1000, 1100);
  // Network namespaces give tasks other host names; the kernel's clock is one.
  REQUIRE(chief
              .WriteJson(dir + "/w0.json",
                         {.rank = 0, .task = "worker:0", .host = "h1", .clock_domain = "boot_id b"})
              .ok());
  REQUIRE(worker
              .WriteJson(dir + "/w1.json", {.rank = 1,
                                            .task = "worker:1",
                                            .host = "h2",
                                            .clock_domain = "boot_id b",
                                            .clock_offset_us = 300,
                                            .clock_offset_rtt_us = 900})
              .ok());
  REQUIRE(MergeTimelines({dir + "/w0.json", dir + "/w1.json"}, dir + "/job.json").ok());
  const nlohmann::json trace = ReadJson(dir + "/job.json");
  for (const auto& e : EventsNamed(trace, "allreduce")) CHECK(e["ts"] == 0);
  CHECK(trace["otherData"]["tasks"][1]["applied_shift_us"] == -1000);
  CHECK(trace["otherData"]["tasks"][1]["clock_offset_us"] == 300);  // The estimate, kept.
}

TEST_CASE("a task on another clock with no estimate starts with the job, and is named",
          "[timeline]") {
  const std::string dir = FreshTestDir("timeline_unaligned");
  Timeline chief({}), worker({});
  chief.Complete("communication", "allreduce", 1000, 1100);
  chief.Complete("communication", "allreduce", 2000, 2100);
  worker.Complete("communication", "allreduce", 9000000, 9000100);  // Another boot's clock.
  REQUIRE(
      chief
          .WriteJson(dir + "/w0.json", {.rank = 0, .task = "worker:0", .clock_domain = "boot_id a"})
          .ok());
  REQUIRE(
      worker
          .WriteJson(dir + "/w1.json", {.rank = 1, .task = "worker:1", .clock_domain = "boot_id b"})
          .ok());
  absl::StatusOr<TimelineMergeResult> merged =
      MergeTimelines({dir + "/w0.json", dir + "/w1.json"}, dir + "/job.json");
  REQUIRE(merged.ok());
  CHECK(merged->unaligned == std::vector<std::string>{dir + "/w1.json"});
  const nlohmann::json trace = ReadJson(dir + "/job.json");
  std::vector<int64_t> starts;
  for (const auto& e : EventsNamed(trace, "allreduce")) starts.push_back(e["ts"].get<int64_t>());
  CHECK(starts == std::vector<int64_t>{0, 1000, 0});  // Not 8999000 past the chief's first.
  CHECK(trace["otherData"]["tasks"][1]["clock"].get<std::string>().find("unknown") == 0);
}

TEST_CASE("names that are not UTF-8 still make valid JSON", "[timeline]") {
  CHECK(JsonEscape("a\"b\\c\n") == "a\\\"b\\\\c\\u000a");
  CHECK(JsonEscape("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");  // Valid: kept.
  CHECK(JsonEscape("x\xffy") == "x\\ufffdy");                                   // Not a lead byte.
  CHECK(JsonEscape("\xc3") == "\\ufffd");                                       // Cut short.
  CHECK(JsonEscape("\xc0\xaf") == "\\ufffd\\ufffd");                            // Overlong '/'.
  CHECK(JsonEscape("\xed\xa0\x80") == "\\ufffd\\ufffd\\ufffd");                 // A surrogate.
  const std::string dir = FreshTestDir("timeline_utf8");
  Timeline timeline({});
  timeline.Complete("step", "worker \xff\xfe", 0, 1);
  REQUIRE(timeline.WriteJson(dir + "/t.json", {.task = "worker:\x80"}).ok());
  const nlohmann::json trace = ReadJson(dir + "/t.json");  // Throws on invalid UTF-8.
  CHECK(EventsNamed(trace, "worker \xef\xbf\xbd\xef\xbf\xbd").size() == 1);
}

TEST_CASE("merging refuses broken files and an empty set, naming the file", "[timeline]") {
  const std::string dir = FreshTestDir("timeline_merge_bad");
  { std::ofstream(dir + "/bad.json") << "{\"traceEvents\": [1, 2"; }
  absl::StatusOr<TimelineMergeResult> merged =
      MergeTimelines({dir + "/bad.json"}, dir + "/job.json");
  REQUIRE_FALSE(merged.ok());
  CHECK(merged.status().message().find("bad.json: not valid JSON") != std::string::npos);
  {
    std::ofstream(dir + "/other.json")
        << "{\"traceEvents\": [], \"otherData\": {\"clock_offset_us\": \"x\"}}";
  }
  merged = MergeTimelines({dir + "/other.json"}, dir + "/job.json");
  REQUIRE_FALSE(merged.ok());
  CHECK(merged.status().message().find("clock_offset_us") != std::string::npos);
  {
    std::ofstream(dir + "/typed.json")
        << "{\"traceEvents\": [], \"otherData\": {\"rank\": 0, \"host\": 5}}";
  }
  merged = MergeTimelines({dir + "/typed.json"}, dir + "/job.json");  // A field of another type.
  REQUIRE_FALSE(merged.ok());
  CHECK(merged.status().code() == absl::StatusCode::kInvalidArgument);
  merged = MergeTimelines({dir + "/none.json"}, dir + "/job.json");
  REQUIRE_FALSE(merged.ok());
  CHECK(merged.status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ringwork
