// What each stage of an input pipeline did, for seeing whether input is the
// bottleneck: elements made, time spent in a Map's function, time its reader
// spent getting elements from the stage before (the source's reading, for the
// stage next to it), how full a buffer was when its consumer came, records
// skipped as bad. Stages count as they run (atomics; any thread); Snapshot reads
// them, from the output end towards the source.
//
//   PipelineStats stats;
//   auto it = pipeline.Iterate({.stats = &stats});
//   ... after a while ...
//   for (const PipelineStats::StageSnapshot& s : stats.Snapshot()) { s.name, s.elements ... }
#ifndef RINGWORK_DATA_PIPELINE_PIPELINE_STATS_H_
#define RINGWORK_DATA_PIPELINE_PIPELINE_STATS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace ringwork {

class PipelineStats {
 public:
  struct Stage {
    std::string name;
    int64_t capacity = 0;  // A buffer's size (prefetch, map), else 0.
    int threads = 0;       // That run its work (a Map's); 0: none of its own.
    std::atomic<int64_t> elements{0};
    std::atomic<int64_t> busy_ns{0};   // In the stage's own work (a Map's function).
    std::atomic<int64_t> input_ns{0};  // Its reader in the stage before's Next.
    std::atomic<int64_t> fill_sum{0}, fill_samples{0};
  };
  struct StageSnapshot {
    std::string name;
    int threads = 0;
    int64_t elements = 0;
    double busy_s = 0, input_s = 0;
    double mean_fill = -1;  // Mean buffer fill (0..1) when its consumer asked; -1: none.
    int64_t capacity = 0, fill_sum = 0, fill_samples = 0;  // What mean_fill comes from.
  };

  // A stage, kept (at a stable address) as long as these stats live; a stage of
  // a name already added is that one (Maps of the same name and threads count
  // together: name them apart).
  Stage* AddStage(std::string name, int64_t capacity = 0, int threads = 0);
  std::vector<StageSnapshot> Snapshot() const;
  void AddSkipped(int64_t count) { skipped_ += count; }
  int64_t skipped() const { return skipped_; }

 private:
  mutable std::mutex mu_;
  std::deque<Stage> stages_;  // Guarded by mu_ (the stages' counters are atomics).
  std::atomic<int64_t> skipped_{0};
};

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_PIPELINE_STATS_H_
