#include "runtime/heartbeat_monitor.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "observability/timeline.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/transport/grpc/cq_loop.h"

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

// Heartbeats sent kClockProbeGap apart at startup, for the clock offset.
constexpr int64_t kClockProbes = 8;
constexpr Clock::duration kClockProbeGap = std::chrono::milliseconds(20);

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// gRPC takes deadlines on the system clock only.
std::chrono::system_clock::time_point SystemIn(Clock::duration d) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
}

Clock::duration FromSeconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

struct HeartbeatMonitor::PeerState {
  std::unique_ptr<proto::Worker::Stub> stub;
  Clock::time_point last_reply;
  Clock::time_point next_send;
  bool outstanding = false;
  std::string last_error = "none (calls went unanswered)";
  int64_t step = -1;
  uint64_t collectives_started = 0;
  int clock_probes_left = 0;  // Quick heartbeats still to send, for the clock offset.
};

struct HeartbeatMonitor::Call : public CqTag {
  explicit Call(HeartbeatMonitor* monitor) : monitor(monitor) {}
  void OnEvent(bool) override {
    received_us = Timeline::NowMicros();
    monitor->Completed(this);
  }
  HeartbeatMonitor* monitor;
  int peer = 0;
  int64_t sent_us = 0;      // Timeline::NowMicros() when the call started.
  int64_t received_us = 0;  // ... and when its reply was delivered.
  grpc::ClientContext context;
  proto::HeartbeatResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::HeartbeatResponse>> reader;
};

HeartbeatMonitor::HeartbeatMonitor(
    HeartbeatOptions options, int rank, uint64_t incarnation, std::string self_name,
    std::vector<Peer> peers, const Progress* progress, grpc::CompletionQueue* cq,
    std::function<void(int failed_rank, const absl::Status&)> on_failure)
    : options_(options),
      rank_(rank),
      incarnation_(incarnation),
      self_name_(std::move(self_name)),
      peers_(std::move(peers)),
      progress_(progress),
      cq_(cq),
      on_failure_(std::move(on_failure)),
      offsets_(peers_.size()) {}

HeartbeatMonitor::~HeartbeatMonitor() { Stop(); }

void HeartbeatMonitor::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "rw-heartbeat");
    Loop();
  });
}

void HeartbeatMonitor::Completed(Call* call) {
  // Notified under the lock: once the thread has taken the last call, Stop may
  // return and the monitor go away.
  std::lock_guard<std::mutex> lock(done_mu_);
  done_.push_back(call);
  done_cv_.notify_all();
}

void HeartbeatMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    stop_.store(true);
  }
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeartbeatMonitor::Loop() {
  const Clock::duration interval = FromSeconds(options_.interval_s);
  const double budget_s = options_.interval_s * options_.misses;
  const Clock::duration budget = FromSeconds(budget_s);
  const Clock::duration tick = std::min(FromSeconds(0.1), interval);
  std::vector<PeerState> state(peers_.size());
  Clock::time_point now = Clock::now();
  for (size_t i = 0; i < peers_.size(); ++i) {
    state[i].stub = proto::Worker::NewStub(peers_[i].channel);
    state[i].last_reply = now;
    state[i].next_send = now;
    // Timelines put every task on the chief's clock: only the chief is probed.
    state[i].clock_probes_left = peers_[i].rank == 0 ? kClockProbes : 0;
  }
  std::vector<Call*> outstanding;
  bool failed = false;
  uint64_t stalled_seq = ~0ull;
  int stall_reports = 0;
  Clock::time_point last_tick = now;

  auto fail = [&](int failed_rank, const absl::Status& status) {
    failed = true;
    RW_LOG(ERROR) << status.message();
    on_failure_(failed_rank, status);
  };

  while (!stop_.load() && !failed) {
    now = Clock::now();
    // This process itself was stopped (or starved) for longer than the budget:
    // silence from the peers says nothing about them.
    if (now - last_tick > budget) {
      RW_LOG(WARNING) << "the heartbeat thread did not run for "
                      << absl::StrFormat("%.1f", Seconds(now - last_tick))
                      << " s (was this process stopped?); restarting the peers' clocks";
      for (PeerState& p : state) p.last_reply = now;
    }
    last_tick = now;

    for (size_t i = 0; i < peers_.size() && !failed; ++i) {
      PeerState& p = state[i];
      if (now - p.last_reply > budget) {
        fail(peers_[i].rank,
             absl::UnavailableError(absl::StrCat(
                 peers_[i].name, " stopped answering heartbeats: no reply for ",
                 absl::StrFormat("%.1f", Seconds(now - p.last_reply)), " s (", options_.misses,
                 " missed at ", options_.interval_s,
                 " s intervals; --heartbeat_interval_s, --heartbeat_misses); last error: ",
                 p.last_error, "; its last reported step ", p.step, ", ", self_name_, " at step ",
                 progress_->step())));
        break;
      }
      if (!p.outstanding && now >= p.next_send) {
        auto* call = new Call(this);
        call->peer = static_cast<int>(i);
        call->context.set_deadline(SystemIn(budget));
        for (const auto& [key, value] : peers_[i].metadata) {
          call->context.AddMetadata(key, value);
        }
        proto::HeartbeatRequest request;
        request.set_from_rank(rank_);
        request.set_incarnation(incarnation_);
        call->reader = p.stub->PrepareAsyncHeartbeat(&call->context, request, cq_);
        call->sent_us = Timeline::NowMicros();
        call->reader->StartCall();
        call->reader->Finish(&call->response, &call->status, call);
        p.outstanding = true;
        // The first few heartbeats to the chief go out quickly: they estimate its
        // clock offset (for timelines) while the job starts and the cores are quiet.
        const bool probe = p.clock_probes_left > 0;
        if (probe) --p.clock_probes_left;
        p.next_send = now + (probe ? std::min(interval, kClockProbeGap) : interval);
        outstanding.push_back(call);
      }
    }
    if (failed) break;

    // The stall inspector: the collective in progress has waited long enough to
    // say which peers have not reached it.
    const double waiting = progress_->CurrentCollectiveSeconds();
    const uint64_t seq = progress_->started() - 1;
    if (waiting == 0 || seq != stalled_seq) {
      stalled_seq = seq;
      stall_reports = 0;
    }
    if (waiting > 0 && waiting >= options_.stall_warning_s * (stall_reports + 1)) {
      ++stall_reports;
      stall_reports_total_.fetch_add(1);
      std::vector<std::string> behind;
      for (size_t i = 0; i < peers_.size(); ++i) {
        if (state[i].collectives_started <= seq) {
          const uint64_t started = state[i].collectives_started;
          behind.push_back(absl::StrCat(peers_[i].name, " (",
                                        started == 0
                                            ? std::string("no collective yet")
                                            : absl::StrCat("last at collective #", started - 1),
                                        ", step ", state[i].step, ")"));
        }
      }
      RW_LOG(WARNING) << "stall: collective #" << seq << " on " << self_name_ << " (step "
                      << progress_->step() << ") has waited " << absl::StrFormat("%.0f", waiting)
                      << " s; "
                      << (behind.empty()
                              ? std::string("every peer has reached it and "
                                            "answers heartbeats: waiting for data")
                              : absl::StrCat("not there yet: ", absl::StrJoin(behind, ", ")))
                      << " (reported every --stall_warning_s=" << options_.stall_warning_s << " s)";
    }

    Clock::time_point wake = now + tick;  // Sooner when a heartbeat is due sooner.
    for (const PeerState& p : state) {
      if (!p.outstanding) wake = std::min(wake, p.next_send);
    }
    Call* call = nullptr;
    {
      std::unique_lock<std::mutex> lock(done_mu_);
      done_cv_.wait_until(lock, wake, [&] { return !done_.empty() || stop_.load(); });
      if (done_.empty()) continue;
      call = done_.front();
      done_.pop_front();
    }
    outstanding.erase(std::find(outstanding.begin(), outstanding.end(), call));
    PeerState& p = state[call->peer];
    const Peer& peer = peers_[call->peer];
    p.outstanding = false;
    if (call->status.ok()) {
      const proto::HeartbeatResponse& r = call->response;
      p.last_reply = Clock::now();
      {
        std::lock_guard<std::mutex> lock(offsets_mu_);
        offsets_[call->peer].AddSample(call->sent_us, r.steady_clock_us(), call->received_us);
      }
      p.step = r.step();
      p.collectives_started = r.collectives_started();
      if (r.incarnation() != peer.incarnation) {
        fail(peer.rank, absl::UnavailableError(
                            absl::StrCat(peer.name, " was restarted (incarnation ", r.incarnation(),
                                         ", joined as ", peer.incarnation, "): its state is lost; ",
                                         self_name_, " at step ", progress_->step())));
      } else if (r.error_code() != 0) {
        // The peer's first error, root cause first (it may name a third worker).
        fail(-1, absl::Status(static_cast<absl::StatusCode>(r.error_code()),
                              absl::StrCat(r.error_message(), " (reported by ", peer.name,
                                           " in its heartbeat reply)")));
      }
    } else {
      p.last_error = absl::StrCat("gRPC code ", static_cast<int>(call->status.error_code()), ": ",
                                  call->status.error_message());
    }
    delete call;
  }

  // Cancelled calls still complete on the queue (its loop runs until the server
  // is shut down, after this): wait for them, so none outlives the monitor.
  for (Call* call : outstanding) call->context.TryCancel();
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(done_mu_);
  while (!outstanding.empty()) {
    while (!done_.empty()) {
      Call* call = done_.front();
      done_.pop_front();
      outstanding.erase(std::find(outstanding.begin(), outstanding.end(), call));
      delete call;
    }
    if (outstanding.empty()) break;
    if (!done_cv_.wait_until(lock, give_up, [&] { return !done_.empty(); })) {
      // Left allocated: their completions may still come.
      RW_LOG(ERROR) << outstanding.size() << " heartbeat calls did not complete within 5 s of "
                    << "being cancelled";
      break;
    }
  }
}

ClockOffset HeartbeatMonitor::ClockOffsetTo(int rank) const {
  std::lock_guard<std::mutex> lock(offsets_mu_);
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].rank == rank) return offsets_[i];
  }
  return ClockOffset();
}

}  // namespace ringwork
