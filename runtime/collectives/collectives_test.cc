// Every collective against analytic expectations, one thread per rank over the
// in-memory transport: world sizes 1, 2, 3, 4, 7; element counts 0, 1, p-1, p+1,
// primes and several MiB; every dtype and reduction; every algorithm.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "observability/timeline.h"
#include "runtime/collectives/communicator.h"
#include "runtime/collectives/expectations.h"
#include "runtime/transport/in_memory_link.h"
#include "testing/rank_threads.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

const int kWorlds[] = {1, 2, 3, 4, 7};
const DataType kDtypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                            DataType::kInt32, DataType::kInt64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct};

std::vector<size_t> Counts(int p) {
  return {0, 1, size_t(p > 1 ? p - 1 : 2), size_t(p + 1), 97, 1009};
}

// The checker every test below relies on: it must see each element that differs.
TEST_CASE("CountWrong counts the elements that differ", "[collectives]") {
  const std::vector<float> want = {1.f, 2.f, 3.f, 4.f, 5.f};
  std::vector<float> got = want;
  CHECK(CountWrong(DataType::kFloat32, got.data(), want.data(), got.size()) == 0);
  CHECK(CountWrong(DataType::kFloat32, got.data(), want.data(), 0) == 0);
  got[0] = -1.f;
  got[4] = 5.5f;
  CHECK(CountWrong(DataType::kFloat32, got.data(), want.data(), got.size()) == 2);
  CHECK(CountWrong(DataType::kFloat32, got.data(), want.data(), 4) == 1);
  const std::vector<double> zero = {0.0};
  const std::vector<double> negative_zero = {-0.0};  // Equal as numbers, not as bits.
  CHECK(CountWrong(DataType::kFloat64, negative_zero.data(), zero.data(), 1) == 1);
}

// Runs `body(rank, comm, failures)` on every rank of a fresh in-memory world and
// CHECKs that every rank returned OK with no recorded failures.
void RunWorld(
    int p, const CollectiveOptions& options,
    const std::function<absl::Status(int, Communicator&, std::vector<std::string>&)>& body) {
  InMemoryNetwork network(p);
  std::vector<std::vector<std::string>> failures(p);
  auto results = RunOnRanks(p, [&](int rank) {
    Communicator comm(network.transport(rank), options);
    return body(rank, comm, failures[rank]);
  });
  for (int r = 0; r < p; ++r) {
    INFO("world " << p << " rank " << r);
    CHECK(results[r].ok());
    if (!results[r].ok()) UNSCOPED_INFO(results[r].message());
    CHECK(failures[r].empty());
    for (size_t i = 0; i < failures[r].size() && i < 5; ++i) UNSCOPED_INFO(failures[r][i]);
  }
}

absl::Status SweepAllReduce(int rank, Communicator& comm, std::vector<std::string>& failures) {
  const int p = comm.world_size();
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      for (size_t n : Counts(p)) {
        std::vector<uint8_t> data(n * DataTypeSize(dtype) + 1);
        FillContribution(dtype, op, data.data(), n, rank);
        absl::Status st = comm.AllReduce(data.data(), n, dtype, op);
        if (!st.ok()) return st;
        const auto want = ExpectedAllReduce(dtype, op, n, p);
        const size_t wrong = CountWrong(dtype, data.data(), want.data(), n);
        if (wrong > 0) {
          failures.push_back(absl::StrCat("allreduce ", DataTypeName(dtype), " ", ReduceOpName(op),
                                          " n=", n, ": ", wrong, " wrong, algorithm ",
                                          AllReduceAlgorithmName(comm.last_allreduce_algorithm())));
        }
      }
    }
  }
  return absl::OkStatus();
}

TEST_CASE("all-reduce: every world, size, dtype and op, each algorithm", "[allreduce]") {
  for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kRing,
                                       AllReduceAlgorithm::kRecursiveDoubling}) {
    for (int p : kWorlds) {
      CollectiveOptions options;
      options.allreduce_algorithm = algorithm;
      options.segment_bytes = 64;  // Many segments: exercises the pipeline.
      INFO("algorithm " << AllReduceAlgorithmName(algorithm) << " world " << p);
      RunWorld(p, options, SweepAllReduce);
    }
  }
}

