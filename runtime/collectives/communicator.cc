#include "runtime/collectives/communicator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/crash_points.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/collectives/algorithm_selection.h"
#include "runtime/collectives/chunking.h"

namespace ringwork {
namespace {

// Shorter waits are not worth a span of their own (they stay in waited_us).
constexpr int64_t kTimelineWaitMinUs = 20;

}  // namespace

Communicator::Communicator(Transport* transport, CollectiveOptions options, Progress* progress)
    : transport_(transport),
      options_(std::move(options)),
      progress_(progress != nullptr ? progress : &own_progress_),
      timeout_s_(options_.timeout_s),
      timeout_flag_(options_.timeout_flag),
      topology_(HostTopology::OnePerRank(transport->world_size())) {
  max_frame_bytes_ = std::numeric_limits<size_t>::max();
  size_t preferred = std::numeric_limits<size_t>::max();
  for (int peer = 0; peer < transport_->world_size(); ++peer) {
    if (peer == transport_->rank()) continue;
    const Link* link = transport_->link(peer);
    RW_CHECK(link != nullptr) << "no link to rank " << peer;
    max_frame_bytes_ = std::min(max_frame_bytes_, link->max_payload_bytes());
    preferred = std::min(preferred, link->preferred_payload_bytes());
  }
  if (transport_->world_size() == 1) max_frame_bytes_ = preferred = 1 << 20;
  segment_bytes_ = options_.segment_bytes > 0 ? options_.segment_bytes : preferred;
  segment_bytes_ = std::max<size_t>(8, std::min(segment_bytes_, max_frame_bytes_));
}

size_t Communicator::SegmentElems(DataType dtype) const {
  return std::max<size_t>(1, segment_bytes_ / DataTypeSize(dtype));
}

absl::Status Communicator::AgreeOnSegmentBytes() {
  int64_t bytes = static_cast<int64_t>(segment_bytes_);
  absl::Status status = AllReduce(&bytes, 1, DataType::kInt64, ReduceOp::kMin);
  if (status.ok()) segment_bytes_ = static_cast<size_t>(bytes);
  return status;
}

absl::Status Communicator::LearnTopology() {
  // This rank's host key: the lowest rank among itself and its shared-memory peers.
  const int p = world_size();
  std::vector<int32_t> keys(p, 0);
  std::vector<bool> shm(p, false);
  int32_t key = rank();
  for (int peer = 0; peer < p; ++peer) {
    shm[peer] = peer != rank() && transport_->link(peer)->kind() == "shm";
    if (shm[peer]) key = std::min(key, peer);
  }
  keys[rank()] = key;
  RW_RETURN_IF_ERROR(AllGather(&keys[rank()], keys.data(), 1, DataType::kInt32));
  // Consistent when the ranks with this rank's key are exactly it and its
  // shared-memory peers; every rank must agree that all are.
  // With it, every rank says whether all its links are network (gRPC) links.
  int32_t agreed[2] = {1, 1};
  for (int peer = 0; peer < p; ++peer) {
    if (peer == rank()) continue;
    if (shm[peer] != (keys[peer] == key)) agreed[0] = 0;
    if (transport_->link(peer)->kind() != "grpc") agreed[1] = 0;
  }
  RW_RETURN_IF_ERROR(AllReduce(agreed, 2, DataType::kInt32, ReduceOp::kMin));
  const int32_t consistent = agreed[0];
  network_links_ = p > 1 && agreed[1] == 1;
  if (consistent != 1) {
    RW_LOG(WARNING) << "the workers' views of which of them share a host (shared-memory "
                    << "links) disagree; each counts as its own host for the choice of "
                    << "all-reduce algorithm";
  }
  topology_ = consistent == 1
                  ? HostTopology::FromHostKeys(std::vector<int>(keys.begin(), keys.end()))
                  : HostTopology::OnePerRank(p);
  return absl::OkStatus();
}

void Communicator::SetTimeout(double seconds, std::string flag) {
  std::lock_guard<std::mutex> lock(timeout_mu_);
  timeout_s_ = seconds;
  timeout_flag_ = std::move(flag);
}

absl::Status Communicator::Run(const CollectiveInfo& info, const Body& body) {
  const uint64_t seq = next_seq_++;
  progress_->CollectiveStarted();
  struct Finished {
    Progress* progress;
    ~Finished() { progress->CollectiveFinished(); }
  } finished{progress_};
  if (transport_->aborted()) return transport_->status();
  if (world_size() == 1) return body(CollectiveContext{transport_, seq, info});
  double timeout_s;
  {
    std::lock_guard<std::mutex> lock(timeout_mu_);
    timeout_s = timeout_s_;
  }
  CollectiveContext ctx;
  ctx.transport = transport_;
  ctx.seq = seq;
  ctx.info = info;
  ctx.deadline = Deadline::AfterSeconds(timeout_s);
  ctx.segment_elems = SegmentElems(info.dtype);
  Timeline* timeline = Timeline::Active();
  const absl::Status status =
      timeline == nullptr ? body(ctx) : RunRecorded(timeline, info, seq, body, ctx);
  if (status.ok()) return status;
  if (!transport_->aborted()) {
    const std::string what =
        absl::StrCat(info.ToString(), " (collective #", seq, ") on ", transport_->self_name());
    if (absl::IsDeadlineExceeded(status)) {
      std::string timeout_flag;
      {
        std::lock_guard<std::mutex> lock(timeout_mu_);
        timeout_flag = timeout_flag_;
      }
      transport_->Abort(absl::DeadlineExceededError(
          absl::StrCat(what, " timed out after ", timeout_s, " s: ", status.message(), "; set ",
                       timeout_flag, " to wait longer")));
    } else {
      transport_->Abort(
          absl::Status(status.code(), absl::StrCat(what, " failed: ", status.message())));
    }
  }
  return transport_->status();
}

const std::string& Communicator::LinkKinds() {
  if (!link_kinds_.empty()) return link_kinds_;
  std::set<std::string> kinds;
  for (int peer = 0; peer < world_size(); ++peer) {
    if (peer != rank() && transport_->link(peer) != nullptr) {
      kinds.insert(std::string(transport_->link(peer)->kind()));
    }
  }
  link_kinds_ = absl::StrJoin(kinds, "+");
  return link_kinds_;
}

absl::Status Communicator::RunRecorded(Timeline* timeline, const CollectiveInfo& info, uint64_t seq,
                                       const Body& body, const CollectiveContext& ctx) {
  Transport::WaitLog waits;
  transport_->set_wait_log(&waits);
  const int64_t start_us = Timeline::NowMicros();
  const absl::Status status = body(ctx);
  const int64_t end_us = Timeline::NowMicros();
  transport_->set_wait_log(nullptr);
  TimelineArgs args;
  args.Add("seq", static_cast<int64_t>(seq))
      .Add("bytes", static_cast<int64_t>(info.count * DataTypeSize(info.dtype)))
      .Add("dtype", DataTypeName(info.dtype));
  if (info.kind == CollectiveKind::kAllReduce) {
    args.Add("algorithm", AllReduceAlgorithmName(last_allreduce_));
  } else if (info.kind == CollectiveKind::kAllGather) {
    args.Add("algorithm", last_allgather_hierarchical_ ? "hierarchical" : "ring");
  }
  args.Add("links", LinkKinds()).Add("waited_us", waits.waited_us);
  if (waits.longest_peer >= 0)
    args.Add("waited_longest_for", transport_->PeerName(waits.longest_peer));
  if (!status.ok()) args.Add("error", status.message());
  timeline->Complete("collective", std::string(CollectiveKindName(info.kind)), start_us, end_us,
                     args.Take());
  // The longest wait, as a span of its own under the collective's.
  if (waits.longest_peer >= 0 && waits.longest_us >= kTimelineWaitMinUs) {
    timeline->Complete("wait", absl::StrCat("wait for ", transport_->PeerName(waits.longest_peer)),
                       waits.longest_start_us, waits.longest_start_us + waits.longest_us,
                       TimelineArgs()
                           .Add("peer", waits.longest_peer)
                           .Add("seq", static_cast<int64_t>(seq))
                           .Take());
  }
  return status;
}

absl::Status Communicator::AllReduce(void* data, size_t count, DataType dtype, ReduceOp op) {
  CollectiveInfo info{CollectiveKind::kAllReduce, dtype, op, count, -1};
  return Run(info, [&](const CollectiveContext& ctx) -> absl::Status {
    if (world_size() == 1 || count == 0) return absl::OkStatus();
    const size_t bytes = count * DataTypeSize(dtype);
    last_allreduce_ = ChooseAllReduce(bytes, world_size(), max_frame_bytes_, options_, &topology_,
                                      network_links_);
    if (last_allreduce_ == AllReduceAlgorithm::kRecursiveDoubling) {
      return doubling_.Run(ctx, static_cast<uint8_t*>(data));
    }
    if (last_allreduce_ == AllReduceAlgorithm::kHierarchical) {
      return hierarchical_.Run(ctx, topology_, static_cast<uint8_t*>(data), count,
                               op == ReduceOp::kMean);
    }
    return ring_.Run(ctx, static_cast<uint8_t*>(data), BalancedChunks(count, world_size()),
                     RingSteps(rank(), world_size(), true, true, op == ReduceOp::kMean));
  });
}

absl::Status Communicator::Broadcast(void* data, size_t count, DataType dtype, int root) {
  CollectiveInfo info{CollectiveKind::kBroadcast, dtype, ReduceOp::kSum, count, root};
  return Run(info, [&](const CollectiveContext& ctx) -> absl::Status {
    if (root < 0 || root >= world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " is not a rank (world size ", world_size(), ")"));
    }
    if (world_size() == 1 || count == 0) return absl::OkStatus();
    CrashPoint("broadcast");
    const size_t bytes = count * DataTypeSize(dtype);
    const TreeNode node = ChooseBroadcast(bytes, world_size(), options_) == BroadcastShape::kChain
                              ? ChainNode(rank(), world_size(), root)
                              : BinomialTreeNode(rank(), world_size(), root);
    return broadcast_.Run(ctx, node, static_cast<uint8_t*>(data));
  });
}

