// Shared-memory links between ranks that are threads of one process (each with its
// own real /dev/shm segment): collectives are correct, an abort is seen by the
// peer at once, and moving data allocates nothing per segment.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>

#include "runtime/collectives/communicator.h"
#include "runtime/collectives/expectations.h"
#include "runtime/transport/shm/shm_endpoint.h"
#include "testing/rank_threads.h"

// Counts heap allocations of the whole test binary (not under AddressSanitizer,
// which replaces operator new itself).
namespace {
std::atomic<long> g_allocations{0};
}  // namespace
#if !defined(__SANITIZE_ADDRESS__)
#define RW_COUNTS_ALLOCATIONS 1
void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#endif

namespace ringwork {
namespace {

// p ranks in this process, joined by shared-memory links.
struct ShmWorld {
  explicit ShmWorld(int p, size_t ring_bytes = 1 << 20) {
    for (int r = 0; r < p; ++r) {
      auto endpoint = ShmEndpoint::Create(r, p, ring_bytes, 0x1000 + r);
      REQUIRE(endpoint.ok());
      endpoints.push_back(std::move(*endpoint));
      liveness.push_back(std::make_shared<PeerLiveness>());
    }
    for (int r = 0; r < p; ++r) {
      transports.push_back(
          std::make_unique<Transport>(r, p, Transport::Options(), endpoints[r]->bell()));
      for (int q = 0; q < p; ++q) {
        if (q != r) REQUIRE(endpoints[r]->MapPeer(q, endpoints[q]->name()).ok());
      }
    }
    for (int r = 0; r < p; ++r) {
      for (int q = 0; q < p; ++q) {
        if (q == r) continue;
        auto link = endpoints[r]->MakeLink(q, liveness[r], 4 << 20);
        link->set_peer_name("rank " + std::to_string(q));
        transports[r]->SetLink(q, std::move(link));
      }
    }
    for (auto& e : endpoints) e->Unlink();
  }
  std::vector<std::unique_ptr<ShmEndpoint>> endpoints;
  std::vector<std::shared_ptr<PeerLiveness>> liveness;
  std::vector<std::unique_ptr<Transport>> transports;
};

TEST_CASE("collectives over shared-memory links in one process", "[shm]") {
  for (int p : {2, 3}) {
    ShmWorld world(p, 64 << 10);  // A small ring: frames wrap and stream.
    std::vector<std::string> failures(p);
    auto results = RunOnRanks(p, [&](int rank) {
      Communicator comm(world.transports[rank].get(), CollectiveOptions());
      for (size_t n : {size_t{0}, size_t{1}, size_t{1009}, size_t{300001}}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          std::vector<float> data(n);
          FillContribution(DataType::kFloat32, op, data.data(), n, rank);
          absl::Status st = comm.AllReduce(data.data(), n, DataType::kFloat32, op);
          if (!st.ok()) return st;
          auto want = ExpectedAllReduce(DataType::kFloat32, op, n, p);
          if (CountWrong(DataType::kFloat32, data.data(), want.data(), n) != 0) {
            failures[rank] += "allreduce n=" + std::to_string(n) + "; ";
          }
        }
      }
      return comm.Barrier();
    });
    for (int r = 0; r < p; ++r) {
      INFO("world " << p << " rank " << r << ": " << results[r].message());
      CHECK(results[r].ok());
      CHECK(failures[r].empty());
    }
  }
}

TEST_CASE("a rank that aborts is noticed by its peer at once", "[shm]") {
  ShmWorld world(2);
  std::atomic<bool> rank1_aborted{false};
  double seconds = 0;
  auto results = RunOnRanks(2, [&](int rank) {
    CollectiveOptions options;
    options.timeout_s = 30;
    Communicator comm(world.transports[rank].get(), options);
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      world.transports[1]->Abort(absl::AbortedError("rank 1 gives up"));
      rank1_aborted = true;
      return absl::OkStatus();
    }
    std::vector<float> data(1000, 1);
    const auto start = std::chrono::steady_clock::now();
    absl::Status st = comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return st;
  });
  INFO(results[0].message());
  // Its cause crossed the shared memory, root cause first, with its code.
  CHECK(absl::IsAborted(results[0]));
  CHECK(std::string(results[0].message())
            .find("rank 1 gives up (reported by rank 1, which closed "
                  "its connection") == 0);
  CHECK(seconds < 2);
}

TEST_CASE("a peer's segment is never remapped under a live link", "[shm]") {
  ShmWorld world(2);
  auto stranger = ShmEndpoint::Create(1, 2, 1 << 20, 0x2001);
  REQUIRE(stranger.ok());
  // Before a link exists (a restart during startup) the same name is a no-op and
  // another is mapped; once linked, another name is refused.
  CHECK(world.endpoints[0]->MapPeer(1, world.endpoints[1]->name()).ok());
  const absl::Status refused = world.endpoints[0]->MapPeer(1, (*stranger)->name());
  CHECK(absl::IsFailedPrecondition(refused));
  CHECK(std::string(refused.message()).find("in use by a live link") != std::string::npos);
  // The link still works.
  auto results = RunOnRanks(2, [&](int rank) {
    Communicator comm(world.transports[rank].get(), CollectiveOptions());
    std::vector<float> data(1000, 1);
    return comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
  });
  CHECK(results[0].ok());
  CHECK(results[1].ok());
  (*stranger)->Unlink();
}

// Runs `iterations` all-reduces of `n` floats with the given segment size and
// returns the heap allocations they made (all ranks together).
long AllocationsFor(ShmWorld& world, size_t segment_bytes, size_t n, int iterations) {
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::vector<float>> data(2, std::vector<float>(n, 1.0f));
  for (int r = 0; r < 2; ++r) {
    CollectiveOptions options;
    options.segment_bytes = segment_bytes;
    options.allreduce_algorithm = AllReduceAlgorithm::kRing;
    comms.push_back(std::make_unique<Communicator>(world.transports[r].get(), options));
  }
  // One warm-up call grows the request pools; then count.
  long before = 0;
  std::atomic<int> ready{0};
  RunOnRanks(2, [&](int rank) {
    absl::Status st =
        comms[rank]->AllReduce(data[rank].data(), n, DataType::kFloat32, ReduceOp::kSum);
    if (++ready == 2) before = g_allocations.load();
    while (ready.load() < 2) std::this_thread::yield();
    for (int i = 0; i < iterations && st.ok(); ++i) {
      st = comms[rank]->AllReduce(data[rank].data(), n, DataType::kFloat32, ReduceOp::kMax);
    }
    return st;
  });
  return g_allocations.load() - before;
}

TEST_CASE("moving data allocates nothing per segment", "[shm][allocations]") {
#if !defined(RW_COUNTS_ALLOCATIONS)
  SUCCEED("allocation counting is off under AddressSanitizer");
  return;
#endif
  ShmWorld world(2);
  const size_t n = 1 << 20;                                          // 4 MiB of floats.
  const long few_segments = AllocationsFor(world, 1 << 20, n, 20);   // 4 segments
  const long many_segments = AllocationsFor(world, 4 << 10, n, 20);  // 1024 segments
  INFO("allocations: " << few_segments << " with 1 MiB segments, " << many_segments
                       << " with 4 KiB segments (20 all-reduces, 2 ranks)");
  // A constant handful per collective (step lists, thread start-up of RunOnRanks),
  // the same whether the data moves in 4 frames or in 1024.
  CHECK(many_segments <= few_segments + 8);
  CHECK(many_segments < 20 * 2 * 16);
}

}  // namespace
}  // namespace ringwork
