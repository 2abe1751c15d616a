// One worker's timeline in Chrome's trace-event format (what chrome://tracing and
// Perfetto open; Horovod's HOROVOD_TIMELINE writes the same): spans of forward and
// backward passes, gradient packs, collectives, waits for peers, data, checkpoints.
//
//   Timeline timeline({.max_events = 200000, .first_step = 10, .last_step = 20});
//   Timeline::Install(&timeline);                  // recording starts
//   {
//     TimelineSpan span("compute", "forward ", layer_name);   // one event at scope end
//     span.Arg("bytes", 4096);
//   }
//   Timeline::Uninstall(&timeline);
//   RW_RETURN_IF_ERROR(timeline.WriteJson("/tmp/w0.json", {.rank = 0, .task = "worker:0"}));
//
// Off is one atomic load per span: TimelineSpan and Timeline::Active() do nothing
// while no timeline is installed (names are only built when one is). Bounded: a ring
// of `max_events` (the oldest are dropped, and counted), and only training steps in
// [first_step, last_step] (SetStep) are recorded; events before the first step
// (startup) always are. Thread-safe: spans may end on any thread; each thread is a
// row named after the thread (pthread name).
#ifndef RINGWORK_OBSERVABILITY_TIMELINE_H_
#define RINGWORK_OBSERVABILITY_TIMELINE_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ringwork {

class Timeline {
 public:
  struct Options {
    int64_t max_events = 200000;
    // Training steps recorded (0-based global steps, both ends included).
    int64_t first_step = 0;
    int64_t last_step = std::numeric_limits<int64_t>::max();
  };
  // What the file says about the process that wrote it.
  struct ProcessInfo {
    int rank = 0;
    std::string task;  // "worker:1"
    std::string host;  // gethostname(), for people.
    // Tasks with the chief's clock domain read its CLOCK_MONOTONIC (the kernel's
    // boot_id: one kernel, one clock, whatever the network namespace).
    std::string clock_domain;
    // This process's steady clock + offset = the chief's steady clock (estimated;
    // 0 for the chief), and the round trip of the estimate (-1: none made).
    int64_t clock_offset_us = 0;
    int64_t clock_offset_rtt_us = -1;
  };

  explicit Timeline(Options options);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // The installed timeline, or null (recording is off).
  static Timeline* Active() { return active_.load(std::memory_order_acquire); }
  // Makes `timeline` the process's; false when another is installed already.
  static bool Install(Timeline* timeline);
  // Stops recording into `timeline` if it is the installed one. Spans that began
  // before still end into it: keep it alive until their threads are done.
  static void Uninstall(Timeline* timeline);
  // Microseconds of the steady clock (CLOCK_MONOTONIC: one clock for every process
  // of a host).
  static int64_t NowMicros();

  // The training step now running (training thread, every step).
  void SetStep(int64_t step);
  // A span [start_us, end_us] on the calling thread. `args_json`: the members of
  // the event's "args" object ("\"bytes\":4096"), or empty.
  void Complete(const char* category, std::string name, int64_t start_us, int64_t end_us,
                std::string args_json = {});
  // A point in time on the calling thread.
  void Instant(const char* category, std::string name, std::string args_json = {});

  int64_t recorded() const;  // Events held now.
  // Frees the events held (after WriteJson); later events are recorded anew.
  void Clear();
  int64_t dropped() const;  // Events dropped by the ring (oldest first).

  // Writes {"traceEvents": [...], "otherData": {...}} to `path` (a temporary file,
  // then rename): process and thread names as metadata events, ts in microseconds
  // of this process's steady clock.
  absl::Status WriteJson(const std::string& path, const ProcessInfo& process) const;

 private:
  struct Event {
    const char* category;
    char phase;  // 'X' span, 'i' instant.
    int tid;
    int64_t ts_us;
    int64_t dur_us;
    std::string name;
    std::string args_json;
  };
  void Add(Event event);

  static std::atomic<Timeline*> active_;
  const Options options_;
  uint64_t id_ = 0;  // Unique in the process (thread names are kept per timeline).
  std::atomic<bool> in_window_{true};

  mutable std::mutex mu_;
  std::vector<Event> ring_;                  // Guarded by mu_; wraps at max_events.
  size_t next_ = 0;                          // Guarded by mu_: next slot once the ring is full.
  int64_t dropped_ = 0;                      // Guarded by mu_.
  std::map<int, std::string> thread_names_;  // Guarded by mu_.
};

// Builds an event's args: TimelineArgs().Add("bytes", 4096).Add("algorithm", "ring").
class TimelineArgs {
 public:
  TimelineArgs& Add(std::string_view key, int64_t value);
  TimelineArgs& Add(std::string_view key, double value);
  TimelineArgs& Add(std::string_view key, std::string_view value);
  TimelineArgs& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value));
  }
  TimelineArgs& Add(std::string_view key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
#if !defined(ABSL_USES_STD_STRING_VIEW)
  TimelineArgs& Add(std::string_view key, absl::string_view value) {
    return Add(key, std::string_view(value.data(), value.size()));
  }
#endif
  TimelineArgs& Add(std::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  std::string Take() { return std::move(json_); }

 private:
  void Key(std::string_view key);
  std::string json_;
};

// A span from construction to destruction on this thread, named prefix + name;
// nothing at all when no timeline is installed at construction.
class TimelineSpan {
 public:
  TimelineSpan(const char* category, std::string_view prefix, std::string_view name = {});
  // "step 12": the number is formatted only while recording.
  TimelineSpan(const char* category, std::string_view prefix, int64_t number);
  ~TimelineSpan();
  TimelineSpan(const TimelineSpan&) = delete;
  TimelineSpan& operator=(const TimelineSpan&) = delete;

  bool active() const { return timeline_ != nullptr; }
  // Ends the span now instead of at scope end (then nothing more).
  void End();
  // Only add args behind `if (span.active())` when building them costs.
  template <typename T>
  void Arg(std::string_view key, T value) {
    if (timeline_ != nullptr) args_.Add(key, value);
  }

 private:
  Timeline* timeline_;
  const char* category_;
  int64_t start_us_ = 0;
  std::string name_;
  TimelineArgs args_;
};

// JSON string escaping for names and values ("a\"b" -> a\"b, control bytes as \u00XX).
std::string JsonEscape(std::string_view text);

}  // namespace ringwork

#endif  // RINGWORK_OBSERVABILITY_TIMELINE_H_
