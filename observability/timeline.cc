#include "observability/timeline.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

int ThreadId() {
  thread_local const int tid = static_cast<int>(syscall(SYS_gettid));
  return tid;
}

std::string ThreadName() {
  char name[32] = {0};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0 || name[0] == '\0') {
    return absl::StrCat("thread ", ThreadId());
  }
  return name;
}

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  uint32_t lowest = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, lowest = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, lowest = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, lowest = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  uint32_t code = lead & (0x7f >> length);
  for (size_t k = 1; k < length; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    code = (code << 6) | (c & 0x3f);
  }
  if (code < lowest || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

}  // namespace

std::atomic<Timeline*> Timeline::active_{nullptr};

std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out += buf;
    } else if (u >= 0x80) {
      // Names come from users and peers: a byte that is not UTF-8 would make the
      // whole file unreadable to JSON parsers, so it becomes U+FFFD.
      const size_t length = Utf8SequenceLength(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    } else {
      out += c;
    }
    ++i;
  }
  return out;
}

Timeline::Timeline(Options options) : options_(options) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
  ring_.reserve(
      static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(options_.max_events, 1), 4096)));
}

bool Timeline::Install(Timeline* timeline) {
  Timeline* expected = nullptr;
  return active_.compare_exchange_strong(expected, timeline, std::memory_order_acq_rel);
}

void Timeline::Uninstall(Timeline* timeline) {
  Timeline* expected = timeline;
  active_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

int64_t Timeline::NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Timeline::SetStep(int64_t step) {
  in_window_.store(step >= options_.first_step && step <= options_.last_step,
                   std::memory_order_relaxed);
}

void Timeline::Complete(const char* category, std::string name, int64_t start_us, int64_t end_us,
                        std::string args_json) {
  if (!in_window_.load(std::memory_order_relaxed)) return;
  Add(Event{category, 'X', ThreadId(), start_us, std::max<int64_t>(0, end_us - start_us),
            std::move(name), std::move(args_json)});
}

void Timeline::Instant(const char* category, std::string name, std::string args_json) {
  if (!in_window_.load(std::memory_order_relaxed)) return;
  Add(Event{category, 'i', ThreadId(), NowMicros(), 0, std::move(name), std::move(args_json)});
}

void Timeline::Add(Event event) {
  thread_local uint64_t named_for = 0;  // The id of the timeline this thread is named in.
  const bool name_thread = named_for != id_;
  std::string thread_name = name_thread ? ThreadName() : std::string();
  std::lock_guard<std::mutex> lock(mu_);
  if (name_thread) {
    thread_names_.emplace(event.tid, std::move(thread_name));
    named_for = id_;
  }
  if (options_.max_events <= 0) {
    ++dropped_;
    return;
  }
  if (static_cast<int64_t>(ring_.size()) < options_.max_events) {
    ring_.push_back(std::move(event));
    return;
  }
  ring_[next_] = std::move(event);
  next_ = (next_ + 1) % ring_.size();
  ++dropped_;
}

int64_t Timeline::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(ring_.size());
}

void Timeline::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Event>().swap(ring_);
  next_ = 0;
}

int64_t Timeline::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

absl::Status Timeline::WriteJson(const std::string& path, const ProcessInfo& process) const {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::trunc);
  if (!out)
    return absl::InvalidArgumentError(
        absl::StrCat("timeline ", path, ": cannot create ", tmp, ": ", std::strerror(errno)));
  const std::string task = JsonEscape(process.task);
  std::lock_guard<std::mutex> lock(mu_);
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" << process.rank << ",\"task\":\""
      << task << "\",\"host\":\"" << JsonEscape(process.host) << "\",\"clock_domain\":\""
      << JsonEscape(process.clock_domain) << "\",\"clock_offset_us\":" << process.clock_offset_us
      << ",\"clock_offset_rtt_us\":" << process.clock_offset_rtt_us
      << ",\"events\":" << ring_.size() << ",\"dropped_events\":" << dropped_
      << "},\n\"traceEvents\":[\n";
  out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << process.rank
      << ",\"tid\":0,\"args\":{\"name\":\"" << task << "\"}},\n";
  out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << process.rank
      << ",\"tid\":0,\"args\":{\"sort_index\":" << process.rank << "}}";
  for (const auto& [tid, name] : thread_names_) {
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << process.rank
        << ",\"tid\":" << tid << ",\"args\":{\"name\":\"" << JsonEscape(name) << "\"}}";
  }
  // Oldest first: once the ring wrapped, the oldest event is at next_.
  const size_t n = ring_.size();
  const size_t first = static_cast<int64_t>(n) < options_.max_events ? 0 : next_;
  for (size_t k = 0; k < n; ++k) {
    const Event& e = ring_[(first + k) % n];
    out << ",\n{\"ph\":\"" << e.phase << "\",\"cat\":\"" << e.category << "\",\"name\":\""
        << JsonEscape(e.name) << "\",\"pid\":" << process.rank << ",\"tid\":" << e.tid
        << ",\"ts\":" << e.ts_us;
    if (e.phase == 'X') out << ",\"dur\":" << e.dur_us;
    if (e.phase == 'i') out << ",\"s\":\"t\"";
    if (!e.args_json.empty()) out << ",\"args\":{" << e.args_json << "}";
    out << "}";
  }
  out << "\n]}\n";
  out.close();
  if (!out)
    return absl::InvalidArgumentError(absl::StrCat("timeline ", path, ": cannot write ", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeline ", path, ": cannot rename ", tmp, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void TimelineArgs::Key(std::string_view key) {
  if (!json_.empty()) json_ += ',';
  json_ += '"';
  json_ += JsonEscape(key);
  json_ += "\":";
}

TimelineArgs& TimelineArgs::Add(std::string_view key, int64_t value) {
  Key(key);
  json_ += std::to_string(value);
  return *this;
}

TimelineArgs& TimelineArgs::Add(std::string_view key, double value) {
  Key(key);
  if (std::isfinite(value)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", value);
    json_ += buf;
  } else {
    json_ += "null";
  }
  return *this;
}

TimelineArgs& TimelineArgs::Add(std::string_view key, std::string_view value) {
  Key(key);
  json_ += '"';
  json_ += JsonEscape(value);
  json_ += '"';
  return *this;
}

TimelineSpan::TimelineSpan(const char* category, std::string_view prefix, std::string_view name)
    : timeline_(Timeline::Active()), category_(category) {
  if (timeline_ == nullptr) return;
  name_.reserve(prefix.size() + name.size());
  name_.append(prefix).append(name);
  start_us_ = Timeline::NowMicros();
}

TimelineSpan::TimelineSpan(const char* category, std::string_view prefix, int64_t number)
    : TimelineSpan(category, prefix) {
  if (timeline_ != nullptr) name_ += std::to_string(number);
}

TimelineSpan::~TimelineSpan() { End(); }

void TimelineSpan::End() {
  if (timeline_ == nullptr) return;
  timeline_->Complete(category_, std::move(name_), start_us_, Timeline::NowMicros(), args_.Take());
  timeline_ = nullptr;
}

}  // namespace ringwork
