// The report page from files a job leaves: curves from real event files, the
// breakdown from the metrics JSON, the all-reduce and cluster tables from a
// timeline; text escaped; missing inputs said; broken inputs refused by name.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "observability/event_file.h"
#include "testing/temp_dir.h"
#include "tools/report/html_report.h"
#include "tools/report/job_summary.h"
#include "tools/report/svg_chart.h"

namespace ringwork {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("charts escape their text, skip non-finite values and say when empty", "[report]") {
  const std::string line =
      LineChart({.title = "a<b & \"c\"", .x_label = "epoch", .y_label = "loss"},
                {{"train<script>", "#123456", {{1, 0.5}, {2, NAN}, {3, 0.25}}}});
  CHECK(line.find("a&lt;b &amp; &quot;c&quot;") != std::string::npos);
  CHECK(line.find("<script>") == std::string::npos);
  CHECK(Count(line, "<circle") == 2);
  CHECK(LineChart({.title = "t"}, {{"s", "#000", {}}}).find("no data") != std::string::npos);
  const std::string bars = StackedBars({.title = "steps"}, {"compute", "data"}, {"#0f0", "#f00"},
                                       {{"1", {0.75, 0.25}}, {"2", {1.0, 0.0}}});
  CHECK(Count(bars, "<rect") == 3 + 2);  // Three non-empty parts, two legend boxes.
  CHECK(bars.find(">100%<") != std::string::npos);
}

TEST_CASE("axes of huge or wide ranges end, with a bounded number of ticks", "[report]") {
  // 1e17 + 1 == 1e17 in doubles: stepping by adding would never pass the end.
  const std::string huge = LineChart({.title = "t"}, {{"s", "#000", {{1, 1e17}, {2, 1e17 + 64}}}});
  CHECK(Count(huge, "class=\"tick\"") <= 2 * 51);
  std::vector<std::pair<double, double>> many;
  for (int step = 0; step <= 200000; step += 1000) many.push_back({step, step * 0.5});
  const std::string wide = LineChart({.title = "t"}, {{"s", "#000", many}});
  CHECK(Count(wide, "class=\"tick\"") <= 2 * 51);
  CHECK(Count(wide, "<circle") == 201);
}

TEST_CASE("a report from event files, metrics and a timeline", "[report]") {
  const std::string dir = FreshTestDir("report_inputs");
  for (const char* sub : {"/tb/train", "/tb/validation"}) {
    auto writer = EventFileWriter::Create(dir + sub);
    REQUIRE(writer.ok());
    for (int epoch = 0; epoch < 3; ++epoch) {
      REQUIRE((*writer)->WriteScalar("epoch_loss", epoch, 1.0f - 0.2f * epoch).ok());
      REQUIRE((*writer)->WriteScalar("epoch_accuracy", epoch, 0.6f + 0.1f * epoch).ok());
      REQUIRE((*writer)->WriteScalar("epoch_samples_per_second", epoch, 1000.0f + epoch).ok());
    }
  }
  std::ofstream(dir + "/metrics.json")
      << R"({"model": "mlp", "num_workers": 2, "test_accuracy": 0.8,
      "step_breakdown": {"compute": 0.5, "hidden_communication": 0.2, "exposed_communication": 0.25, "data_wait": 0.05},
      "step_breakdown_per_epoch": [{"compute": 0.5, "hidden_communication": 0.2, "exposed_communication": 0.25, "data_wait": 0.05}],
      "slowest_worker": {"rank": 1, "others_waited_ms_per_step": 0.3}})";
  std::ofstream(dir + "/timeline.json") << R"({"otherData": {"tasks": [
      {"rank": 0, "task": "worker:0", "clock_offset_us": 0, "clock_offset_rtt_us": 0, "events": 5, "dropped_events": 0},
      {"rank": 1, "task": "worker:1", "clock_offset_us": -12, "clock_offset_rtt_us": 90, "events": 5, "dropped_events": 0}]},
    "traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "worker:0"}},
      {"ph": "X", "cat": "step", "name": "step 1", "pid": 0, "tid": 1, "ts": 0, "dur": 2000},
      {"ph": "X", "cat": "collective", "name": "allreduce", "pid": 0, "tid": 2, "ts": 10, "dur": 300,
       "args": {"bytes": 4096, "algorithm": "ring", "links": "shm", "waited_us": 250}},
      {"ph": "X", "cat": "collective", "name": "allreduce", "pid": 1, "tid": 2, "ts": 10, "dur": 100,
       "args": {"bytes": 4096, "algorithm": "ring", "links": "shm", "waited_us": 50}},
      {"ph": "X", "cat": "collective", "name": "broadcast", "pid": 0, "tid": 2, "ts": 5000, "dur": 900,
       "args": {"bytes": 64, "algorithm": "ring", "links": "shm", "waited_us": 800}},
      {"ph": "X", "cat": "step", "name": "step 1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}]})";

  absl::StatusOr<JobSummary> job = LoadJobSummary({.metrics_json = dir + "/metrics.json",
                                                   .tensorboard_dir = dir + "/tb",
                                                   .timeline = dir + "/timeline.json"});
  REQUIRE(job.ok());
  CHECK(job->notes.empty());
  CHECK(job->train.at("epoch_loss").size() == 3);
  CHECK(job->validation.at("epoch_accuracy").at(2) == Approx(0.8f));
  REQUIRE(job->allreduce.size() == 1);
  CHECK(job->allreduce[0].count == 2);
  CHECK(job->allreduce[0].bytes == 4096);
  REQUIRE(job->tasks.size() == 2);
  CHECK(job->tasks[0].wait_ms_per_step == Approx(0.25));  // Not the broadcast outside the step.
  CHECK(job->tasks[1].task == "worker:1");
  CHECK(job->tasks[1].clock_offset_rtt_us == 90);

  const std::string html = RenderHtmlReport(*job, "job <1>");
  CHECK(html.find("<title>job &lt;1&gt;</title>") != std::string::npos);
  CHECK(Count(html, "<svg") == 4);                 // loss, accuracy, throughput, breakdown
  CHECK(Count(html, "<circle") == 12);             // 2 curves x 2 charts x 3 epochs
  CHECK(html.find("25.0%") != std::string::npos);  // exposed communication
  CHECK(html.find("rank 1: others waited 0.30 ms/step") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK_FALSE(std::regex_search(html, std::regex("(src|href)=\"(https?:)?//")));
}

TEST_CASE("missing inputs are said; broken ones are refused by name", "[report]") {
  const std::string dir = FreshTestDir("report_missing");
  absl::StatusOr<JobSummary> job = LoadJobSummary({.tensorboard_dir = dir + "/none"});
  REQUIRE_FALSE(job.ok());  // Nothing to show.
  CHECK(job.status().code() == absl::StatusCode::kNotFound);
  CHECK(job.status().message().find(dir + "/none/train") != std::string::npos);
  std::ofstream(dir + "/metrics.json") << R"({"model": "mlp", "num_workers": 1})";
  // A job killed before its timeline was merged: the page shows the rest and says so.
  job = LoadJobSummary({.metrics_json = dir + "/metrics.json",
                        .tensorboard_dir = dir + "/none",
                        .timeline = dir + "/absent.json"});
  REQUIRE(job.ok());
  CHECK(job->notes.size() == 3);  // two event directories, timeline
  CHECK(job->notes[2].find("absent.json") != std::string::npos);
  CHECK(RenderHtmlReport(*job, "t").find("Not shown") != std::string::npos);
  std::ofstream(dir + "/bad.json") << "{not json";
  job = LoadJobSummary({.metrics_json = dir + "/bad.json"});
  REQUIRE_FALSE(job.ok());
  CHECK(job.status().message().find("bad.json: not a JSON object") != std::string::npos);
  std::ofstream(dir + "/typed.json") << R"({"traceEvents": [{"pid": 0, "ph": 5, "name": "x"}]})";
  job = LoadJobSummary({.timeline = dir + "/typed.json"});  // A field of another type.
  REQUIRE_FALSE(job.ok());
  CHECK(job.status().code() == absl::StatusCode::kInvalidArgument);
  job = LoadJobSummary({.timeline = dir + "/absent.json"});
  REQUIRE_FALSE(job.ok());
  CHECK(job.status().code() == absl::StatusCode::kNotFound);
  CHECK(job.status().message().find("absent.json") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
