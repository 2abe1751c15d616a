// The strategy on in-process clusters of real workers (gRPC servers on port 0).
#include "strategy/multi_worker_mirrored_strategy.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "runtime/config/tf_config.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

Examples Numbered(int64_t n, int files) {
  Examples e;
  e.features = Tensor({n, 1});
  for (int64_t i = 0; i < n; ++i) {
    e.features[i] = static_cast<float>(i);
    e.labels.push_back(static_cast<int32_t>(i % 10));
    // Uneven files: file 0 holds half of everything.
    e.file_index.push_back(i % 2 == 0 ? 0 : static_cast<int32_t>(1 + i % files));
  }
  for (int f = 0; f <= files; ++f) e.files.push_back("f" + std::to_string(f));
  return e;
}

void CheckAllOk(const std::vector<absl::Status>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("worker " << i << ": " << results[i].message());
    CHECK(results[i].ok());
  }
}

TEST_CASE("replica counts, chief, reductions and broadcast", "[strategy]") {
  for (const char* transport : {"auto", "grpc"}) {
    INFO(transport);
    LocalCluster::Options options;
    options.num_workers = 2;
    options.chief = true;
    options.runtime.transport_kind = transport;
    CheckAllOk(LocalCluster::Run(options, [](LocalCluster::Worker& w) -> absl::Status {
      MultiWorkerMirroredStrategy& s = *w.strategy;
      if (s.num_replicas_in_sync() != 3) return absl::InternalError("replicas");
      if (s.is_chief() != (w.rank == 0)) return absl::InternalError("chief");
      float values[2] = {static_cast<float>(w.rank), 1.f};
      RW_RETURN_IF_ERROR(s.Reduce(ReduceOp::kMean, values, 2));
      if (values[0] != 1.f || values[1] != 1.f) return absl::InternalError("mean");
      Variable v;
      v.name = "v";
      v.value = Tensor({4}, {1.f * w.rank, 2, 3, 4});
      RW_RETURN_IF_ERROR(s.BroadcastVariables({&v}));
      if (v.value[0] != 0.f)
        return absl::InternalError("broadcast did not take the chief's values");
      return absl::OkStatus();
    }));
  }
}

TEST_CASE("the overlap and prefetch threads are on by default only with a core of their own",
          "[strategy]") {
  CHECK(DefaultInterOpThreads(1) == 1);
  CHECK(DefaultInterOpThreads(2) == 2);
  CHECK(DefaultInterOpThreads(16) == 2);
  CHECK(DefaultPrefetchBatches(1) == 0);
  CHECK(DefaultPrefetchBatches(2) == 2);
  // Two workers of this process on one host (localhost): restricted to one core,
  // each gets half of it; given explicitly, the setting wins.
  cpu_set_t all, one;
  REQUIRE(sched_getaffinity(0, sizeof(all), &all) == 0);
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  struct RestoreAffinity {
    cpu_set_t mask;
    ~RestoreAffinity() { sched_setaffinity(0, sizeof(mask), &mask); }
  } restore{all};                                         // Also when an assertion below fails.
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);  // Workers' threads inherit it.
  for (int explicit_threads : {0, 3}) {
    LocalCluster::Options options;
    options.num_workers = 2;
    options.strategy.inter_op_threads = explicit_threads;
    CheckAllOk(LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      const int expected = explicit_threads > 0 ? explicit_threads : 1;
      if (w.strategy->workers_on_this_host() != 2)
        return absl::InternalError("workers on this host");
      if (w.strategy->cores_per_worker() != 1) return absl::InternalError("cores per worker");
      if (w.strategy->inter_op_threads() != expected) {
        return absl::InternalError(
            absl::StrCat("inter_op_threads ", w.strategy->inter_op_threads()));
      }
      return absl::OkStatus();
    }));
  }
  REQUIRE(sched_setaffinity(0, sizeof(all), &all) == 0);
  if (CPU_COUNT(&all) >= 4 &&
      CPU_COUNT(&all) ==
          sysconf(_SC_NPROCESSORS_ONLN)) {  // Two cores per worker: the overlap thread has one.
    LocalCluster::Options options;
    options.num_workers = 2;
    CheckAllOk(LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      return w.strategy->inter_op_threads() == 2 ? absl::OkStatus()
                                                 : absl::InternalError("expected 2");
    }));
  }
}

// This machine's first IPv4 address that is up and not loopback; empty if none.
std::string NonLoopbackAddress() {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (struct ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {0};
    const auto* in = reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr);
    const bool loopback_net =
        (ntohl(in->sin_addr.s_addr) >> 24) == 127;  // 127.x on another interface.
    if (!loopback_net && inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr)
      found = text;
  }
  freeifaddrs(list);
  return found;
}