// Hosts emulated over in-memory links: keys[r] names rank r's host.
TEST_CASE("hierarchical all-reduce: every layout, size, dtype and op",
          "[allreduce][hierarchical]") {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 2, 2},        // 2 hosts x 2
      {0, 0, 2, 2, 4, 4},  // 3 hosts x 2
      {0, 0, 0, 3, 3, 3},  // 2 hosts x 3
      {0, 1, 0, 1},        // 2 hosts x 2, ranks interleaved
      {0, 1, 2, 3},        // 4 hosts x 1: the ring across hosts alone
      {0, 0, 0},           // 1 host x 3: within the host alone
  };
  for (const std::vector<int>& keys : layouts) {
    const int p = static_cast<int>(keys.size());
    const HostTopology topology = HostTopology::FromHostKeys(keys);
    INFO("layout " << topology.ToString() << ", world " << p);
    CollectiveOptions options;
    options.allreduce_algorithm = AllReduceAlgorithm::kHierarchical;
    options.segment_bytes = 64;
    RunWorld(p, options, [&](int rank, Communicator& comm, std::vector<std::string>& failures) {
      comm.set_topology(topology);
      absl::Status st = SweepAllReduce(rank, comm, failures);
      if (comm.last_allreduce_algorithm() != AllReduceAlgorithm::kHierarchical) {
        failures.push_back("the forced hierarchical algorithm did not run");
      }
      return st;
    });
  }
}

TEST_CASE(
    "hierarchical all-reduce: chosen for large buffers on 2+ hosts of 2+ workers; "
    "forced on unequal hosts it falls back to the ring",
    "[allreduce][hierarchical]") {
  struct Case {
    std::vector<int> keys;
    AllReduceAlgorithm forced;
    size_t n;
    AllReduceAlgorithm expected;
  };
  const size_t large = (1 << 20) / 4, small = 16;
  const std::vector<Case> cases = {
      {{0, 0, 2, 2}, AllReduceAlgorithm::kAuto, large, AllReduceAlgorithm::kHierarchical},
      {{0, 0, 2, 2}, AllReduceAlgorithm::kAuto, small, AllReduceAlgorithm::kRecursiveDoubling},
      {{0, 1, 2, 3}, AllReduceAlgorithm::kAuto, large, AllReduceAlgorithm::kRing},
      {{0, 0, 0, 0}, AllReduceAlgorithm::kAuto, large, AllReduceAlgorithm::kRing},
      {{0, 0, 0, 3}, AllReduceAlgorithm::kHierarchical, large, AllReduceAlgorithm::kRing},
      {{0, 0, 2, 2}, AllReduceAlgorithm::kRing, large, AllReduceAlgorithm::kRing},
  };
  for (const Case& c : cases) {
    const HostTopology topology = HostTopology::FromHostKeys(c.keys);
    INFO("layout " << topology.ToString() << ", " << AllReduceAlgorithmName(c.forced) << ", " << c.n
                   << " floats");
    CollectiveOptions options;
    options.allreduce_algorithm = c.forced;
    RunWorld(static_cast<int>(c.keys.size()), options,
             [&](int rank, Communicator& comm, std::vector<std::string>& failures) {
               comm.set_topology(topology);
               std::vector<float> data(c.n);
               FillContribution(DataType::kFloat32, ReduceOp::kMean, data.data(), c.n, rank);
               absl::Status st =
                   comm.AllReduce(data.data(), c.n, DataType::kFloat32, ReduceOp::kMean);
               if (!st.ok()) return st;
               const auto want =
                   ExpectedAllReduce(DataType::kFloat32, ReduceOp::kMean, c.n, comm.world_size());
               if (size_t wrong = CountWrong(DataType::kFloat32, data.data(), want.data(), c.n)) {
                 failures.push_back(absl::StrCat(wrong, " wrong"));
               }
               if (comm.last_allreduce_algorithm() != c.expected) {
                 failures.push_back(
                     absl::StrCat("ran ", AllReduceAlgorithmName(comm.last_allreduce_algorithm()),
                                  ", expected ", AllReduceAlgorithmName(c.expected)));
               }
               return absl::OkStatus();
             });
  }
}

TEST_CASE("all-reduce of several MiB, ragged", "[allreduce]") {
  for (int p : {2, 3, 4, 7}) {
    CollectiveOptions options;
    RunWorld(p, options, [](int rank, Communicator& comm, std::vector<std::string>& failures) {
      const size_t n = (3 << 20) / 4 + 13;  // A little over 3 MiB of float32.
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
        std::vector<float> data(n);
        FillContribution(DataType::kFloat32, op, data.data(), n, rank);
        absl::Status st = comm.AllReduce(data.data(), n, DataType::kFloat32, op);
        if (!st.ok()) return st;
        const auto want = ExpectedAllReduce(DataType::kFloat32, op, n, comm.world_size());
        if (size_t wrong = CountWrong(DataType::kFloat32, data.data(), want.data(), n)) {
          failures.push_back(absl::StrCat(ReduceOpName(op), ": ", wrong, " wrong"));
        }
        if (comm.last_allreduce_algorithm() != AllReduceAlgorithm::kRing) {
          failures.push_back("a 3 MiB all-reduce should use the ring");
        }
      }
      return absl::OkStatus();
    });
  }
}

