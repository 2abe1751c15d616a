// report: one self-contained HTML page for a finished (or running) job, from the
// files it leaves: train's --metrics_json, its --tensorboard_dir and a merged
// timeline (launch --timeline).
//
//   report --metrics_json=m.json --tensorboard_dir=tb --timeline=t.json --output=job.html
//
// Every input is optional, and a file that does not exist (a job killed before it
// wrote one) is said on the page; but at least one must hold something.
// Exit codes: 0; 2 when nothing given exists, an input is not what it should be, or
// the output cannot be written; 5 for an event file that fails its CRC.
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "tools/report/html_report.h"
#include "tools/report/job_summary.h"

namespace ringwork {
namespace {

int Main(int argc, char** argv) {
  SetLogTask("report");
  FlagSet flags(
      "report: one self-contained HTML page for a job (curves, throughput, step-time\n"
      "breakdown, all-reduce and cluster tables)\n\n"
      "  report --metrics_json=m.json --tensorboard_dir=tb --timeline=t.json --output=job.html");
  ReportInputs inputs;
  std::string output = "report.html", title = "Ringwork job";
  flags.String("metrics_json", &inputs.metrics_json, "train's --metrics_json file");
  flags.String("tensorboard_dir", &inputs.tensorboard_dir,
               "train's --tensorboard_dir (DIR/train, DIR/validation)");
  flags.String("timeline", &inputs.timeline, "a merged timeline (launch --timeline=FILE)");
  flags.String("output", &output, "the HTML file to write");
  flags.String("title", &title, "the page's title");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("report");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (!args->empty())
    ExitWithStatus(
        absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", (*args)[0], "\"")));
  if (inputs.metrics_json.empty() && inputs.tensorboard_dir.empty() && inputs.timeline.empty()) {
    ExitWithStatus(absl::InvalidArgumentError(
        "give at least one of --metrics_json, --tensorboard_dir, --timeline"));
  }
  absl::StatusOr<JobSummary> job = LoadJobSummary(inputs);
  if (!job.ok()) ExitWithStatus(job.status());
  absl::Status written = WriteFileAtomically(output, RenderHtmlReport(*job, title), "--output");
  if (!written.ok()) ExitWithStatus(written);
  std::printf("report: %s\n", output.c_str());
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
