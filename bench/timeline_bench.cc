// timeline_bench: what a timeline span costs, off (no timeline installed: what every
// run pays) and on, in nanoseconds per span, as the median of --runs blocks; and the
// same per training step for a given number of spans per step.
//
//   bazel-bin/bench/timeline_bench [--runs=5] [--spans_per_step=40]
//
// A step of the MLP in tools/train records about 30 spans (forward and backward of
// each layer, loss, packs, collectives, data, optimizer, step): see
// docs/performance/training.md, "Timeline cost".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "base/exit_code.h"
#include "base/flags.h"
#include "observability/timeline.h"

namespace ringwork {
namespace {

// Nanoseconds per span over `iterations` spans named like a layer's forward pass.
double NanosPerSpan(int64_t iterations, const std::string& layer) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    TimelineSpan span("compute", "forward ", layer);
    span.Arg("step", i);
  }
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() /
         static_cast<double>(iterations);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  FlagSet flags("timeline_bench: the cost of timeline spans, off and on");
  int64_t runs = 5, spans_per_step = 30, iterations_off = 20000000, iterations_on = 500000;
  flags.Int("runs", &runs, "blocks per case; the median is shown");
  flags.Int("spans_per_step", &spans_per_step, "spans one training step records");
  flags.Int("iterations_off", &iterations_off, "spans per block with the timeline off");
  flags.Int("iterations_on", &iterations_on, "spans per block with the timeline on");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("timeline_bench");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (runs < 1 || iterations_off < 1 || iterations_on < 1) {
    ExitWithStatus(absl::InvalidArgumentError("--runs and --iterations_* must be at least 1"));
  }
  const std::string layer = "dense_1";
  std::vector<double> off, on;
  for (int64_t r = 0; r < runs; ++r) off.push_back(NanosPerSpan(iterations_off, layer));
  Timeline timeline({.max_events = 200000});
  Timeline::Install(&timeline);
  for (int64_t r = 0; r < runs; ++r) on.push_back(NanosPerSpan(iterations_on, layer));
  Timeline::Uninstall(&timeline);
  std::printf("| timeline | ns per span (median of %lld) | us per step (%lld spans) |\n",
              static_cast<long long>(runs), static_cast<long long>(spans_per_step));
  std::printf("|---|---|---|\n");
  std::printf("| off | %.2f | %.3f |\n", Median(off), Median(off) * spans_per_step / 1000);
  std::printf("| on (ring of 200000, wrapping) | %.1f | %.2f |\n", Median(on),
              Median(on) * spans_per_step / 1000);
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
