// allreduce_bench: an nccl-tests-style all-reduce benchmark, run on every worker
// (under `launch`, or with TF_CONFIG on each host). Rank 0 prints one row per size:
// bytes, elements, the algorithm chosen, the average time of one all-reduce, algbw
// (bytes / time), busbw (algbw * 2(n-1)/n, comparable across world sizes) and the
// number of wrong elements, checked on every rank after every iteration.
// `--collective=allgather` times the all-gather instead (as nccl-tests: size = the
// whole output, each rank contributing 1/n of it; busbw = algbw * (n-1)/n).
//
//   launch --num_workers=2 -- bazel-bin/bench/allreduce_bench --min_bytes=4 --max_bytes=64M
//
// Method (the same in bench/peers/ for MPI and gloo, so the numbers compare): each
// iteration starts from a barrier, times one in-place all-reduce, then checks and
// restores the buffer untimed. `--runs` blocks of iterations are measured and the
// median of the blocks' averages is reported (min and max beside it), because one
// machine is noisy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/collectives/expectations.h"
#include "runtime/config/cluster_source.h"
#include "runtime/worker_runtime.h"

namespace ringwork {
namespace {

// "64M", "16K", "4" -> bytes.
absl::StatusOr<int64_t> ParseBytes(const std::string& flag, const std::string& text) {
  int64_t scale = 1;
  std::string digits = text;
  if (!digits.empty()) {
    const char unit = digits.back();
    if (unit == 'K' || unit == 'k') scale = 1 << 10;
    if (unit == 'M' || unit == 'm') scale = 1 << 20;
    if (unit == 'G' || unit == 'g') scale = 1 << 30;
    if (scale != 1) digits.pop_back();
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(digits, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", text, ": expected a size such as 4, 64K, 16M"));
  }
  return value * scale;
}

struct SizeResult {
  size_t bytes = 0;
  size_t count = 0;
  std::string algorithm;
  double median_us = 0, min_us = 0, max_us = 0;
  int64_t iterations = 0;
  int64_t wrong = 0;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The iterations of one size: `reset` (untimed), a barrier, `collective`
// (timed), then `count_wrong` (untimed); `--runs` blocks after a warm-up. Fills in
// the timing and wrong-count fields of `result` (bytes set), agreed over every rank,
// and the algorithm `algorithm` names right after the last timed collective.
absl::StatusOr<SizeResult> TimeBlocks(Communicator* comm, SizeResult result, int64_t runs,
                                      int64_t min_iters, int64_t warmup,
                                      const std::function<void()>& reset,
                                      const std::function<absl::Status()>& collective,
                                      const std::function<size_t()>& count_wrong,
                                      const std::function<std::string()>& algorithm) {
  // Enough iterations that a block lasts a while at small sizes.
  result.iterations =
      std::clamp<int64_t>((256 << 20) / static_cast<int64_t>(result.bytes), min_iters, 2000);
  std::vector<double> block_us;
  int64_t wrong = 0;
  for (int64_t run = -1; run < runs; ++run) {  // Run -1 is the warm-up.
    const int64_t iterations = run < 0 ? warmup : result.iterations;
    double total_s = 0;
    for (int64_t i = 0; i < iterations; ++i) {
      reset();
      RW_RETURN_IF_ERROR(comm->Barrier());
      const auto start = std::chrono::steady_clock::now();
      RW_RETURN_IF_ERROR(collective());
      total_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      wrong += static_cast<int64_t>(count_wrong());
    }
    if (run >= 0) block_us.push_back(total_s / iterations * 1e6);
  }
  result.algorithm = algorithm();  // Before the all-reduces below choose theirs.
  // Every rank's wrong count, summed; every rank's median, averaged; the fastest
  // and slowest block of any rank (so the median lies between them).
  std::vector<double> medians = {Median(block_us)};
  double fastest = *std::min_element(block_us.begin(), block_us.end());
  double slowest = *std::max_element(block_us.begin(), block_us.end());
  RW_RETURN_IF_ERROR(comm->AllReduce(&wrong, 1, DataType::kInt64, ReduceOp::kSum));
  RW_RETURN_IF_ERROR(comm->AllReduce(medians.data(), 1, DataType::kFloat64, ReduceOp::kMean));
  RW_RETURN_IF_ERROR(comm->AllReduce(&fastest, 1, DataType::kFloat64, ReduceOp::kMin));
  RW_RETURN_IF_ERROR(comm->AllReduce(&slowest, 1, DataType::kFloat64, ReduceOp::kMax));
  result.wrong = wrong;
  result.median_us = medians[0];
  result.min_us = fastest;
  result.max_us = slowest;
  return result;
}

absl::StatusOr<SizeResult> MeasureAllReduce(Communicator* comm, size_t bytes, int64_t runs,
                                            int64_t min_iters, int64_t warmup) {
  const DataType dtype = DataType::kFloat32;
  const ReduceOp op = ReduceOp::kSum;
  SizeResult result;
  result.count = std::max<size_t>(1, bytes / DataTypeSize(dtype));
  result.bytes = result.count * DataTypeSize(dtype);
  std::vector<uint8_t> pristine(result.bytes), data(result.bytes);
  FillContribution(dtype, op, pristine.data(), result.count, comm->rank());
  const std::vector<uint8_t> want = ExpectedAllReduce(dtype, op, result.count, comm->world_size());
  RW_ASSIGN_OR_RETURN(
      result,
      TimeBlocks(
          comm, result, runs, min_iters, warmup,
          [&] { std::memcpy(data.data(), pristine.data(), result.bytes); },
          [&] { return comm->AllReduce(data.data(), result.count, dtype, op); },
          [&] { return CountWrong(dtype, data.data(), want.data(), result.count); },
          [&] { return std::string(AllReduceAlgorithmName(comm->last_allreduce_algorithm())); }));
  return result;
}

// The all-gather of `bytes` of output in all (each rank's block 1/p of it).
absl::StatusOr<SizeResult> MeasureAllGather(Communicator* comm, size_t bytes, int64_t runs,
                                            int64_t min_iters, int64_t warmup) {
  const DataType dtype = DataType::kFloat32;
  const int p = comm->world_size();
  SizeResult result;
  const size_t per_rank = std::max<size_t>(1, bytes / DataTypeSize(dtype) / p);
  result.count = per_rank * p;
  result.bytes = result.count * DataTypeSize(dtype);
  std::vector<uint8_t> input(per_rank * DataTypeSize(dtype)), output(result.bytes);
  FillContribution(dtype, ReduceOp::kSum, input.data(), per_rank, comm->rank());
  const std::vector<uint8_t> want = ExpectedAllGather(dtype, per_rank, p);
  RW_ASSIGN_OR_RETURN(
      result,
      TimeBlocks(
          comm, result, runs, min_iters, warmup,
          [&] { std::memset(output.data(), 0xCD, output.size()); },
          [&] { return comm->AllGather(input.data(), output.data(), per_rank, dtype); },
          [&] { return CountWrong(dtype, output.data(), want.data(), result.count); },
          [&] {
            return std::string(comm->last_allgather_hierarchical() ? "hierarchical" : "ring");
          }));
  return result;
}

int Main(int argc, char** argv) {
  FlagSet flags(
      "allreduce_bench: nccl-tests-style all-reduce benchmark; run one per worker "
      "(launch --num_workers=N -- allreduce_bench)");
  ClusterSourceFlags source;
  source.Register(&flags);
  RuntimeOptions options;
  options.Register(&flags);
  std::string min_text = "4", max_text = "64M";
  int64_t factor = 4, runs = 5, iters = 20, warmup = 5;
  bool csv = false;
  std::string label, collective = "allreduce";
  flags.String("min_bytes", &min_text, "smallest size (4, 64K, 1M, ...)");
  flags.String("max_bytes", &max_text, "largest size");
  flags.Int("factor", &factor, "size multiplier from one row to the next");
  flags.Int("runs", &runs, "measured blocks per size; the median is reported");
  flags.Int("iters", &iters, "at least this many iterations per block");
  flags.Int("warmup_iters", &warmup, "untimed iterations before the blocks");
  flags.Bool("csv", &csv, "print CSV instead of the table");
  flags.String("label", &label, "name of this configuration in the CSV output");
  flags.String("collective", &collective, "allreduce or allgather");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("allreduce_bench");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  absl::Status status = options.Finish();
  if (!status.ok()) ExitWithStatus(status);
  absl::StatusOr<int64_t> min_bytes = ParseBytes("min_bytes", min_text);
  absl::StatusOr<int64_t> max_bytes = ParseBytes("max_bytes", max_text);
  if (!min_bytes.ok()) ExitWithStatus(min_bytes.status());
  if (!max_bytes.ok()) ExitWithStatus(max_bytes.status());
  if (collective != "allreduce" && collective != "allgather") {
    ExitWithStatus(absl::InvalidArgumentError(
        absl::StrCat("--collective=", collective, ": expected allreduce or allgather")));
  }
  const bool allgather = collective == "allgather";
  if (factor < 2 || runs < 1 || iters < 1 || *min_bytes < 4 || *max_bytes < *min_bytes) {
    ExitWithStatus(absl::InvalidArgumentError(
        "need --factor >= 2, --runs >= 1, --iters >= 1, 4 <= --min_bytes <= --max_bytes"));
  }
  absl::StatusOr<ClusterConfig> config = ResolveCluster(source, EnvFromProcess());
  if (!config.ok()) ExitWithStatus(config.status());
  SetLogTask(config->task().ToString());
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime = WorkerRuntime::Start(*config, options);
  if (!runtime.ok()) ExitWithStatus(runtime.status());
  (*runtime)->EndFirstStep();  // No training steps here: steady-state timeouts at once.
  Communicator* comm = (*runtime)->communicator();
  const int p = comm->world_size();
  const bool printer = comm->rank() == 0;
  if (label.empty()) label = absl::StrCat("ringwork-", options.transport_kind);
  if (printer && !csv) {
    std::printf("# ringwork %s: %d ranks, float32%s, transport %s (%s)\n",
                allgather ? "all-gather" : "all-reduce", p,
                allgather ? ", size = whole output" : " sum, in place",
                options.transport_kind.c_str(), (*runtime)->DescribeLinks().c_str());
    std::printf(
        "# time = median over %lld blocks of the block's average, averaged over the ranks "
        "(min..max: any rank's fastest and slowest block)\n",
        static_cast<long long>(runs));
    std::printf("#%11s %10s %19s %6s %11s %20s %11s %11s %7s\n", "size(B)", "count", "algorithm",
                "iters", "time(us)", "min..max(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  }
  if (printer && csv) {
    std::printf(
        "label,ranks,bytes,count,algorithm,iters,time_us,min_us,max_us,algbw_gbs,"
        "busbw_gbs,wrong\n");
  }
  int64_t total_wrong = 0;
  for (int64_t bytes = *min_bytes; bytes <= *max_bytes; bytes *= factor) {
    absl::StatusOr<SizeResult> r =
        allgather ? MeasureAllGather(comm, static_cast<size_t>(bytes), runs, iters, warmup)
                  : MeasureAllReduce(comm, static_cast<size_t>(bytes), runs, iters, warmup);
    if (!r.ok()) ExitWithStatus(r.status());
    total_wrong += r->wrong;
    const double algbw = r->bytes / (r->median_us * 1e-6) / 1e9;
    const double busbw = algbw * (allgather ? 1.0 : 2.0) * (p - 1) / p;
    if (!printer) continue;
    if (csv) {
      std::printf("%s,%d,%zu,%zu,%s,%lld,%.2f,%.2f,%.2f,%.3f,%.3f,%lld\n", label.c_str(), p,
                  r->bytes, r->count, r->algorithm.c_str(), static_cast<long long>(r->iterations),
                  r->median_us, r->min_us, r->max_us, algbw, busbw,
                  static_cast<long long>(r->wrong));
    } else {
      std::printf("%12zu %10zu %19s %6lld %11.2f %9.1f..%-9.1f %11.3f %11.3f %7lld\n", r->bytes,
                  r->count, r->algorithm.c_str(), static_cast<long long>(r->iterations),
                  r->median_us, r->min_us, r->max_us, algbw, busbw,
                  static_cast<long long>(r->wrong));
    }
    std::fflush(stdout);
  }
  status = (*runtime)->Shutdown();
  if (!status.ok()) ExitWithStatus(status);
  if (total_wrong > 0) {
    ExitWithStatus(absl::InternalError(absl::StrCat(total_wrong, " wrong elements")));
  }
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
