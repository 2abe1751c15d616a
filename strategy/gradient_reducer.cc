#include "strategy/gradient_reducer.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "tensor/reduce.h"

namespace ringwork {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t AutoPackBytes(int64_t total_bytes) {
  return std::clamp<int64_t>(total_bytes / 4, 256 << 10, 16 << 20);
}

}  // namespace

absl::StatusOr<GradientCompression> ParseGradientCompression(absl::string_view name) {
  if (name == "none") return GradientCompression::kNone;
  if (name == "bf16") return GradientCompression::kBFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("gradient compression \"", name, "\": expected none or bf16"));
}

absl::string_view SparseReductionName(SparseReduction reduction) {
  switch (reduction) {
    case SparseReduction::kSparse:
      return "sparse";
    case SparseReduction::kDense:
      return "dense";
    case SparseReduction::kAuto:
      break;
  }
  return "auto";
}

absl::string_view GradientCompressionName(GradientCompression compression) {
  return compression == GradientCompression::kBFloat16 ? "bf16" : "none";
}

GradientReducer::GradientReducer(Communicator* comm, std::vector<Variable*> all_variables,
                                 Options options)
    : comm_(comm), options_(options) {
  std::vector<Variable*> variables;  // Dense: in the packs.
  for (Variable* v : all_variables) {
    if (!v->sparse_gradient) {
      variables.push_back(v);
      continue;
    }
    sparse_.push_back(v);
    sparse_grads_.emplace_back(static_cast<size_t>(v->size()), 0.f);
    v->grad = sparse_grads_.back().data();
  }
  last_sparse_choice_.assign(sparse_.size(), false);
  int64_t total = 0;
  for (const Variable* v : variables) total += v->size();
  arena_.assign(static_cast<size_t>(total), 0.f);
  const int64_t pack_floats =
      (options_.bytes_per_pack > 0 ? options_.bytes_per_pack : AutoPackBytes(total * 4)) / 4;
  // Backward order: the last variable's gradient is produced first.
  int64_t offset = 0;
  for (auto it = variables.rbegin(); it != variables.rend(); ++it) {
    Variable* v = *it;
    // Close the open pack before it would outgrow the target.
    if (packs_.empty() ||
        (packs_.back().count > 0 && packs_.back().count + v->size() > pack_floats)) {
      packs_.push_back(Pack{offset, 0, 0, 0, {}});
    }
    Pack& pack = packs_.back();
    v->grad = arena_.data() + offset;
    pack.count += v->size();
    pack.total += 1;
    pack.names.push_back(v->name);
    pack_of_[v] = static_cast<int>(packs_.size()) - 1;
    offset += v->size();
  }
  all_packs_ = Pack{0, offset, 0, 0, {}};
  for (const Pack& pack : packs_) {
    all_packs_.names.insert(all_packs_.names.end(), pack.names.begin(), pack.names.end());
  }
  if (options_.compression == GradientCompression::kBFloat16) {
    // Packs are reduced one at a time: one staging buffer of the largest serves
    // all. AgreeOnPacking grows it to the whole arena when steps reduce in one.
    int64_t largest = 0;
    for (const Pack& pack : packs_) largest = std::max(largest, pack.count);
    wire_.resize(static_cast<size_t>(largest));
  }
  if (options_.overlap && comm_->world_size() > 1) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "rw-allreduce");
      RunPacks();
    });
  }
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientReducer::BeginStep(float weight) {
  std::lock_guard<std::mutex> lock(mu_);
  weight_ = weight;
  for (Pack& p : packs_) p.waiting = p.total;
  next_to_reduce_ = 0;
  error_ = absl::OkStatus();
  in_step_ = true;
}

void GradientReducer::Ready(const Variable* variable) {
  if (variable->sparse_gradient) return;  // Reduced in FinishStep.
  auto it = pack_of_.find(variable);
  RW_CHECK(it != pack_of_.end()) << "variable " << variable->name << " is not in this reducer";
  bool pack_complete;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pack_complete = --packs_[it->second].waiting == 0;
  }
  if (pack_complete) {
    if (Timeline* timeline = Timeline::Active()) {
      const Pack& pack = packs_[it->second];
      timeline->Instant("gradients", absl::StrCat("gradient pack ", it->second, " ready"),
                        TimelineArgs().Add("bytes", pack.count * WireBytesPerGradient()).Take());
    }
    cv_.notify_all();
  }
}

