#include "runtime/transport/transport.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/logging.h"
#include "observability/timeline.h"

namespace ringwork {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

Transport::Transport(int rank, int world_size, Options options, DoorbellWord* bell_word)
    : rank_(rank),
      world_size_(world_size),
      options_(options),
      own_bell_word_(bell_word == nullptr ? std::make_unique<DoorbellWord>() : nullptr),
      bell_(bell_word != nullptr ? bell_word : own_bell_word_.get()),
      self_name_(absl::StrCat("rank ", rank)),
      links_(world_size, nullptr),
      owned_links_(world_size) {
  RW_CHECK_GE(rank, 0);
  RW_CHECK_LT(rank, world_size);
}

Transport::~Transport() {
  // Closed in order: requests still pending fail, but the links are not aborted
  // (that would tell the peers of a failure; their streams closed cleanly, and
  // their queues may be gone).
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) {
      error_ = absl::CancelledError("transport closed");
      aborted_.store(true, std::memory_order_release);
    }
  }
  FailAllPending();
}

void Transport::SetLink(int peer, std::unique_ptr<Link> link) {
  SetLink(peer, link.get());
  owned_links_[peer] = std::move(link);
}

void Transport::SetLink(int peer, Link* link) {
  RW_CHECK_NE(peer, rank_);
  RW_CHECK(peer >= 0 && peer < world_size_) << "peer " << peer;
  LinkEnv env;
  env.self_rank = rank_;
  env.self_name = self_name_;
  env.bell = &bell_;
  env.fail = [this](const absl::Status& cause) { Abort(cause); };
  link->Attach(env);
  links_[peer] = link;
}

std::string Transport::PeerName(int peer) const {
  if (peer >= 0 && peer < world_size_ && links_[peer] != nullptr) {
    return links_[peer]->peer_name();
  }
  return absl::StrCat("rank ", peer);
}

void Transport::PostSend(Request* request) {
  RW_CHECK(request->kind == Request::Kind::kSend);
  RW_CHECK(request->peer >= 0 && request->peer < world_size_ && request->peer != rank_)
      << "send to rank " << request->peer;
  if (aborted()) {
    CompleteRequest(request, status());
    return;
  }
  links_[request->peer]->PostSend(request);
}

void Transport::PostRecv(Request* request) {
  RW_CHECK(request->kind == Request::Kind::kRecv);
  RW_CHECK(request->peer >= 0 && request->peer < world_size_ && request->peer != rank_)
      << "receive from rank " << request->peer;
  if (aborted()) {
    CompleteRequest(request, status());
    return;
  }
  links_[request->peer]->PostRecv(request);
}

bool Transport::PollLinks() {
  bool progressed = false;
  for (Link* link : links_) {
    if (link != nullptr && link->Poll()) progressed = true;
  }
  return progressed;
}

namespace {

// Adds one Wait to a WaitLog when it ends (only while a log is set).
class ScopedWaitLog {
 public:
  ScopedWaitLog(Transport::WaitLog* log, int peer)
      : log_(log), peer_(peer), start_us_(log != nullptr ? Timeline::NowMicros() : 0) {}
  ~ScopedWaitLog() {
    if (log_ == nullptr) return;
    const int64_t took = Timeline::NowMicros() - start_us_;
    log_->waited_us += took;
    if (took > log_->longest_us) {
      log_->longest_us = took;
      log_->longest_start_us = start_us_;
      log_->longest_peer = peer_;
    }
  }

 private:
  Transport::WaitLog* const log_;
  const int peer_;
  const int64_t start_us_;
};

// Holds a CompletionSource borrowed for the length of one Wait (none: no-op).
class ScopedBorrow {
 public:
  explicit ScopedBorrow(CompletionSource* source) : source_(source) {
    if (source_ != nullptr) source_->Borrow();
  }
  ~ScopedBorrow() { Return(/*resume_now=*/false); }
  bool Poll() { return source_ != nullptr && source_->Poll(); }
  bool PollBlocking(absl::Duration max) { return source_ != nullptr && source_->PollBlocking(max); }
  // Before this thread waits for others' completions (failing what is pending).
  void Return(bool resume_now) {
    if (source_ != nullptr) source_->Return(resume_now);
    source_ = nullptr;
  }

