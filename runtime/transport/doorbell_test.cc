#include "runtime/transport/doorbell.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

TEST_CASE("a ring after Observe is never lost", "[doorbell]") {
  DoorbellWord word;
  Doorbell bell(&word);
  const uint32_t seen = bell.Observe();
  bell.Ring();
  const auto start = Clock::now();
  bell.Sleep(seen, absl::Seconds(5));
  CHECK(Clock::now() - start < std::chrono::milliseconds(100));
}

TEST_CASE("a sleeper wakes when rung and times out when not", "[doorbell]") {
  DoorbellWord word;
  Doorbell bell(&word);
  auto start = Clock::now();
  bell.Sleep(bell.Observe(), absl::Milliseconds(30));
  CHECK(Clock::now() - start >= std::chrono::milliseconds(25));

  std::atomic<int> flag{0};
  std::thread ringer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag = 1;
    bell.Ring();
  });
  start = Clock::now();
  while (flag.load() == 0) {
    const uint32_t seen = bell.Observe();
    if (flag.load() != 0) break;
    bell.Sleep(seen, absl::Seconds(5));
  }
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  ringer.join();
}

TEST_CASE("many rings and sleeps do not deadlock", "[doorbell]") {
  DoorbellWord word;
  Doorbell bell(&word);
  std::atomic<int> produced{0};
  constexpr int kItems = 20000;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      produced.fetch_add(1);
      bell.Ring();
    }
  });
  int consumed = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (consumed < kItems && Clock::now() < deadline) {
    const uint32_t seen = bell.Observe();
    if (produced.load() > consumed) {
      consumed = produced.load();
      continue;
    }
    bell.Sleep(seen, absl::Milliseconds(100));
  }
  producer.join();
  CHECK(consumed == kItems);
}

}  // namespace
}  // namespace ringwork