TEST_CASE("workers that share memory are on one host whatever TF_CONFIG calls it", "[strategy]") {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) {
    WARN("no non-loopback IPv4 address on this machine: not tested");
    return;
  }
  // 127.0.0.1 and this machine's other address: by TF_CONFIG two hosts, but the
  // workers map each other's shared memory, so each has half the cores.
  LocalCluster::Options options;
  options.num_workers = 2;
  options.hosts = {"127.0.0.1", address};
  CheckAllOk(LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    if (WorkersOnThisHost(w.runtime->config()) != 1)
      return absl::InternalError("expected TF_CONFIG to name 1 worker here");
    if (w.communicator()->topology().hosts() != 1) {
      return absl::InternalError(
          absl::StrCat("topology ", w.communicator()->topology().ToString()));
    }
    if (w.strategy->workers_on_this_host() != 2) {
      return absl::InternalError(
          absl::StrCat("workers on this host: ", w.strategy->workers_on_this_host()));
    }
    return absl::OkStatus();
  }));
}

TEST_CASE("workers on this host: by TF_CONFIG host, every loopback address one machine",
          "[strategy]") {
  absl::StatusOr<ClusterConfig> config = ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:2222", "127.0.0.1:2223", "10.1.2.3:2222", "10.1.2.3:2223",)"
      R"( "10.1.2.4:2222"]}, "task": {"type": "worker", "index": 0}})");
  REQUIRE(config.ok());
  CHECK(WorkersOnThisHost(*config) == 2);  // localhost and 127.0.0.1
  config = ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:2222", "127.0.0.1:2223", "10.1.2.3:2222", "10.1.2.3:2223",)"
      R"( "10.1.2.4:2222"]}, "task": {"type": "worker", "index": 3}})");
  REQUIRE(config.ok());
  CHECK(WorkersOnThisHost(*config) == 2);  // 10.1.2.3 twice
  CHECK(WorkersOnThisHost(ClusterConfig::Local("test")) == 1);
}

TEST_CASE("distributed input: global batch, DATA and FILE sharding, agreed steps", "[strategy]") {
  LocalCluster::Options options;
  options.num_workers = 3;
  CheckAllOk(LocalCluster::Run(options, [](LocalCluster::Worker& w) -> absl::Status {
    MultiWorkerMirroredStrategy& s = *w.strategy;
    Dataset data = Dataset::FromExamples(Numbered(1000, 3));
    // 100 on 3 replicas: blocks of 34, 33, 33 (the last step: 0..999 ends at 1000,
    // 10 steps of 100, every example once).
    RW_ASSIGN_OR_RETURN(DistributedDataset uneven, s.DistributeDataset(data, 100));
    if (uneven.steps_per_epoch != 10 || uneven.ExamplesAt(0, 0) != 34 ||
        uneven.ExamplesAt(2, 0) != 33 || uneven.ExamplesPerPass() != 1000) {
      return absl::InternalError(absl::StrCat("uneven: ", uneven.steps_per_epoch, " steps"));
    }
    auto it = uneven.Iterate(0);
    Batch batch;
    int64_t seen = 0;
    while (it->Next(&batch)) {
      seen += batch.size();
      const double want = batch.size() == 34 ? 34.0 * 3 / 100 : 33.0 * 3 / 100;
      if (it->gradient_weight() != want) return absl::InternalError("uneven: a weight");
    }
    if (!it->status().ok() || seen != (w.rank == 0 ? 340 : 330)) {
      return absl::InternalError(absl::StrCat("uneven: ", seen, " examples on rank ", w.rank));
    }
    auto bad = s.DistributeDataset(data, 100, AutoShardPolicy::kFile);
    if (bad.ok() || std::string(bad.status().message()).find("needs the DATA shard policy") ==
                        std::string::npos) {
      return absl::InternalError("an uneven FILE split not refused");
    }
    if (s.DistributeDataset(data, 2).ok()) return absl::InternalError("batch 2 on 3 not refused");
    // 33 full global batches and a short one of 10 (4, 3, 3 per replica).
    RW_ASSIGN_OR_RETURN(DistributedDataset d, s.DistributeDataset(data, 30));
    if (d.per_replica_batch_size != 10 || d.steps_per_epoch != 34 || d.ExamplesAt(0, 33) != 4 ||
        d.ExamplesAt(2, 33) != 3 || d.GlobalExamplesAt(33) != 10 || d.ExamplesPerPass() != 1000) {
      return absl::InternalError(
          absl::StrCat("data: ", d.per_replica_batch_size, " ", d.steps_per_epoch));
    }
    // With drop_remainder only the full ones.
    RW_ASSIGN_OR_RETURN(
        DistributedDataset full,
        s.DistributeDataset(data, 30, AutoShardPolicy::kData, 0, 2, /*drop_remainder=*/true));
    if (full.steps_per_epoch != 33 || full.ExamplesPerPass() != 990) {
      return absl::InternalError(absl::StrCat("drop_remainder: ", full.steps_per_epoch));
    }
    // FILE sharding with uneven files: every worker goes on until the largest shard
    // is done; the others take part with empty batches.
    RW_ASSIGN_OR_RETURN(DistributedDataset f,
                        s.DistributeDataset(data, 30, AutoShardPolicy::kFile));
    const int64_t local_batches = f.local.batches_per_epoch();
    int64_t most = local_batches;
    RW_RETURN_IF_ERROR(s.communicator()->AllReduce(&most, 1, DataType::kInt64, ReduceOp::kMax));
    if (most != f.steps_per_epoch || f.ExamplesPerPass() != 1000 ||
        f.ExamplesAt(w.rank, local_batches) != 0) {
      return absl::InternalError(
          absl::StrCat("file: steps ", f.steps_per_epoch, " local ", local_batches));
    }
    return absl::OkStatus();
  }));
}