absl::Status Communicator::AllGather(const void* input, void* output, size_t count,
                                     DataType dtype) {
  CollectiveInfo info{CollectiveKind::kAllGather, dtype, ReduceOp::kSum, count, -1};
  return Run(info, [&](const CollectiveContext& ctx) -> absl::Status {
    const size_t element = DataTypeSize(dtype);
    uint8_t* out = static_cast<uint8_t*>(output);
    uint8_t* mine = out + static_cast<size_t>(rank()) * count * element;
    if (count > 0 && mine != input) std::memmove(mine, input, count * element);
    last_allgather_hierarchical_ = false;
    if (world_size() == 1 || count == 0) return absl::OkStatus();
    const AllReduceAlgorithm forced = options_.allreduce_algorithm;
    if (topology_.layered() && topology_.world_size() == world_size() &&
        (forced == AllReduceAlgorithm::kAuto || forced == AllReduceAlgorithm::kHierarchical)) {
      last_allgather_hierarchical_ = true;
      return hierarchical_gather_.Run(ctx, topology_, out, count);
    }
    return ring_.Run(ctx, out, EqualChunks(count, world_size()),
                     RingSteps(rank(), world_size(), false, true, false));
  });
}

absl::Status Communicator::ReduceScatter(const void* input, void* output, size_t count,
                                         DataType dtype, ReduceOp op) {
  CollectiveInfo info{CollectiveKind::kReduceScatter, dtype, op, count, -1};
  return Run(info, [&](const CollectiveContext& ctx) -> absl::Status {
    const size_t element = DataTypeSize(dtype);
    const size_t total = count * static_cast<size_t>(world_size()) * element;
    scratch_.resize(total);
    if (total > 0) std::memcpy(scratch_.data(), input, total);
    if (world_size() > 1 && count > 0) {
      absl::Status status =
          ring_.Run(ctx, scratch_.data(), EqualChunks(count, world_size()),
                    RingSteps(rank(), world_size(), true, false, op == ReduceOp::kMean));
      if (!status.ok()) return status;
    }
    if (count > 0) {
      std::memcpy(output, scratch_.data() + static_cast<size_t>(rank()) * count * element,
                  count * element);
    }
    return absl::OkStatus();
  });
}

absl::Status Communicator::Barrier() {
  CollectiveInfo info{CollectiveKind::kBarrier, DataType::kInt32, ReduceOp::kSum, 0, -1};
  return Run(info, [&](const CollectiveContext& ctx) -> absl::Status {
    if (world_size() == 1) return absl::OkStatus();
    return barrier_.Run(ctx);
  });
}

}  // namespace ringwork