TEST_CASE("broadcast from every root, tree and chain", "[broadcast]") {
  for (size_t chain_bytes : {size_t{0}, size_t{1} << 30}) {
    for (int p : kWorlds) {
      CollectiveOptions options;
      options.segment_bytes = 128;
      options.chain_broadcast_bytes = chain_bytes;
      INFO("world " << p << " chain_broadcast_bytes " << chain_bytes);
      RunWorld(p, options, [](int rank, Communicator& comm, std::vector<std::string>& failures) {
        const int p = comm.world_size();
        for (DataType dtype : kDtypes) {
          for (size_t n : Counts(p)) {
            for (int root = 0; root < p; ++root) {
              std::vector<uint8_t> data(n * DataTypeSize(dtype), 0xAB);
              if (rank == root) FillContribution(dtype, ReduceOp::kSum, data.data(), n, root);
              absl::Status st = comm.Broadcast(data.data(), n, dtype, root);
              if (!st.ok()) return st;
              std::vector<uint8_t> want(n * DataTypeSize(dtype));
              FillContribution(dtype, ReduceOp::kSum, want.data(), n, root);
              if (size_t wrong = CountWrong(dtype, data.data(), want.data(), n)) {
                failures.push_back(absl::StrCat("broadcast ", DataTypeName(dtype), " n=", n,
                                                " root=", root, ": ", wrong, " wrong"));
              }
            }
          }
        }
        return absl::OkStatus();
      });
    }
  }
}

// All-gathers of every dtype and size, out of place and in place.
absl::Status SweepAllGather(int rank, Communicator& comm, std::vector<std::string>& failures) {
  const int p = comm.world_size();
  for (DataType dtype : kDtypes) {
    const size_t element = DataTypeSize(dtype);
    for (size_t n : Counts(p)) {
      std::vector<uint8_t> input(n * element);
      FillContribution(dtype, ReduceOp::kSum, input.data(), n, rank);
      std::vector<uint8_t> output(n * p * element, 0xCD);
      RW_RETURN_IF_ERROR(comm.AllGather(input.data(), output.data(), n, dtype));
      const auto want = ExpectedAllGather(dtype, n, p);
      if (size_t wrong = CountWrong(dtype, output.data(), want.data(), n * p)) {
        failures.push_back(
            absl::StrCat("allgather ", DataTypeName(dtype), " n=", n, ": ", wrong, " wrong"));
      }
      std::vector<uint8_t> in_place(n * p * element, 0xEE);
      if (n > 0) std::memcpy(in_place.data() + rank * n * element, input.data(), n * element);
      RW_RETURN_IF_ERROR(
          comm.AllGather(in_place.data() + rank * n * element, in_place.data(), n, dtype));
      if (size_t wrong = CountWrong(dtype, in_place.data(), want.data(), n * p)) {
        failures.push_back(absl::StrCat("in-place allgather ", DataTypeName(dtype), " n=", n, ": ",
                                        wrong, " wrong"));
      }
    }
  }
  return absl::OkStatus();
}