TEST_CASE("distributed input: shards partition the data even when seeded by rank", "[strategy]") {
  LocalCluster::Options options;
  options.num_workers = 3;
  CheckAllOk(LocalCluster::Run(options, [](LocalCluster::Worker& w) -> absl::Status {
    MultiWorkerMirroredStrategy& s = *w.strategy;
    Dataset data = Dataset::FromExamples(Numbered(300, 3));
    // PyTorch users often seed by rank; the chief's seed must win.
    RW_ASSIGN_OR_RETURN(DistributedDataset d,
                        s.DistributeDataset(data, 30, AutoShardPolicy::kData, 7 + w.rank));
    std::vector<float> seen(300, 0.f);
    auto it = d.local.Iterate(0);
    Batch batch;
    while (it->Next(&batch)) {
      for (int64_t i = 0; i < batch.size(); ++i)
        seen[static_cast<size_t>(batch.features[i])] += 1.f;
    }
    RW_RETURN_IF_ERROR(it->status());
    RW_RETURN_IF_ERROR(s.communicator()->AllReduce(absl::MakeSpan(seen), ReduceOp::kSum));
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != 1.f)
        return absl::InternalError(absl::StrCat("example ", i, " seen ", seen[i], " times"));
    }
    return absl::OkStatus();
  }));
}

TEST_CASE("distributed input: datasets of different sizes are refused on every worker",
          "[strategy]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  auto results = LocalCluster::Run(options, [](LocalCluster::Worker& w) -> absl::Status {
    Dataset data = Dataset::FromExamples(Numbered(w.rank == 0 ? 100 : 90, 1));
    return w.strategy->DistributeDataset(data, 10).status();
  });
  for (int r = 0; r < 2; ++r) {
    INFO(results[r].message());
    CHECK(results[r].code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(results[r].message()),
               Catch::Contains("the workers' datasets differ in size (90 to 100 examples"));
  }
}

TEST_CASE("collectives use the first-step timeout until step 1 begins, then the steady one",
          "[strategy]") {
  for (bool after_first_step : {false, true}) {
    INFO("after the first step: " << after_first_step);
    LocalCluster::Options options;
    options.num_workers = 2;
    options.runtime.first_step_timeout_s = after_first_step ? 60 : 0.5;
    options.runtime.collectives.timeout_s = after_first_step ? 0.5 : 60;
    auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      MultiWorkerMirroredStrategy& s = *w.strategy;
      s.BeginStep(0);
      if (after_first_step) s.BeginStep(1);
      if (w.rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
      float value = 1;
      return s.Reduce(ReduceOp::kSum, &value, 1);
    });
    INFO(results[0].message());
    CHECK(results[0].code() == absl::StatusCode::kDeadlineExceeded);
    CHECK_THAT(std::string(results[0].message()),
               Catch::Contains(after_first_step ? "set --collective_timeout_s"
                                                : "set --first_step_timeout_s"));
    CHECK(!results[1].ok());
  }
}

TEST_CASE("a crashed worker fails the others' collectives promptly", "[strategy]") {
  LocalCluster::Options options;
  options.num_workers = 3;
  auto results = LocalCluster::Run(options, [](LocalCluster::Worker& w) -> absl::Status {
    if (w.rank == 2) {
      w.Crash();
      return absl::OkStatus();
    }
    float x = 1;
    for (int i = 0; i < 1000; ++i) RW_RETURN_IF_ERROR(w.strategy->Reduce(ReduceOp::kSum, &x, 1));
    return absl::InternalError("the collectives should have failed");
  });
  for (int r : {0, 1}) {
    INFO(results[r].message());
    // Exit 3: the closed link (UNAVAILABLE) or the crashed worker's own error
    // (ABORTED), carried by a heartbeat reply, whichever arrives first.
    CHECK(ExitCodeFor(results[r]) == kPeerFailure);
  }
}

}  // namespace
}  // namespace ringwork
