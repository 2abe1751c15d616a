#include "data/pipeline/pipeline_stats.h"

namespace ringwork {

PipelineStats::Stage* PipelineStats::AddStage(std::string name, int64_t capacity, int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  // The same stage made again (a Repeat's next input pass, a reader restarted
  // after a regroup) counts on where it was.
  for (Stage& s : stages_) {
    if (s.name == name) return &s;
  }
  Stage& stage = stages_.emplace_back();
  stage.name = std::move(name);
  stage.capacity = capacity;
  stage.threads = threads;
  return &stage;
}

std::vector<PipelineStats::StageSnapshot> PipelineStats::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StageSnapshot> out;
  for (const Stage& s : stages_) {
    StageSnapshot snap;
    snap.name = s.name;
    snap.threads = s.threads;
    snap.elements = s.elements.load();
    snap.busy_s = static_cast<double>(s.busy_ns.load()) * 1e-9;
    snap.input_s = static_cast<double>(s.input_ns.load()) * 1e-9;
    const int64_t samples = s.fill_samples.load();
    snap.capacity = s.capacity;
    snap.fill_sum = s.fill_sum.load();
    snap.fill_samples = samples;
    if (s.capacity > 0 && samples > 0) {
      snap.mean_fill =
          static_cast<double>(s.fill_sum.load()) / static_cast<double>(samples * s.capacity);
    }
    out.push_back(std::move(snap));
  }
  return out;
}

}  // namespace ringwork
