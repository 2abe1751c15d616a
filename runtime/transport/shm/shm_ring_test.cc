// The shared-memory ring protocol on ordinary memory: a producer thread and a
// consumer thread stream frames of every size (empty, odd, larger than the ring)
// through a small ring and every byte arrives in order.
#include "runtime/transport/shm/shm_ring.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/transport/link.h"

namespace ringwork {
namespace {

struct Shared {
  alignas(64) RingHeader header{};
  std::vector<uint8_t> data;
  DoorbellWord bell_word;
};

void CopySink(void* context, size_t offset, const void* src, size_t bytes) {
  std::memcpy(static_cast<uint8_t*>(context) + offset, src, bytes);
}

absl::Status Check(const FrameHeader& got, const Request& expected) {
  if (!(got.key == expected.key) || got.payload_bytes != expected.bytes ||
      got.info != expected.info) {
    return absl::FailedPreconditionError("mismatch " + got.key.ToString());
  }
  return absl::OkStatus();
}

TEST_CASE("frames of every size stream through a small ring", "[shm_ring]") {
  constexpr size_t kCapacity = 4096;
  Shared shared;
  shared.data.resize(kCapacity);
  Doorbell bell(&shared.bell_word);
  std::vector<size_t> sizes = {0, 4, 8, 12, 64, 4000, 4096, 4104, 10000, 3, 1 << 16, 20};
  for (int i = 0; i < 200; ++i) sizes.push_back((i * 7919) % 9000);
  CollectiveInfo info{CollectiveKind::kAllGather, DataType::kBFloat16, ReduceOp::kSum, 1, -1};

  std::vector<std::vector<uint8_t>> sent(sizes.size()), received(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    sizes[i] -= sizes[i] % 2;  // Whole bfloat16 elements.
    sent[i].resize(sizes[i]);
    for (size_t b = 0; b < sizes[i]; ++b) sent[i][b] = static_cast<uint8_t>(i * 31 + b);
    received[i].assign(sizes[i], 0xEE);
  }
  bool all_sent = false;  // Checked on the main thread: Catch2 is single-threaded.
  std::thread producer_thread([&] {
    ShmRingProducer producer(&shared.header, shared.data.data(), kCapacity, 1, &bell, 1000);
    std::vector<Request> sends(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      sends[i].PrepareSend(0, FrameKey{7, 0, static_cast<uint32_t>(i)}, info, sent[i].data(),
                           sizes[i]);
      producer.Post(&sends[i]);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!producer.idle() && std::chrono::steady_clock::now() < deadline) {
      if (!producer.Poll()) std::this_thread::yield();
    }
    all_sent = true;
    for (auto& s : sends) all_sent = all_sent && s.is_done();
  });
  ShmRingConsumer consumer(&shared.header, shared.data.data(), kCapacity, 1 << 20, &bell);
  std::vector<Request> recvs(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    recvs[i].PrepareRecv(1, FrameKey{7, 0, static_cast<uint32_t>(i)}, info, sizes[i],
                         RecvSink{&CopySink, received[i].data()});
    consumer.Post(&recvs[i]);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!consumer.idle() && std::chrono::steady_clock::now() < deadline) {
    auto moved = consumer.Poll(Check);
    REQUIRE(moved.ok());
    if (!*moved) std::this_thread::yield();
  }
  producer_thread.join();
  CHECK(all_sent);
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("frame " << i << " of " << sizes[i] << " bytes");
    CHECK(recvs[i].is_done());
    CHECK(received[i] == sent[i]);
  }
  CHECK(shared.header.head.load() == shared.header.tail.load());
}

TEST_CASE("a frame that is not the expected one is refused", "[shm_ring]") {
  Shared shared;
  shared.data.resize(1024);
  CollectiveInfo info{CollectiveKind::kAllReduce, DataType::kFloat32, ReduceOp::kSum, 4, -1};
  ShmRingProducer producer(&shared.header, shared.data.data(), 1024, 1, nullptr);
  float values[4] = {1, 2, 3, 4};
  Request send;
  send.PrepareSend(0, FrameKey{3, 1, 0}, info, values, sizeof(values));
  producer.Post(&send);
  producer.Poll();
  REQUIRE(send.is_done());
  ShmRingConsumer consumer(&shared.header, shared.data.data(), 1024, 1 << 20, nullptr);
  float out[4];
  Request recv;
  recv.PrepareRecv(1, FrameKey{3, 2, 0}, info, sizeof(out), RecvSink{&CopySink, out});
  consumer.Post(&recv);
  auto moved = consumer.Poll(Check);
  REQUIRE_FALSE(moved.ok());
  CHECK(std::string(moved.status().message()) == "mismatch #3 step 1 segment 0");
}

TEST_CASE("a corrupt header is refused before anything is sized from it", "[shm_ring]") {
  Shared shared;
  shared.data.assign(1024, 0x5A);
  shared.header.head.store(64);
  ShmRingConsumer consumer(&shared.header, shared.data.data(), 1024, 1 << 20, nullptr);
  uint8_t out[8];
  Request recv;
  recv.PrepareRecv(1, FrameKey{}, CollectiveInfo{}, 8, RecvSink{&CopySink, out});
  consumer.Post(&recv);
  auto moved = consumer.Poll(Check);
  REQUIRE_FALSE(moved.ok());
  CHECK(std::string(moved.status().message()).find("bad magic") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