// Hosts emulated over in-memory links, as for the hierarchical all-reduce.
TEST_CASE(
    "hierarchical all-gather: every layout, size and dtype; flat where it cannot run or is forced",
    "[allgather][hierarchical]") {
  struct Case {
    std::vector<int> keys;
    AllReduceAlgorithm algorithm;
    bool hierarchical;
  };
  const std::vector<Case> cases = {
      {{0, 0, 2, 2}, AllReduceAlgorithm::kAuto, true},                 // 2 hosts x 2
      {{0, 0, 2, 2, 4, 4}, AllReduceAlgorithm::kAuto, true},           // 3 hosts x 2
      {{0, 0, 0, 3, 3, 3}, AllReduceAlgorithm::kAuto, true},           // 2 hosts x 3
      {{0, 1, 0, 1}, AllReduceAlgorithm::kHierarchical, true},         // interleaved ranks
      {{0, 1, 1, 0}, AllReduceAlgorithm::kAuto, true},                 // interleaved, not in order
      {{0, 0, 0, 3, 3, 3, 6, 6, 6}, AllReduceAlgorithm::kAuto, true},  // 3 hosts x 3
      {{0, 0, 2, 2}, AllReduceAlgorithm::kRecursiveDoubling, false},   // the other flat one
      {{0, 0, 2, 2}, AllReduceAlgorithm::kRing, false},                // a flat algorithm forced
      {{0, 0, 0, 3}, AllReduceAlgorithm::kAuto, false},                // unequal hosts
      {{0, 1, 2, 3}, AllReduceAlgorithm::kAuto, false},                // one rank per host
      {{0, 0, 0}, AllReduceAlgorithm::kAuto, false},                   // one host
  };
  for (const Case& c : cases) {
    const int p = static_cast<int>(c.keys.size());
    const HostTopology topology = HostTopology::FromHostKeys(c.keys);
    INFO("layout " << topology.ToString() << ", algorithm " << AllReduceAlgorithmName(c.algorithm));
    CollectiveOptions options;
    options.allreduce_algorithm = c.algorithm;
    options.segment_bytes = 64;  // Many segments per block.
    RunWorld(p, options, [&](int rank, Communicator& comm, std::vector<std::string>& failures) {
      comm.set_topology(topology);
      RW_RETURN_IF_ERROR(SweepAllGather(rank, comm, failures));
      if (comm.last_allgather_hierarchical() != c.hierarchical) {
        failures.push_back(absl::StrCat("hierarchical: ", comm.last_allgather_hierarchical()));
      }
      return absl::OkStatus();
    });
  }
}

// Each phase of a hierarchical collective is a span of its own ("collective
// phase"), inside its collective's span on the same thread, so a timeline shows
// which phase a slow one spent its time in. Phases that do not run (one worker
// per host: nothing within hosts) record nothing.
struct PhaseSpan {
  std::string name, parent;  // parent: the collective span around it on its thread
  int64_t bytes;             // the "bytes" arg, or -1
};

std::vector<PhaseSpan> HierarchicalPhases(const std::vector<int>& host_keys) {
  const std::string dir = FreshTestDir("hierarchical_timeline");
  Timeline timeline({});
  REQUIRE(Timeline::Install(&timeline));
  const HostTopology topology = HostTopology::FromHostKeys(host_keys);
  CollectiveOptions options;
  options.allreduce_algorithm = AllReduceAlgorithm::kHierarchical;
  const int p = static_cast<int>(host_keys.size());
  RunWorld(p, options, [&](int rank, Communicator& comm, std::vector<std::string>& failures) {
    comm.set_topology(topology);
    std::vector<float> data(1000, static_cast<float>(rank));
    RW_RETURN_IF_ERROR(
        comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum));
    if (data[999] != p * (p - 1) / 2.0f) failures.push_back(absl::StrCat("sum ", data[999]));
    std::vector<float> mine(10, static_cast<float>(rank)), all(10 * p);
    return comm.AllGather(mine.data(), all.data(), mine.size(), DataType::kFloat32);
  });
  Timeline::Uninstall(&timeline);
  REQUIRE(timeline.WriteJson(dir + "/timeline.json", {}).ok());
  std::ifstream in(dir + "/timeline.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  auto end = [](const nlohmann::json& e) {
    return e["ts"].get<int64_t>() + e["dur"].get<int64_t>();
  };
  std::vector<PhaseSpan> phases;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "collective phase") continue;
    PhaseSpan phase{e["name"], "", -1};
    if (e.contains("args")) phase.bytes = e["args"].value("bytes", int64_t{-1});
    for (const auto& c : trace["traceEvents"]) {
      if (c.value("ph", "") == "X" && c.value("cat", "") == "collective" && c["tid"] == e["tid"] &&
          c["ts"] <= e["ts"] && end(c) >= end(e)) {
        phase.parent = c["name"];
      }
    }
    phases.push_back(phase);
  }
  return phases;
}

int Count(const std::vector<PhaseSpan>& phases, const std::string& name,
          const std::string& parent) {
  int n = 0;
  for (const PhaseSpan& phase : phases) n += phase.name == name && phase.parent == parent;
  return n;
}

