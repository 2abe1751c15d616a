// A worker for the localhost-cluster tests: joins the ring from TF_CONFIG, runs
// every collective over a sweep of sizes, dtypes and ops, checks every element
// against the analytic expectation, and exits with the documented code. Flags let a
// test make it misbehave (die, hang, disagree) to check how its peers fail.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/collectives/expectations.h"
#include "runtime/config/cluster_source.h"
#include "runtime/worker_runtime.h"

namespace ringwork {
namespace {

struct Faults {
  int64_t die_after = -1;      // SIGKILL itself after this many collectives.
  int64_t hang_after = -1;     // Stop calling collectives (sleep) after this many.
  bool wrong_count = false;    // Call the first all-reduce with one element fewer.
  int64_t start_delay_ms = 0;  // Sleep before starting (start order tests).
  int64_t stop_after = -1;     // SIGSTOP itself after this many collectives.
  int64_t pause_after = -1;    // Sleep pause_ms once after this many collectives
  int64_t pause_ms = 0;        // (a slow step), then go on.
};

class Checker {
 public:
  Checker(Communicator* comm, const Faults& faults) : comm_(comm), faults_(faults) {}

  absl::Status Sweep(bool large) {
    const int p = comm_->world_size();
    std::vector<size_t> counts = {0, 1, size_t(p > 1 ? p - 1 : 2), size_t(p + 1), 97, 1009, 65537};
    if (large) counts.push_back((5 << 20) / 4 + 3);  // A little over 5 MiB of float32.
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                           DataType::kInt32, DataType::kInt64}) {
      for (ReduceOp op :
           {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        for (size_t n : counts) {
          if (n > 100000 && !(dtype == DataType::kFloat32 && op == ReduceOp::kSum)) continue;
          RW_RETURN_IF_ERROR(AllReduce(dtype, op, n));
        }
      }
      for (size_t n : counts) {
        RW_RETURN_IF_ERROR(Broadcast(dtype, n, static_cast<int>(n % p)));
        if (n <= 100000) RW_RETURN_IF_ERROR(AllGather(dtype, n));
      }
    }
    RW_RETURN_IF_ERROR(ReduceScatter(DataType::kFloat32, ReduceOp::kSum, 1000));
    RW_RETURN_IF_ERROR(ReduceScatter(DataType::kInt64, ReduceOp::kMax, 3));
    RW_RETURN_IF_ERROR(Step());
    return comm_->Barrier();
  }

  size_t checked() const { return checked_; }

 private:
  absl::Status Step() {
    ++done_;
    if (faults_.die_after >= 0 && done_ > faults_.die_after) {
      RW_LOG(INFO) << "fault injection: killing this worker now";
      ::kill(::getpid(), SIGKILL);
    }
    if (faults_.stop_after >= 0 && done_ == faults_.stop_after + 1) {
      RW_LOG(INFO) << "fault injection: stopping this worker (SIGSTOP)";
      ::kill(::getpid(), SIGSTOP);
    }
    if (faults_.pause_after >= 0 && done_ == faults_.pause_after + 1) {
      RW_LOG(INFO) << "fault injection: a slow step of " << faults_.pause_ms << " ms";
      std::this_thread::sleep_for(std::chrono::milliseconds(faults_.pause_ms));
    }
    if (faults_.hang_after >= 0 && done_ > faults_.hang_after) {
      RW_LOG(INFO) << "fault injection: hanging";
      std::this_thread::sleep_for(std::chrono::seconds(600));
    }
    return absl::OkStatus();
  }

  absl::Status Wrong(const std::string& what, size_t wrong) {
    return absl::InternalError(absl::StrCat(what, ": ", wrong, " wrong elements"));
  }

  absl::Status AllReduce(DataType dtype, ReduceOp op, size_t n) {
    RW_RETURN_IF_ERROR(Step());
    const int p = comm_->world_size();
    std::vector<uint8_t> data(n * DataTypeSize(dtype));
    FillContribution(dtype, op, data.data(), n, comm_->rank());
    size_t count = n;
    if (faults_.wrong_count && !wrong_count_used_ && n > 1) {
      wrong_count_used_ = true;
      count = n - 1;
    }
    RW_RETURN_IF_ERROR(comm_->AllReduce(data.data(), count, dtype, op));
    const auto want = ExpectedAllReduce(dtype, op, n, p);
    checked_ += n;
    if (size_t wrong = CountWrong(dtype, data.data(), want.data(), n)) {
      return Wrong(absl::StrCat("allreduce ", DataTypeName(dtype), " ", ReduceOpName(op), " x ", n),
                   wrong);
    }
    return absl::OkStatus();
  }

