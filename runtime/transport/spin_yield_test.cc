// Transport::Wait's spin gives the core away: two ranks whose threads share one
// core, both under SCHED_FIFO (which never time-slices between threads of equal
// priority), finish an exchange at once. A spin that kept the core would hold it
// for all of Options::spin_us before sleeping, and the peer it waits for could not
// run until then. This is how workers that oversubscribe a host's cores would
// spin against each other (docs/PERFORMANCE.md, measured 2026-12-05).
// Workers run under the normal scheduler, where a yield lets the other runnable
// threads on the core go first; SCHED_FIFO makes the difference all or nothing, so
// nothing here is timed closely. Skipped, with a warning, without the right to use
// SCHED_FIFO (root with CAP_SYS_NICE).
#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/transport/in_memory_link.h"

namespace ringwork {
namespace {

constexpr double kSpinUs = 5e6;  // 5 s: far beyond what the exchange needs.

struct SetupResult {
  int error = 0;  // An errno; 0: pinned and SCHED_FIFO.
  std::string what;
};

// Pins the calling thread to `cpu` and makes it SCHED_FIFO.
SetupResult ShareCoreAsFifo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
    return {err, std::string("pthread_setaffinity_np: ") + std::strerror(err)};
  }
  sched_param param{};
  param.sched_priority = 1;
  if (int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); err != 0) {
    return {err, std::string("pthread_setschedparam(SCHED_FIFO): ") + std::strerror(err)};
  }
  return {};
}

void Discard(void*, size_t, const void*, size_t) {}

TEST_CASE("a spinning wait yields its core to the peer it waits for", "[transport]") {
  const int cpu = sched_getcpu();
  if (cpu < 0) {
    WARN("skipped: sched_getcpu: " << std::strerror(errno));
    return;
  }
  Transport::Options options;
  options.spin_us = kSpinUs;
  // Before the network: a request still posted when a wait fails is failed by the
  // network's destructor, so it must outlive it.
  Request requests[2];
  InMemoryNetwork network(2, options);
  CollectiveInfo info;
  info.count = 1;
  const float payload = 1.0f;
  SetupResult setup[2];
  absl::Status result[2];
  double waited_s[2] = {0, 0};
  // Neither posts before both run SCHED_FIFO on the core (the first one sleeps
  // here, it does not spin), so whichever waits first holds the core.
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  auto rank = [&](int r) {
    setup[r] = ShareCoreAsFifo(cpu);
    {
      std::unique_lock<std::mutex> lock(mu);
      ++ready;
      cv.notify_all();
      cv.wait(lock, [&] { return ready == 2; });
    }
    if (setup[0].error != 0 || setup[1].error != 0) return;  // Both wrote before the barrier.
    Request& request = requests[r];
    if (r == 0) {
      request.PrepareRecv(1, FrameKey{1, 0, 0}, info, sizeof(payload), RecvSink{&Discard, nullptr});
      network.transport(0)->PostRecv(&request);
    } else {
      request.PrepareSend(0, FrameKey{1, 0, 0}, info, &payload, sizeof(payload));
      network.transport(1)->PostSend(&request);
    }
    const auto start = std::chrono::steady_clock::now();
    result[r] = network.transport(r)->Wait(&request, Deadline::AfterSeconds(30));
    waited_s[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::thread receiver(rank, 0);
  std::thread sender(rank, 1);
  receiver.join();
  sender.join();
  for (int r = 0; r < 2; ++r) {
    if (setup[r].error == EPERM) {  // Not root, or no CAP_SYS_NICE / RT budget here.
      WARN("skipped: " << setup[r].what << " (run the suite as root)");
      return;
    }
  }
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << setup[r].what << " " << result[r].ToString() << ", waited "
                 << waited_s[r] << " s");
    REQUIRE(setup[r].error == 0);
    CHECK(result[r].ok());
    // Without the yield one of them spins its whole 5 s before the other runs.
    CHECK(waited_s[r] < kSpinUs * 1e-6 / 2);
  }
}

}  // namespace
}  // namespace ringwork