TEST_CASE("hierarchical collectives record each phase in the timeline",
          "[hierarchical][timeline]") {
  SECTION("2 hosts x 2 workers: every phase, once per rank, inside its collective") {
    const std::vector<PhaseSpan> phases = HierarchicalPhases({0, 0, 2, 2});
    CHECK(phases.size() == 20);
    CHECK(Count(phases, "within the host: reduce-scatter", "allreduce") == 4);
    CHECK(Count(phases, "across hosts: all-reduce", "allreduce") == 4);
    CHECK(Count(phases, "within the host: all-gather", "allreduce") == 4);
    CHECK(Count(phases, "across hosts: all-gather", "allgather") == 4);
    CHECK(Count(phases, "within the host: all-gather", "allgather") == 4);
    for (const PhaseSpan& phase : phases) {
      INFO(phase.name);
      // 1000 floats, half of them each local rank's to all-reduce across hosts.
      CHECK(phase.bytes == (phase.name == "across hosts: all-reduce" ? 2000 : -1));
    }
  }
  SECTION("4 hosts x 1 worker: only the phases across hosts") {
    const std::vector<PhaseSpan> phases = HierarchicalPhases({0, 1, 2, 3});
    CHECK(phases.size() == 4);
    CHECK(Count(phases, "across hosts: all-reduce", "allreduce") == 4);
  }
}

TEST_CASE("all-gather and reduce-scatter", "[allgather][reducescatter]") {
  for (int p : kWorlds) {
    CollectiveOptions options;
    options.segment_bytes = 96;
    INFO("world " << p);
    RunWorld(p, options, [](int rank, Communicator& comm, std::vector<std::string>& failures) {
      const int p = comm.world_size();
      RW_RETURN_IF_ERROR(SweepAllGather(rank, comm, failures));
      for (DataType dtype : kDtypes) {
        const size_t element = DataTypeSize(dtype);
        for (size_t n : Counts(p)) {
          // Reduce-scatter: block b of rank r's input holds elements b*n.. of its
          // all-reduce contribution, so block `rank` of the all-reduce is expected.
          for (ReduceOp op : kOps) {
            std::vector<uint8_t> blocks(n * p * element);
            FillContribution(dtype, op, blocks.data(), n * p, rank);
            std::vector<uint8_t> mine(n * element + 1, 0x11);
            RW_RETURN_IF_ERROR(comm.ReduceScatter(blocks.data(), mine.data(), n, dtype, op));
            const auto full = ExpectedAllReduce(dtype, op, n * p, p);
            if (size_t wrong =
                    CountWrong(dtype, mine.data(), full.data() + rank * n * element, n)) {
              failures.push_back(absl::StrCat("reducescatter ", DataTypeName(dtype), " ",
                                              ReduceOpName(op), " n=", n, ": ", wrong, " wrong"));
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }
}

TEST_CASE("no rank leaves a barrier before every rank has entered it", "[barrier]") {
  for (int p : kWorlds) {
    InMemoryNetwork network(p);
    using Clock = std::chrono::steady_clock;
    std::vector<Clock::time_point> entered(p), left(p);
    auto results = RunOnRanks(p, [&](int rank) {
      Communicator comm(network.transport(rank), CollectiveOptions());
      std::this_thread::sleep_for(std::chrono::milliseconds(15 * rank));
      entered[rank] = Clock::now();
      absl::Status st = comm.Barrier();
      left[rank] = Clock::now();
      return st;
    });
    const auto last_entry = *std::max_element(entered.begin(), entered.end());
    for (int r = 0; r < p; ++r) {
      INFO("world " << p << " rank " << r);
      CHECK(results[r].ok());
      CHECK(left[r] >= last_entry);
    }
  }
}

TEST_CASE("a long mixed sequence keeps ranks in step", "[sequence]") {
  RunWorld(4, CollectiveOptions(),
           [](int rank, Communicator& comm, std::vector<std::string>& failures) {
             for (int i = 0; i < 200; ++i) {
               const size_t n = 1 + (i * 37) % 300;
               std::vector<int64_t> data(n);
               FillContribution(DataType::kInt64, ReduceOp::kSum, data.data(), n, rank);
               absl::Status st = comm.AllReduce(data.data(), n, DataType::kInt64, ReduceOp::kSum);
               if (!st.ok()) return st;
               const auto want = ExpectedAllReduce(DataType::kInt64, ReduceOp::kSum, n, 4);
               if (CountWrong(DataType::kInt64, data.data(), want.data(), n) > 0) {
                 failures.push_back(absl::StrCat("iteration ", i));
               }
               if (i % 10 == 0) {
                 st = comm.Barrier();
                 if (!st.ok()) return st;
               }
             }
             if (comm.collectives_started() != 220) failures.push_back("sequence numbers");
             return absl::OkStatus();
           });
}

}  // namespace
}  // namespace ringwork
