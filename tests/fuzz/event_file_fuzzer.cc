// libFuzzer target: TensorBoard event files (TFRecord framing, then Event,
// Summary and HistogramProto messages). Any file is either refused with a
// status naming it or decodes; nothing is read outside the input and nothing is
// allocated from a length the file states before it is checked against the file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "observability/event_file.h"
#include "tests/fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemoryFile file(data, size);
  const std::string path = file.path();
  for (ringwork::CutTail tail : {ringwork::CutTail::kRefuse, ringwork::CutTail::kIgnore}) {
    absl::StatusOr<std::vector<ringwork::EventRecord>> events = ringwork::ReadEventFile(path, tail);
    if (!events.ok()) {
      if (events.status().message().find(path) == std::string::npos)
        std::abort();  // Names the file.
      continue;
    }
    size_t histogram_values = 0;
    for (const ringwork::EventRecord& e : *events) {
      for (const auto& [tag, h] : e.histograms) {
        if (h.bucket.size() != h.bucket_limit.size()) std::abort();
        histogram_values += h.bucket.size();
      }
    }
    if (histogram_values * 8 > size) std::abort();  // Every value came from the input.
  }
  return 0;
}