  absl::Status Broadcast(DataType dtype, size_t n, int root) {
    RW_RETURN_IF_ERROR(Step());
    std::vector<uint8_t> data(n * DataTypeSize(dtype), 0x5A);
    if (comm_->rank() == root) FillContribution(dtype, ReduceOp::kSum, data.data(), n, root);
    RW_RETURN_IF_ERROR(comm_->Broadcast(data.data(), n, dtype, root));
    std::vector<uint8_t> want(n * DataTypeSize(dtype));
    FillContribution(dtype, ReduceOp::kSum, want.data(), n, root);
    checked_ += n;
    if (size_t wrong = CountWrong(dtype, data.data(), want.data(), n)) {
      return Wrong(absl::StrCat("broadcast x ", n), wrong);
    }
    return absl::OkStatus();
  }

  absl::Status AllGather(DataType dtype, size_t n) {
    RW_RETURN_IF_ERROR(Step());
    const int p = comm_->world_size();
    std::vector<uint8_t> input(n * DataTypeSize(dtype));
    FillContribution(dtype, ReduceOp::kSum, input.data(), n, comm_->rank());
    std::vector<uint8_t> output(n * p * DataTypeSize(dtype));
    RW_RETURN_IF_ERROR(comm_->AllGather(input.data(), output.data(), n, dtype));
    const auto want = ExpectedAllGather(dtype, n, p);
    checked_ += n * p;
    if (size_t wrong = CountWrong(dtype, output.data(), want.data(), n * p)) {
      return Wrong(absl::StrCat("allgather x ", n), wrong);
    }
    return absl::OkStatus();
  }

  absl::Status ReduceScatter(DataType dtype, ReduceOp op, size_t n) {
    RW_RETURN_IF_ERROR(Step());
    const int p = comm_->world_size();
    const size_t element = DataTypeSize(dtype);
    std::vector<uint8_t> blocks(n * p * element);
    FillContribution(dtype, op, blocks.data(), n * p, comm_->rank());
    std::vector<uint8_t> mine(n * element);
    RW_RETURN_IF_ERROR(comm_->ReduceScatter(blocks.data(), mine.data(), n, dtype, op));
    const auto full = ExpectedAllReduce(dtype, op, n * p, p);
    checked_ += n;
    if (size_t wrong =
            CountWrong(dtype, mine.data(), full.data() + comm_->rank() * n * element, n)) {
      return Wrong(absl::StrCat("reducescatter x ", n), wrong);
    }
    return absl::OkStatus();
  }

  Communicator* comm_;
  Faults faults_;
  size_t checked_ = 0;
  int64_t done_ = 0;
  bool wrong_count_used_ = false;
};

int Main(int argc, char** argv) {
  FlagSet flags("collective_check_worker: runs and checks every collective");
  ClusterSourceFlags source;
  source.Register(&flags);
  RuntimeOptions options;
  options.Register(&flags);
  Faults faults;
  bool large = false;
  flags.Int("die_after", &faults.die_after, "SIGKILL itself after N collectives");
  flags.Int("hang_after", &faults.hang_after, "stop taking part after N collectives");
  flags.Bool("wrong_count", &faults.wrong_count, "disagree on the first all-reduce's size");
  flags.Int("start_delay_ms", &faults.start_delay_ms, "sleep before starting");
  flags.Int("stop_after", &faults.stop_after, "SIGSTOP itself after N collectives");
  flags.Int("pause_after", &faults.pause_after, "sleep --pause_ms once after N collectives");
  flags.Int("pause_ms", &faults.pause_ms, "how long --pause_after sleeps");
  flags.Bool("large", &large, "add a 5 MiB all-reduce");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (!args.ok()) ExitWithStatus(args.status());
  absl::Status status = options.Finish();
  if (!status.ok()) ExitWithStatus(status);
  absl::StatusOr<ClusterConfig> config = ResolveCluster(source, EnvFromProcess());
  if (!config.ok()) ExitWithStatus(config.status());
  SetLogTask(config->task().ToString());
  std::this_thread::sleep_for(std::chrono::milliseconds(faults.start_delay_ms));
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime = WorkerRuntime::Start(*config, options);
  if (!runtime.ok()) ExitWithStatus(runtime.status());
  (*runtime)->EndFirstStep();  // No training steps here: steady-state timeouts at once.
  Checker checker((*runtime)->communicator(), faults);
  status = checker.Sweep(large);
  if (!status.ok()) ExitWithStatus(status);
  RW_LOG(INFO) << "all collectives correct: " << checker.checked()
               << " elements checked; links: " << (*runtime)->DescribeLinks();
  status = (*runtime)->Shutdown();
  if (!status.ok()) ExitWithStatus(status);
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
