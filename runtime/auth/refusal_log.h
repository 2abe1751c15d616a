// How a worker logs the calls it refused, so that a flood of bad calls cannot
// flood its log: each (remote host, what, reason) is logged once; at most
// `max_reasons_per_host` reasons per host and kind of call, `max_entries` in all (reasons carry
// caller-chosen text, so one host cannot use them up); at most `burst` lines per
// `period_s`. Refusals left unlogged are counted, and the count is logged with the
// next line or, once a period has passed, on its own. Caller-chosen text is cut to
// `max_reason_bytes` and non-printable bytes are escaped.
//
//   RefusalLog refusals;
//   refusals.Refused(context->peer(), "a Heartbeat", status);   // any thread
#ifndef RINGWORK_RUNTIME_AUTH_REFUSAL_LOG_H_
#define RINGWORK_RUNTIME_AUTH_REFUSAL_LOG_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace ringwork {

class RefusalLog {
 public:
  struct Options {
    size_t max_entries = 256;
    size_t max_reasons_per_host = 8;
    int burst = 30;
    double period_s = 60;
    size_t max_reason_bytes = 300;
  };
  RefusalLog() : RefusalLog(Options()) {}
  explicit RefusalLog(Options options) : options_(options) {}

  // `peer` as gRPC gives it ("ipv4:10.0.0.5:51234"); the port is ignored. True when
  // a line was logged.
  bool Refused(const std::string& peer, const std::string& what, const absl::Status& why);
  // Distinct refusals seen (at most max_entries).
  size_t size() const;

  // `text` cut to `max_bytes` (with "...") and bytes other than printable ASCII
  // (and the backslash) written as \xNN.
  static std::string Printable(const std::string& text, size_t max_bytes);

 private:
  const Options options_;
  mutable std::mutex mu_;
  std::set<std::string> seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> reasons_per_host_ ABSL_GUARDED_BY(mu_);
  double last_summary_s_ ABSL_GUARDED_BY(mu_) = 0;
  double period_start_s_ ABSL_GUARDED_BY(mu_) = -1;
  int lines_in_period_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_AUTH_REFUSAL_LOG_H_
