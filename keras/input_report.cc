#include "keras/input_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/step_breakdown.h"

namespace ringwork {
namespace {

std::string Percent(double fraction) {
  return absl::StrCat(static_cast<int>(fraction * 100 + 0.5), "%");
}

}  // namespace

PipelineStats* InputReport::StartPass() {
  previous_ = std::move(current_);
  current_ = std::make_unique<PipelineStats>();
  since_ = std::chrono::steady_clock::now();
  reported_.clear();
  reported_skipped_ = 0;
  return current_.get();
}

PipelineStats* InputReport::ContinuePass() {
  return current_ != nullptr ? current_.get() : StartPass();
}

absl::Status InputReport::EndEpoch(MultiWorkerMirroredStrategy* strategy, Logs* logs) {
  if (current_ == nullptr) return absl::OkStatus();
  const int64_t skipped_so_far = current_->skipped();
  int64_t skipped = skipped_so_far - reported_skipped_;
  reported_skipped_ = skipped_so_far;
  RW_RETURN_IF_ERROR(
      strategy->communicator()->AllReduce(&skipped, 1, DataType::kInt64, ReduceOp::kSum));
  (*logs)[kInputSkipped] = static_cast<double>(skipped);
  const auto now = std::chrono::steady_clock::now();
  const double wall_s = std::max(std::chrono::duration<double>(now - since_).count(), 1e-9);
  since_ = now;
  const std::vector<PipelineStats::StageSnapshot> so_far = current_->Snapshot();
  // This epoch's part: what the stages did since the last report of this pass.
  std::vector<PipelineStats::StageSnapshot> stages = so_far;
  for (size_t i = 0; i < stages.size() && i < reported_.size(); ++i) {
    PipelineStats::StageSnapshot& s = stages[i];
    s.elements -= reported_[i].elements;
    s.busy_s -= reported_[i].busy_s;
    s.input_s -= reported_[i].input_s;
    s.fill_sum -= reported_[i].fill_sum;
    s.fill_samples -= reported_[i].fill_samples;
    s.mean_fill =
        s.capacity > 0 && s.fill_samples > 0
            ? static_cast<double>(s.fill_sum) / static_cast<double>(s.fill_samples * s.capacity)
            : -1;
  }
  reported_ = so_far;
  std::reverse(stages.begin(), stages.end());  // From the source.
  for (size_t i = 0; i < stages.size(); ++i) {
    const PipelineStats::StageSnapshot& s = stages[i];
    const std::string key =
        absl::StrCat("input_pipeline/", i + 1, "_", absl::StrReplaceAll(s.name, {{" ", "_"}}), "/");
    if (s.threads > 0) (*logs)[key + "busy"] = s.busy_s / (s.threads * wall_s);
    (*logs)[key + "upstream"] = s.input_s / wall_s;
    if (s.mean_fill >= 0) (*logs)[key + "buffer_fill"] = s.mean_fill;
  }
  const auto wait = logs->find(kBreakdownDataWait);
  if (!warned_ && wait != logs->end()) {
    const std::string diagnosis =
        Diagnose(stages, wall_s, wait->second, strategy->cores_per_worker());
    if (!diagnosis.empty()) {
      RW_LOG(WARNING) << diagnosis;
      warned_ = true;
    }
  }
  return absl::OkStatus();
}

std::string InputReport::Diagnose(const std::vector<PipelineStats::StageSnapshot>& stages,
                                  double wall_s, double data_wait, int cores) {
  if (data_wait <= kInputWarnDataWait || stages.empty()) return "";
  std::string out = absl::StrCat("the input pipeline held training up: the steps waited ",
                                 Percent(data_wait), " of their time for data. ");
  // The busiest Map: its threads' share of the pass in its function.
  const PipelineStats::StageSnapshot* busiest = nullptr;
  double busiest_share = 0;
  for (const auto& s : stages) {
    if (s.threads == 0) continue;
    const double share = s.busy_s / (s.threads * wall_s);
    if (busiest == nullptr || share > busiest_share) busiest = &s, busiest_share = share;
  }
  const double reading = stages.front().input_s / wall_s;
  // A stage is the cause when its threads were mostly busy, or when its work
  // alone accounts for most of the wait (one thread: on the training thread).
  if (busiest != nullptr && (busiest_share >= 0.6 || busiest_share >= 0.5 * data_wait)) {
    absl::StrAppend(&out, "Stage \"", busiest->name, "\" was busy ", Percent(busiest_share),
                    " of its ", busiest->threads, busiest->threads == 1 ? " thread's" : " threads'",
                    " time: ");
    if (busiest->threads < cores) {
      absl::StrAppend(&out, "give it more (num_parallel_calls=kAutotune takes the worker's ", cores,
                      " cores)");
    } else {
      absl::StrAppend(&out, "it has every core of this worker (", cores,
                      cores == 1 ? ": it runs on the training thread" : "",
                      "); give each worker more cores (fewer workers per host), Cache() what "
                      "it makes, or make it cheaper (smaller images: --features=image:HxWxC)");
    }
  } else if (reading >= 0.6) {
    absl::StrAppend(&out, "Reading the source took ", Percent(reading),
                    " of its reader's time: read more files at once (Interleave), use faster "
                    "storage, or Cache() the data");
  } else {
    absl::StrAppend(&out, "No stage was busy (the busiest: ",
                    busiest != nullptr
                        ? absl::StrCat("\"", busiest->name, "\" ", Percent(busiest_share))
                        : "none",
                    "; reading ", Percent(reading),
                    "): its threads wait for cores that training takes; try fewer "
                    "--intra_op_threads, or fewer workers per host");
  }
  return out;
}

}  // namespace ringwork