 private:
  CompletionSource* source_;
};

}  // namespace

absl::Status Transport::Wait(Request* request, Deadline deadline) {
  using Clock = std::chrono::steady_clock;
  const ScopedWaitLog logged(wait_log_, request->peer);
  const auto spin = std::chrono::duration<double, std::micro>(options_.spin_us);
  auto idle_since = Clock::now();
  uint32_t polls_since_clock = 0;
  // Failing what is pending waits for gRPC's completions: give the queue back first.
  ScopedBorrow borrowed(source_);
  while (true) {
    const uint32_t seen = bell_.Observe();
    bool progressed = borrowed.Poll();
    progressed = PollLinks() || progressed;
    if (request->is_done()) {
      // A failed request is returned as is: the caller adds its context and
      // aborts. An abort from elsewhere wins, so every caller sees the first error.
      if (aborted()) {
        borrowed.Return(/*resume_now=*/true);
        FailAllPending();
        return status();
      }
      return request->status;
    }
    if (aborted()) {
      borrowed.Return(/*resume_now=*/true);
      FailAllPending();
      return status();
    }
    if (progressed) {
      polls_since_clock = 0;
      idle_since = Clock::now();
      continue;
    }
    // Reading the clock costs more than a poll; look at it every few polls.
    if (++polls_since_clock < 16) {
      CpuRelax();
      continue;
    }
    polls_since_clock = 0;
    const auto now = Clock::now();
    if (now >= deadline.when()) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out waiting to ",
                       request->kind == Request::Kind::kSend ? "send to " : "receive from ",
                       PeerName(request->peer), " (frame ", request->key.ToString(), ", ",
                       request->progress, " of ", request->bytes, " bytes moved)"));
    }
    if (now - idle_since < spin) {
      // Spinning, but politely: other runnable threads on this core (another worker
      // on an oversubscribed host, often the very peer this wait is for) go first,
      // instead of after our spin or the scheduler's time slice. With nothing else
      // runnable the yield returns at once. MPICH's nemesis yields the same way, every
      // MPIR_CVAR_POLLS_BEFORE_YIELD (1000) idle polls.
      std::this_thread::yield();
      continue;
    }
    const absl::Duration nap = deadline.RemainingOr(absl::Milliseconds(options_.max_sleep_ms));
    if (source_ != nullptr) {
      // Every link moves by the source: this thread waits in it (in epoll, woken by
      // the socket itself). An abort from elsewhere ends the links' calls, which
      // completes here too; `nap` bounds the rest.
      borrowed.PollBlocking(nap);
      continue;
    }
    bell_.Sleep(seen, nap);
  }
}

void Transport::Abort(const absl::Status& cause) {
  RW_CHECK(!cause.ok());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return;
    error_ = cause;
    aborted_.store(true, std::memory_order_release);
  }
  RW_VLOG(1) << "transport aborted: " << cause.message();
  for (Link* link : links_) {
    if (link != nullptr) link->OnAbort(cause);
  }
  bell_.Ring();
}

void Transport::FailAllPending() {
  if (pending_failed_) return;
  pending_failed_ = true;
  const absl::Status cause = status();
  const Deadline deadline = Deadline::AfterSeconds(options_.abort_drain_s);
  for (Link* link : links_) {
    if (link != nullptr) link->FailPending(cause, deadline);
  }
}

absl::Status Transport::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::string Transport::DebugString() const {
  std::string text = absl::StrCat(self_name_, " (rank ", rank_, " of ", world_size_, ")");
  if (aborted()) absl::StrAppend(&text, " aborted: ", status().message());
  for (int peer = 0; peer < world_size_; ++peer) {
    if (links_[peer] == nullptr) continue;
    absl::StrAppend(&text, "\n  ", links_[peer]->kind(), " link to ", links_[peer]->peer_name(),
                    ": ", links_[peer]->DebugString());
  }
  return text;
}

}  // namespace ringwork
