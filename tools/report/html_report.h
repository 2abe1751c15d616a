// One self-contained HTML page for a job: a summary, loss and accuracy curves for
// train and validation, throughput per epoch, the step-time breakdown per epoch as
// stacked bars, the all-reduce table and the cluster table. Inline CSS and SVG only:
// no script, font or image is loaded from anywhere.
//
//   absl::StatusOr<JobSummary> job = LoadJobSummary(inputs);
//   std::string html = RenderHtmlReport(*job, "job 42");
#ifndef RINGWORK_TOOLS_REPORT_HTML_REPORT_H_
#define RINGWORK_TOOLS_REPORT_HTML_REPORT_H_

#include <string>

#include "tools/report/job_summary.h"

namespace ringwork {

std::string RenderHtmlReport(const JobSummary& job, const std::string& title);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_REPORT_HTML_REPORT_H_
