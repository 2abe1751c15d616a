// What tests read from their processes' output: the time of a log line (RW_LOG's
// "I 17:52:35.043 file.cc:15]"), to check how long after an event a process
// reacted on one machine's clock, and the weights fingerprints `train` logs.
//
//   const double cut = LogClockNow();
//   ... cut a link, wait for the workers ...
//   const double resumed = LogLineTime(output, "generation 1: ");
//   CHECK(resumed - cut <= 7.0);
#ifndef RINGWORK_TESTING_LOG_LINES_H_
#define RINGWORK_TESTING_LOG_LINES_H_

#include <string>
#include <vector>

namespace ringwork {

// Seconds since midnight of the first log line whose text matches the regular
// expression `what`, or -1; with `task`, only lines `launch` prefixed "[task] ".
double LogLineTime(const std::string& output, const std::string& what,
                   const std::string& task = "");

// Now, as log lines print it (seconds since midnight, local time).
double LogClockNow();

// Every "weights fingerprint <16 hex digits>" in `output`, in order.
std::vector<std::string> WeightsFingerprints(const std::string& output);

}  // namespace ringwork

#endif  // RINGWORK_TESTING_LOG_LINES_H_