absl::Status GradientReducer::AgreeOnPacking() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (packing_ != Packing::kUnknown) return absl::OkStatus();
    // Every worker decides this alike without asking: the packs are the same
    // everywhere. With one pack (or none: only sparse gradients, and then an
    // overlapping worker never gets here) "in one" is the same collective.
    if (num_packs() <= 1) {
      packing_ = Packing::kPacks;
      return absl::OkStatus();
    }
  }
  int64_t any_overlaps = overlaps() ? 1 : 0;
  RW_RETURN_IF_ERROR(comm_->AllReduce(&any_overlaps, 1, DataType::kInt64, ReduceOp::kMax));
  // Compressed, all packs in one travel through one staging buffer: half the
  // arena's bytes. Nobody overlaps, so neither does this worker: the caller is the
  // training thread in FinishDense, the only one that reduces, and it may grow here.
  if (any_overlaps == 0 && options_.compression == GradientCompression::kBFloat16) {
    RW_CHECK(!overlaps()) << "an overlapping worker agreed that none overlaps";
    wire_.resize(static_cast<size_t>(all_packs_.count));
  }
  std::lock_guard<std::mutex> lock(mu_);
  packing_ = any_overlaps != 0 ? Packing::kPacks : Packing::kWhole;
  return absl::OkStatus();
}

absl::Status GradientReducer::Reduce(const Pack& pack, int index) {
  std::optional<TimelineSpan> span;
  if (index < 0) {
    span.emplace("gradients", "gradients, all packs in one");
  } else {
    span.emplace("gradients", "gradient pack ", int64_t{index});
  }
  const bool bf16 = options_.compression == GradientCompression::kBFloat16;
  if (span->active()) {
    span->Arg("bytes", pack.count * WireBytesPerGradient());
    span->Arg("variables", absl::StrJoin(pack.names, ", "));
    span->Arg("weight", static_cast<double>(weight_));
  }
  float* data = arena_.data() + pack.offset;
  const size_t count = static_cast<size_t>(pack.count);
  // Weighted by this replica's share of the step's examples (1: no change; 0: an
  // empty batch, whatever the arena holds from earlier steps).
  if (weight_ == 0.f) {
    std::fill(data, data + count, 0.f);
  } else if (weight_ != 1.f) {
    for (size_t i = 0; i < count; ++i) data[i] *= weight_;
  }
  if (!bf16) return comm_->AllReduce(data, count, DataType::kFloat32, ReduceOp::kMean);
  // Every replica converts the same bfloat16 result back: they stay identical.
  BFloat16* wire = wire_.data();
  ConvertToBFloat16(data, wire, count);
  const absl::Status reduced = comm_->AllReduce(wire, count, DataType::kBFloat16, ReduceOp::kMean);
  if (!reduced.ok()) return reduced;
  ConvertFromBFloat16(wire, data, count);
  return absl::OkStatus();
}

void GradientReducer::RunPacks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // Wait for the next pack in order (every worker reduces packs in this order).
    while (!stopping_ &&
           !(in_step_ && next_to_reduce_ < num_packs() && packs_[next_to_reduce_].waiting == 0)) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (stopping_) return;
    const int index = next_to_reduce_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    // This worker overlaps, so steps go pack by pack; the others learn it here.
    absl::Status status = AgreeOnPacking();
    if (status.ok()) status = Reduce(packs_[index], index);
    const double took = SecondsSince(start);
    lock.lock();
    timing_.communication_s += took;
    if (!status.ok() && error_.ok()) error_ = status;
    ++next_to_reduce_;
    cv_.notify_all();
  }
}

absl::Status GradientReducer::FinishStep() {
  absl::Status dense = FinishDense();
  if (!dense.ok() || comm_->world_size() == 1) return dense;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < sparse_.size(); ++i) {
    RW_RETURN_IF_ERROR(ReduceSparse(sparse_[i], i));
  }
  const double took = SecondsSince(start);
  std::lock_guard<std::mutex> lock(mu_);
  timing_.communication_s += took;
  timing_.exposed_s += took;
  return absl::OkStatus();
}

