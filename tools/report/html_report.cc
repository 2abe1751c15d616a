#include "tools/report/html_report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "keras/step_breakdown.h"
#include "tools/report/svg_chart.h"

namespace ringwork {
namespace {

constexpr char kStyle[] = R"(
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: right; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { border: 1px solid #eee; background: #fcfcfc; }
svg .title { font-size: 14px; font-weight: bold; }
svg .tick, svg .legend, svg .label { font-size: 11px; fill: #444; }
svg .empty { font-size: 13px; fill: #999; }
svg .grid { stroke: #e5e5e5; stroke-width: 1; }
ul.notes { color: #666; font-size: 13px; }
)";

const char* const kBreakdownNames[] = {"compute", "hidden communication", "exposed communication",
                                       "data wait"};
const char* const kBreakdownKeys[] = {"compute", "hidden_communication", "exposed_communication",
                                      "data_wait"};
const char* const kBreakdownTags[] = {kBreakdownCompute, kBreakdownHidden, kBreakdownExposed,
                                      kBreakdownDataWait};
const char* const kBreakdownColors[] = {"#2ca02c", "#1f77b4", "#d62728", "#ff7f0e"};

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string Cell(const std::string& text, bool is_text = false) {
  return absl::StrCat(is_text ? "<td class=\"text\">" : "<td>", HtmlEscape(text), "</td>");
}

// A scalar curve as (epoch from 1, value).
std::vector<std::pair<double, double>> ByEpoch(const ScalarCurves& curves, const std::string& tag) {
  std::vector<std::pair<double, double>> points;
  auto it = curves.find(tag);
  if (it == curves.end()) return points;
  for (const auto& [step, value] : it->second)
    points.emplace_back(static_cast<double>(step + 1), value);
  return points;
}

// obj[key] when it is a number; 0 otherwise (a file of another version).
double NumberAt(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : 0;
}

std::string JsonText(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) {
    const double v = j.get<double>();
    return Fixed(v, std::fabs(v) >= 1000 ? 0 : 4);
  }
  return j.dump();
}

std::string SummaryTable(const JobSummary& job) {
  if (!job.metrics.is_object()) return "<p class=\"sub\">No metrics file was given.</p>\n";
  const std::pair<const char*, const char*> rows[] = {
      {"model", "model"},
      {"workers", "num_workers"},
      {"epochs", "epochs"},
      {"global batch", "global_batch_size"},
      {"precision", "precision"},
      {"training throughput (samples/s)", "train_samples_per_second"},
      {"wall time (s)", "wall_seconds"},
      {"test accuracy", "test_accuracy"},
      {"test loss", "test_loss"},
      {"final train loss", "final_train_loss"},
      {"final train accuracy", "final_train_accuracy"},
      {"examples trained", "train_examples"},
      {"weights fingerprint", "weights_fingerprint"},
  };
  std::string out = "<table id=\"summary\">\n";
  for (const auto& [label, key] : rows) {
    if (!job.metrics.contains(key)) continue;
    absl::StrAppend(&out, "<tr><th class=\"text\">", label, "</th>",
                    Cell(JsonText(job.metrics[key]), true), "</tr>\n");
  }
  if (job.metrics.contains("slowest_worker") && job.metrics["slowest_worker"].is_object()) {
    const nlohmann::json& s = job.metrics["slowest_worker"];
    absl::StrAppend(
        &out, "<tr><th class=\"text\">slowest worker (last epoch)</th>",
        Cell(
            absl::StrCat("rank ", JsonText(s.value("rank", nlohmann::json(-1))), ": others waited ",
                         Fixed(NumberAt(s, "others_waited_ms_per_step"), 2), " ms/step"),
            true),
        "</tr>\n");
  }
  return out + "</table>\n";
}

std::string Curves(const JobSummary& job) {
  std::string out = "<div class=\"charts\">\n";
  for (const auto& [metric, label] : {std::pair{"loss", "loss"}, {"accuracy", "accuracy"}}) {
    std::vector<Series> series;
    const std::string tag = absl::StrCat("epoch_", metric);
    series.push_back({"train", "#1f77b4", ByEpoch(job.train, tag)});
    series.push_back({"validation", "#ff7f0e", ByEpoch(job.validation, tag)});
    absl::StrAppend(&out, LineChart({.title = absl::StrCat(label, " per epoch"),
                                     .x_label = "epoch",
                                     .y_label = label},
                                    series));
  }
  std::vector<std::pair<std::string, double>> throughput;
  for (const auto& [epoch, value] : ByEpoch(job.train, "epoch_samples_per_second")) {
    throughput.emplace_back(Fixed(epoch, 0), value);
  }
  absl::StrAppend(
      &out, BarChart({.title = "throughput per epoch", .x_label = "epoch", .y_label = "samples/s"},
                     "#9467bd", throughput));
  return out + "</div>\n";
}

std::string Breakdown(const JobSummary& job) {
  std::vector<StackedBar> bars;
  if (job.metrics.is_object() && job.metrics.contains("step_breakdown_per_epoch") &&
      job.metrics["step_breakdown_per_epoch"].is_array()) {
    int epoch = 1;
    for (const nlohmann::json& e : job.metrics["step_breakdown_per_epoch"]) {
      StackedBar bar{std::to_string(epoch++), {}};
      for (const char* key : kBreakdownKeys) bar.parts.push_back(NumberAt(e, key));
      bars.push_back(std::move(bar));
    }
  } else {
    std::map<int64_t, StackedBar> by_epoch;  // From the event files when no metrics file.
    for (size_t p = 0; p < 4; ++p) {
      auto it = job.train.find(kBreakdownTags[p]);
      if (it == job.train.end()) continue;
      for (const auto& [step, value] : it->second) {
        StackedBar& bar = by_epoch[step];
        bar.label = std::to_string(step + 1);
        bar.parts.resize(4, 0.0);
        bar.parts[p] = value;
      }
    }
    for (auto& [step, bar] : by_epoch) bars.push_back(std::move(bar));
  }
  std::string out = StackedBars({.title = "where a step's time went, per epoch",
                                 .y_label = "share of step time",
                                 .width = 620},
                                {std::begin(kBreakdownNames), std::end(kBreakdownNames)},
                                {std::begin(kBreakdownColors), std::end(kBreakdownColors)}, bars);
  if (job.metrics.is_object() && job.metrics.contains("step_breakdown") &&
      job.metrics["step_breakdown"].is_object()) {
    absl::StrAppend(&out, "<table id=\"breakdown\"><tr>");
    for (const char* name : kBreakdownNames) absl::StrAppend(&out, "<th>", name, "</th>");
    absl::StrAppend(&out, "</tr><tr>");
    for (const char* key : kBreakdownKeys) {
      absl::StrAppend(&out,
                      Cell(Fixed(100 * NumberAt(job.metrics["step_breakdown"], key), 1) + "%"));
    }
    absl::StrAppend(&out, "</tr></table>\n");
  }
  return out;
}

std::string AllReduceTable(const JobSummary& job) {
  if (job.allreduce.empty())
    return "<p class=\"sub\">No all-reduce in the timeline (or no timeline).</p>\n";
  std::string out =
      "<table id=\"allreduce\"><tr><th>bytes per rank</th><th class=\"text\">algorithm</th>"
      "<th class=\"text\">links</th><th>count</th><th>median (us)</th><th>p90 (us)</th>"
      "<th>total (ms)</th><th>bus bandwidth at median (GB/s)</th></tr>\n";
  const double n = static_cast<double>(std::max<size_t>(job.tasks.size(), 1));
  for (const AllReduceRow& r : job.allreduce) {
    // nccl-tests' bus bandwidth: bytes / time x 2(n-1)/n.
    const double busbw =
        r.median_us > 0 ? static_cast<double>(r.bytes) / (r.median_us * 1e3) * 2 * (n - 1) / n : 0;
    absl::StrAppend(&out, "<tr>", Cell(std::to_string(r.bytes)), Cell(r.algorithm, true),
                    Cell(r.links, true), Cell(std::to_string(r.count)), Cell(Fixed(r.median_us, 0)),
                    Cell(Fixed(r.p90_us, 0)), Cell(Fixed(r.total_ms, 1)), Cell(Fixed(busbw, 2)),
                    "</tr>\n");
  }
  return out + "</table>\n";
}

std::string ClusterTable(const JobSummary& job) {
  if (job.tasks.empty()) return "<p class=\"sub\">No timeline: the tasks are not known.</p>\n";
  std::string out =
      "<table id=\"cluster\"><tr><th>rank</th><th class=\"text\">task</th><th>steps recorded</th>"
      "<th>median step (ms)</th><th>in collectives, waiting for peers or data "
      "(ms/step)</th><th>estimated clock offset to chief (us)</th>"
      "<th>estimate's round trip (us)</th><th class=\"text\">clock "
      "used</th><th>events</th><th>dropped</th></tr>\n";
  for (const TaskRow& t : job.tasks) {
    absl::StrAppend(
        &out, "<tr>", Cell(std::to_string(t.rank)), Cell(t.task, true),
        Cell(std::to_string(t.steps)), Cell(Fixed(t.median_step_ms, 2)),
        Cell(Fixed(t.wait_ms_per_step, 2)), Cell(std::to_string(t.clock_offset_us)),
        Cell(t.clock_offset_rtt_us < 0 ? "none" : std::to_string(t.clock_offset_rtt_us)),
        Cell(t.clock, true), Cell(std::to_string(t.events)), Cell(std::to_string(t.dropped_events)),
        "</tr>\n");
  }
  return out + "</table>\n";
}

}  // namespace

std::string RenderHtmlReport(const JobSummary& job, const std::string& title) {
  std::string out =
      absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>",
                   HtmlEscape(title), "</title>\n<style>", kStyle, "</style></head>\n<body>\n<h1>",
                   HtmlEscape(title), "</h1>\n", "<p class=\"sub\">Ringwork job report</p>\n");
  absl::StrAppend(&out, "<h2>Summary</h2>\n", SummaryTable(job));
  absl::StrAppend(&out, "<h2>Training curves</h2>\n", Curves(job));
  absl::StrAppend(&out, "<h2>Step-time breakdown</h2>\n", Breakdown(job));
  absl::StrAppend(&out, "<h2>All-reduce</h2>\n", AllReduceTable(job));
  absl::StrAppend(&out, "<h2>Cluster</h2>\n", ClusterTable(job));
  if (!job.notes.empty()) {
    absl::StrAppend(&out, "<h2>Not shown</h2>\n<ul class=\"notes\">\n");
    for (const std::string& note : job.notes)
      absl::StrAppend(&out, "<li>", HtmlEscape(note), "</li>\n");
    absl::StrAppend(&out, "</ul>\n");
  }
  return out + "</body></html>\n";
}

}  // namespace ringwork
