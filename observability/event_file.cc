#include "observability/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "io/proto_wire.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

constexpr char kFileVersion[] = "brain.Event:2";
constexpr char kPrefix[] = "events.out.tfevents.";

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string EncodeHistogram(const Histogram& h) {
  WireWriter w;
  w.Double(1, h.min);
  w.Double(2, h.max);
  w.Double(3, h.num);
  w.Double(4, h.sum);
  w.Double(5, h.sum_squares);
  w.PackedDoubles(6, h.bucket_limit);
  w.PackedDoubles(7, h.bucket);
  return w.data();
}

bool DecodeHistogram(absl::string_view bytes, Histogram* h) {
  WireReader r(bytes);
  while (r.Next()) {
    if (r.wire_type() == kFixed64) {
      switch (r.field()) {
        case 1:
          h->min = r.as_double();
          break;
        case 2:
          h->max = r.as_double();
          break;
        case 3:
          h->num = r.as_double();
          break;
        case 4:
          h->sum = r.as_double();
          break;
        case 5:
          h->sum_squares = r.as_double();
          break;
      }
    }
    if (r.field() == 6) r.AppendDoubles(&h->bucket_limit);
    if (r.field() == 7) r.AppendDoubles(&h->bucket);
  }
  return r.ok() && h->bucket_limit.size() == h->bucket.size();
}

}  // namespace

Histogram Histogram::Of(const float* values, size_t count, int buckets) {
  Histogram h;
  buckets = std::max(1, buckets);
  bool any = false;
  for (size_t i = 0; i < count; ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    h.min = any ? std::min(h.min, v) : v;
    h.max = any ? std::max(h.max, v) : v;
    any = true;
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (!any) return h;
  if (h.max == h.min) buckets = 1;
  const double width = (h.max - h.min) / buckets;
  h.bucket.assign(static_cast<size_t>(buckets), 0);
  for (int b = 0; b < buckets; ++b)
    h.bucket_limit.push_back(b + 1 == buckets ? h.max : h.min + width * (b + 1));
  for (size_t i = 0; i < count; ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    // In double, clamped before the conversion: (v - min) / width is in [0, buckets].
    const double at = width > 0 ? std::floor((v - h.min) / width) : 0;
    const int b = static_cast<int>(std::clamp(at, 0.0, static_cast<double>(buckets - 1)));
    h.bucket[static_cast<size_t>(b)] += 1;
  }
  return h;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  // A file of its own: a second writer in this process within the same second
  // (as TF2 does) adds a number before ".v2".
  const std::string stem =
      absl::StrCat(dir, "/", kPrefix, static_cast<int64_t>(WallTime()), ".", host, ".", ::getpid());
  std::string path = stem + ".v2";
  for (int n = 1;; ++n) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    if (errno != EEXIST) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
    }
    path = absl::StrCat(stem, ".", n, ".v2");
  }
  RW_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> records, RecordWriter::Append(path));
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(std::move(records)));
  WireWriter event;
  event.Double(1, WallTime());
  event.Varint(2, 0);
  event.Bytes(3, kFileVersion);
  RW_RETURN_IF_ERROR(writer->records_->Write(event.data()));
  return writer;
}

absl::Status EventFileWriter::WriteEvent(int64_t step, const std::string& summary) {
  WireWriter event;
  event.Double(1, WallTime());
  event.Varint(2, static_cast<uint64_t>(step));
  event.Bytes(5, summary);
  return records_->Write(event.data());
}

absl::Status EventFileWriter::WriteScalar(const std::string& tag, int64_t step, float value) {
  WireWriter v;
  v.Bytes(1, tag);
  v.Float(2, value);
  WireWriter summary;
  summary.Bytes(1, v.data());
  return WriteEvent(step, summary.data());
}

absl::Status EventFileWriter::WriteHistogram(const std::string& tag, int64_t step,
                                             const Histogram& histogram) {
  WireWriter v;
  v.Bytes(1, tag);
  v.Bytes(5, EncodeHistogram(histogram));
  WireWriter summary;
  summary.Bytes(1, v.data());
  return WriteEvent(step, summary.data());
}

absl::StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path, CutTail cut_tail) {
  RW_ASSIGN_OR_RETURN(std::vector<std::string> records, ReadRecords(path, cut_tail));
  std::vector<EventRecord> events;
  for (size_t i = 0; i < records.size(); ++i) {
    auto malformed = [&] {
      return absl::DataLossError(absl::StrCat(path, ": event ", i, " is malformed"));
    };
    EventRecord event;
    WireReader r(records[i]);
    while (r.Next()) {
      if (r.Is(1, kFixed64)) event.wall_time = r.as_double();
      if (r.Is(2, kVarint)) event.step = static_cast<int64_t>(r.varint());
      if (r.Is(3, kLengthDelimited)) event.file_version = std::string(r.bytes());
      if (!r.Is(5, kLengthDelimited)) continue;
      WireReader summary(r.bytes());
      while (summary.Next()) {
        if (!summary.Is(1, kLengthDelimited)) continue;
        WireReader value(summary.bytes());
        std::string tag;
        bool scalar = false, histogram = false;
        float simple = 0;
        Histogram histo;
        while (value.Next()) {
          if (value.Is(1, kLengthDelimited)) tag = std::string(value.bytes());
          if (value.Is(2, kFixed32)) simple = value.as_float(), scalar = true;
          if (value.Is(5, kLengthDelimited)) {
            histo = Histogram();
            if (!DecodeHistogram(value.bytes(), &histo)) return malformed();
            histogram = true;
          }
        }
        if (!value.ok()) return malformed();
        if (scalar) event.scalars.emplace_back(tag, simple);
        if (histogram) event.histograms.emplace_back(tag, histo);
      }
      if (!summary.ok()) return malformed();
    }
    if (!r.ok()) return malformed();
    events.push_back(std::move(event));
  }
  return events;
}

std::vector<std::string> EventFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, kPrefix)) files.push_back(entry.path().string());
  }
  // By the seconds in the name, then (one process's files of one second) by
  // the number before ".v2": shorter names first.
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    auto seconds = [](const std::string& path) {
      const std::string name = fs::path(path).filename().string().substr(sizeof(kPrefix) - 1);
      return std::strtoll(name.c_str(), nullptr, 10);
    };
    return std::make_tuple(seconds(a), a.size(), a) < std::make_tuple(seconds(b), b.size(), b);
  });
  return files;
}

absl::StatusOr<ScalarCurves> ReadScalarCurves(const std::string& dir) {
  std::vector<std::pair<double, std::vector<EventRecord>>> files;  // By first wall time.
  for (const std::string& path : EventFiles(dir)) {
    RW_ASSIGN_OR_RETURN(std::vector<EventRecord> events, ReadEventFile(path, CutTail::kIgnore));
    if (events.empty() || events.front().file_version != kFileVersion) {
      return absl::DataLossError(
          absl::StrCat(path, ": does not open with file_version \"", kFileVersion, "\""));
    }
    files.emplace_back(events.front().wall_time, std::move(events));
  }
  if (files.empty()) return absl::NotFoundError(absl::StrCat("no TensorBoard event file in ", dir));
  std::stable_sort(files.begin(), files.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ScalarCurves curves;
  for (const auto& [started, events] : files) {
    for (const EventRecord& e : events) {
      for (const auto& [tag, value] : e.scalars) curves[tag][e.step] = value;
    }
  }
  return curves;
}

}  // namespace ringwork