absl::Status GradientReducer::ReduceSparse(Variable* v, size_t index) {
  TimelineSpan span("exposed communication", "sparse gradient ", v->name);
  const int64_t rows = v->value.dim(0), width = v->size() / std::max<int64_t>(1, rows);
  const int64_t world = comm_->world_size();
  float* grad = v->grad;
  // An empty batch (weight 0) adds nothing, whatever the buffer holds.
  const std::vector<int64_t> none;
  const std::vector<int64_t>& mine = weight_ == 0.f ? none : v->touched_rows;
  int64_t most = static_cast<int64_t>(mine.size());
  RW_RETURN_IF_ERROR(comm_->AllReduce(&most, 1, DataType::kInt64, ReduceOp::kMax));
  // A ring all-reduce moves the table about twice; an all-gather moves every
  // rank's (id, row) pairs once.
  const int64_t dense_bytes = 2 * v->size() * 4;
  const int64_t sparse_bytes = world * most * (8 + width * 4);
  const bool sparse = options_.sparse == SparseReduction::kSparse ||
                      (options_.sparse == SparseReduction::kAuto && sparse_bytes < dense_bytes);
  last_sparse_choice_[index] = sparse;
  span.Arg("sparse", sparse ? 1 : 0);
  if (sparse && most == 0) {  // No replica had an id: nothing to gather.
    std::fill(grad, grad + v->size(), 0.f);
    return absl::OkStatus();
  }
  if (!sparse) {
    const size_t count = static_cast<size_t>(v->size());
    if (weight_ == 0.f) {
      std::fill(grad, grad + count, 0.f);
    } else if (weight_ != 1.f) {
      for (size_t i = 0; i < count; ++i) grad[i] *= weight_;
    }
    return comm_->AllReduce(grad, count, DataType::kFloat32, ReduceOp::kMean);
  }
  // This rank's rows, weighted and divided by the replicas (the MEAN of the dense
  // path), padded to `most` with id -1.
  std::vector<int64_t> ids(static_cast<size_t>(most), -1);
  std::vector<float> values(static_cast<size_t>(most * width), 0.f);
  const float scale = weight_ / static_cast<float>(world);
  for (size_t j = 0; j < mine.size(); ++j) {
    ids[j] = mine[j];
    for (int64_t d = 0; d < width; ++d) values[j * width + d] = grad[mine[j] * width + d] * scale;
  }
  gathered_ids_.resize(static_cast<size_t>(world * most));
  gathered_rows_.resize(static_cast<size_t>(world * most * width));
  RW_RETURN_IF_ERROR(
      comm_->AllGather(ids.data(), gathered_ids_.data(), ids.size(), DataType::kInt64));
  RW_RETURN_IF_ERROR(
      comm_->AllGather(values.data(), gathered_rows_.data(), values.size(), DataType::kFloat32));
  // Summed in rank order on every replica: the same bits everywhere. The layer
  // left zeros outside its rows; an empty batch's buffer may hold anything.
  if (weight_ == 0.f) {
    std::fill(grad, grad + v->size(), 0.f);
  } else {
    for (int64_t id : mine) std::fill(grad + id * width, grad + (id + 1) * width, 0.f);
  }
  for (int64_t k = 0; k < world * most; ++k) {
    const int64_t id = gathered_ids_[k];
    if (id < 0) continue;
    if (id >= rows)
      return absl::DataLossError(absl::StrCat("sparse gradient of ", v->name, ": row ", id,
                                              " from a peer is outside the table's ", rows));
    float* row = grad + id * width;
    const float* add = gathered_rows_.data() + k * width;
    for (int64_t d = 0; d < width; ++d) row[d] += add[d];
  }
  return absl::OkStatus();
}

absl::Status GradientReducer::FinishDense() {
  if (comm_->world_size() == 1) {
    std::lock_guard<std::mutex> lock(mu_);
    in_step_ = false;
    return absl::OkStatus();
  }
  const auto start = std::chrono::steady_clock::now();
  TimelineSpan span("exposed communication", "wait for gradients");
  if (!thread_.joinable()) {
    absl::Status status = AgreeOnPacking();
    if (status.ok() && reduces_in_one()) {
      status = Reduce(all_packs_, -1);
    } else {
      for (int i = 0; i < num_packs() && status.ok(); ++i) status = Reduce(packs_[i], i);
    }
    const double took = SecondsSince(start);
    std::lock_guard<std::mutex> lock(mu_);
    timing_.communication_s += took;
    timing_.exposed_s += took;
    return status;
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (const Pack& p : packs_) {
    RW_CHECK_EQ(p.waiting, 0) << "FinishStep before every gradient of pack " << p.names[0]
                              << " was Ready";
  }
  const auto deadline = start + std::chrono::duration<double>(options_.finish_timeout_s);
  while (next_to_reduce_ < num_packs()) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        next_to_reduce_ < num_packs()) {
      return absl::DeadlineExceededError(
          absl::StrCat("gradient all-reduce did not finish within ", options_.finish_timeout_s,
                       " s (", next_to_reduce_, " of ", num_packs(), " packs done)"));
    }
  }
  in_step_ = false;
  timing_.exposed_s += SecondsSince(start);
  return error_;
}

GradientReducer::Timing GradientReducer::TakeTiming() {
  std::lock_guard<std::mutex> lock(mu_);
  Timing taken = timing_;
  timing_ = Timing();
  return taken;
}

std::string GradientReducer::DebugString() const {
  std::vector<std::string> parts;
  for (const Pack& p : packs_) {
    const int64_t bytes = p.count * 4;
    parts.push_back(absl::StrCat(bytes < 1024 ? bytes : bytes / 1024,
                                 bytes < 1024 ? " B [" : " KiB [", absl::StrJoin(p.names, ", "),
                                 "]"));
  }
  return absl::StrCat(
      packs_.size(), " pack", packs_.size() == 1 ? "" : "s", ": ", absl::StrJoin(parts, "; "),
      options_.compression == GradientCompression::kBFloat16 ? " (bfloat16 on the wire)" : "");
}

}  // namespace ringwork
