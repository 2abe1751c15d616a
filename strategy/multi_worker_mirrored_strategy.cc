#include "strategy/multi_worker_mirrored_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/cpu_cores.h"
#include "base/crash_points.h"
#include "base/exit_code.h"
#include "base/fnv1a.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "runtime/regroup.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "strategy/agreement.h"

namespace ringwork {

absl::StatusOr<ClusterConfig> ResolveThisTask(const StrategyOptions& options) {
  RW_ASSIGN_OR_RETURN(ClusterConfig cluster, ResolveCluster(options.cluster, EnvFromProcess()));
  SetThisProcessCluster(cluster);
  return cluster;
}
namespace {

thread_local MultiWorkerMirroredStrategy* g_current = nullptr;

// Applies the strategy's communication options to the runtime's.
RuntimeOptions WithCommunication(RuntimeOptions runtime, const CommunicationOptions& c) {
  if (c.timeout_seconds > 0) runtime.collectives.timeout_s = c.timeout_seconds;
  if (c.implementation == "ring") {
    runtime.collectives.allreduce_algorithm = AllReduceAlgorithm::kRing;
  }
  return runtime;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> MultiWorkerMirroredStrategy::Create(
    const Options& options) {
  RW_ASSIGN_OR_RETURN(ClusterConfig cluster, ResolveThisTask(options));
  return Create(cluster, options);
}

absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> MultiWorkerMirroredStrategy::Create(
    const ClusterConfig& cluster, const Options& options) {
  if (options.communication.implementation != "auto" &&
      options.communication.implementation != "ring") {
    return absl::InvalidArgumentError(absl::StrCat("communication implementation \"",
                                                   options.communication.implementation,
                                                   "\": expected auto or ring (NCCL is for GPUs)"));
  }
  RuntimeOptions runtime_options = WithCommunication(options.runtime, options.communication);
  const bool elastic =
      options.min_workers >= 1 && options.min_workers < cluster.configured_world_size();
  if (cluster.is_extra() && !elastic) {
    return absl::InvalidArgumentError(absl::StrCat(
        cluster.task().ToString(), " was added to the job (past its ",
        cluster.configured_world_size(),
        " voting workers, RINGWORK_VOTING_WORKERS): only an elastic job (--min_workers below ",
        cluster.configured_world_size(), ") lets workers in while it runs"));
  }
  runtime_options.rendezvous.elastic = elastic;
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime =
      WorkerRuntime::Start(cluster, runtime_options);
  const int running_generation = runtime.ok() ? -1 : RunningGenerationOf(runtime.status());
  if (!elastic || running_generation < 0) {
    RW_RETURN_IF_ERROR(runtime.status());
    return std::unique_ptr<MultiWorkerMirroredStrategy>(
        new MultiWorkerMirroredStrategy(std::move(*runtime), options));
  }
  // Elastic training, and the job runs already: this worker builds its model and
  // data alone (a ring of itself) and joins at the members' next step boundary.
  RW_LOG(WARNING) << runtime.status().message() << "; this worker joins it (elastic training) "
                  << "once its model is built: fit() waits for the members' next step";
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> alone =
      StartAgain(cluster.Alone(running_generation), runtime_options);
  if (!alone.ok()) return alone.status();
  auto strategy = std::unique_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(*alone), options));
  strategy->joining_generation_ = running_generation;
  return strategy;
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::unique_ptr<WorkerRuntime> runtime,
                                                         const Options& options)
    : owned_runtime_(std::move(runtime)), runtime_(owned_runtime_.get()), options_(options) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(WorkerRuntime* runtime,
                                                         const Options& options)
    : runtime_(runtime), options_(options) {}

MultiWorkerMirroredStrategy::~MultiWorkerMirroredStrategy() {
  if (g_current == this) g_current = nullptr;
}

int MultiWorkerMirroredStrategy::workers_on_this_host() const {
  // TF_CONFIG's ring, whatever the generation: a worker alone (joining) or a
  // shrunk ring must not take the cores the others (coming back) will use.
  int count = WorkersOnThisHost(runtime_->config().Configured());
  // Workers that mapped each other's shared memory share this machine, whatever
  // TF_CONFIG calls it (a name for one, an address for another).
  if (const Communicator* communicator = runtime_->communicator(); communicator != nullptr) {
    const HostTopology& topology = communicator->topology();
    const int rank = runtime_->config().rank();
    if (rank < topology.world_size()) {
      count = std::max(count, static_cast<int>(topology.members(topology.host_of(rank)).size()));
    }
  }
  return count;
}

int WorkersOnThisHost(const ClusterConfig& config) {
  if (config.local_mode() || !config.address()) return 1;
  // Every loopback address (localhost, 127.x, ::1) is this machine.
  const HostPort& self = *config.address();
  int count = 0;
  for (const RingMember& m : config.Ring()) {
    if (m.address.host == self.host || (m.address.is_loopback() && self.is_loopback())) ++count;
  }
  return std::max(1, count);
}

int DefaultInterOpThreads(int cores_per_worker) { return cores_per_worker >= 2 ? 2 : 1; }

int DefaultPrefetchBatches(int cores_per_worker) { return cores_per_worker >= 2 ? 2 : 0; }

int MultiWorkerMirroredStrategy::cores_per_worker() const {
  return CoresPerWorker(workers_on_this_host());
}

int MultiWorkerMirroredStrategy::inter_op_threads() const {
  if (options_.inter_op_threads > 0) return options_.inter_op_threads;
  return DefaultInterOpThreads(cores_per_worker());
}

MultiWorkerMirroredStrategy::Scope::Scope(MultiWorkerMirroredStrategy* strategy)
    : previous_(g_current) {
  g_current = strategy;
}

MultiWorkerMirroredStrategy::Scope::Scope(Scope&& other) noexcept
    : previous_(other.previous_), active_(other.active_) {
  other.active_ = false;
}

MultiWorkerMirroredStrategy::Scope::~Scope() {
  if (active_) g_current = previous_;
}

MultiWorkerMirroredStrategy::Scope MultiWorkerMirroredStrategy::scope() { return Scope(this); }

MultiWorkerMirroredStrategy* MultiWorkerMirroredStrategy::Current() { return g_current; }

absl::Status MultiWorkerMirroredStrategy::NotJoining() const {
  if (!joining()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "this worker started while its job ran (generation ", joining_generation_,
      ") and is alone until it joins, which Model.fit() and RunElastic (strategy/elastic_loop.h) "
      "do at the members' next step; a custom training loop joins through RunElastic"));
}

absl::Status MultiWorkerMirroredStrategy::Reduce(ReduceOp op, float* values, int64_t count) {
  RW_RETURN_IF_ERROR(NotJoining());
  return comm()->AllReduce(values, static_cast<size_t>(count), DataType::kFloat32, op);
}

absl::Status MultiWorkerMirroredStrategy::Reduce(ReduceOp op, double* values, int64_t count) {
  RW_RETURN_IF_ERROR(NotJoining());
  return comm()->AllReduce(values, static_cast<size_t>(count), DataType::kFloat64, op);
}

absl::Status MultiWorkerMirroredStrategy::BroadcastVariables(
    const std::vector<Variable*>& variables) {
  TimelineSpan span("startup", "broadcast variables");
  for (Variable* v : variables) {
    RW_RETURN_IF_ERROR(comm()->Broadcast(v->value.data(), static_cast<size_t>(v->size()),
                                         DataType::kFloat32, /*root=*/0));
  }
  return absl::OkStatus();
}

std::unique_ptr<GradientReducer> MultiWorkerMirroredStrategy::MakeGradientReducer(
    const std::vector<Variable*>& variables, bool allow_overlap) {
  GradientReducer::Options options;
  options.bytes_per_pack = options_.communication.bytes_per_pack;
  options.compression = options_.communication.compression;
  options.sparse = options_.communication.sparse_reduction;
  options.overlap = allow_overlap && inter_op_threads() >= 2;
  return std::make_unique<GradientReducer>(comm(), variables, options);
}

absl::StatusOr<DistributedDataset> MultiWorkerMirroredStrategy::DistributeDataset(
    const Dataset& dataset, int64_t global_batch_size, AutoShardPolicy policy,
    uint64_t shuffle_seed, int64_t prefetch_batches, bool drop_remainder) {
  const int replicas = num_replicas_in_sync();
  const bool uneven = global_batch_size % replicas != 0;
  if (global_batch_size < replicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("the global batch size ", global_batch_size, " is smaller than the ", replicas,
                     " replicas: each replica needs an example per step"));
  }
  if (uneven && (policy != AutoShardPolicy::kData || drop_remainder)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the global batch size ", global_batch_size, " is not a multiple of the ", replicas,
        " replicas: an uneven split (as TensorFlow's rebatching) needs the DATA shard policy "
        "without drop_remainder (this fit: ",
        AutoShardPolicyName(policy), drop_remainder ? ", drop_remainder" : "", ")"));
  }
  DistributedDataset d;
  d.global_batch_size = global_batch_size;
  d.per_replica_batch_size = global_batch_size / replicas;
  d.drop_remainder = drop_remainder;
  d.rank = rank();
  d.passes = dataset.repeat_count();
  // DATA and FILE split one common order: every worker must hold the same examples
  // and shuffle with the same seed. The chief's seed wins (a user may seed by
  // rank), and datasets of different sizes are refused instead of silently
  // overlapping. With OFF each worker reads its own data in its own order.
  // The data settings must match too: pairs (x, -x) whose MIN shows a difference.
  const int64_t settings = static_cast<int64_t>(policy) * 1000000 +
                           (dataset.repeat_count() + 1) * 2 + (drop_remainder ? 1 : 0);
  int64_t agreed[7] = {static_cast<int64_t>(shuffle_seed),
                       dataset.examples().count(),
                       -dataset.examples().count(),
                       global_batch_size,
                       -global_batch_size,
                       settings,
                       -settings};
  RW_RETURN_IF_ERROR(comm()->Broadcast(agreed, 1, DataType::kInt64, /*root=*/0));
  RW_RETURN_IF_ERROR(comm()->AllReduce(agreed + 1, 6, DataType::kInt64, ReduceOp::kMin));
  if (agreed[5] != -agreed[6]) {
    return MismatchError(absl::StrCat(
        "the workers distribute their data differently: shard policy, Repeat count or "
        "drop_remainder differ (this worker, rank ",
        rank(), ", has policy ", AutoShardPolicyName(policy), ", repeat ", dataset.repeat_count(),
        ", drop_remainder ", drop_remainder, "): every worker must make the same calls"));
  }
  if (agreed[3] != -agreed[4]) {
    return MismatchError(absl::StrCat("the workers' global batch sizes differ (", agreed[3], " to ",
                                      -agreed[4], "; this worker, rank ", rank(), ", has ",
                                      global_batch_size,
                                      "): every worker must pass the same global batch size"));
  }
  if (policy != AutoShardPolicy::kOff && agreed[1] != -agreed[2]) {
    return MismatchError(
        absl::StrCat("the workers' datasets differ in size (", agreed[1], " to ", -agreed[2],
                     " examples; this worker, rank ", rank(), ", has ", dataset.examples().count(),
                     "): every worker must load the same data set, which is then sharded"));
  }
  d.seed = static_cast<uint64_t>(agreed[0]);
  uint64_t seed = d.seed;
  if (policy == AutoShardPolicy::kOff) seed = Fnv1a64(&d.rank, sizeof(d.rank), seed ^ kFnv1aOffset);
  // The passes are counted here (StepIterator); the shard is one pass.
  Dataset one_pass = dataset.Repeat(1).Shuffle(seed);
  if (uneven) {
    // Each step's global batch in contiguous blocks that differ by at most one
    // (86, 85, 85 of 256), as after an elastic regroup.
    if (one_pass.examples_per_pass() == 0) {
      return absl::InvalidArgumentError("the dataset has no examples");
    }
    d.common = one_pass;
    RW_ASSIGN_OR_RETURN(d, d.Regrouped(replicas, rank(), {}, global_batch_size));
    d.steps_per_epoch = d.steps_per_pass;
    return d;
  }
  RW_ASSIGN_OR_RETURN(Dataset shard, one_pass.Shard(replicas, rank(), policy));
  if (prefetch_batches < 0) prefetch_batches = DefaultPrefetchBatches(cores_per_worker());
  d.local = shard.Batch(d.per_replica_batch_size, drop_remainder).Prefetch(prefetch_batches);
  if (policy == AutoShardPolicy::kData) d.common = one_pass;
  // Every worker's examples per pass, so that each knows every step's counts.
  d.shard_examples.assign(static_cast<size_t>(replicas), 0);
  d.shard_examples[static_cast<size_t>(rank())] = shard.examples_per_pass();
  RW_RETURN_IF_ERROR(comm()->AllReduce(d.shard_examples.data(), d.shard_examples.size(),
                                       DataType::kInt64, ReduceOp::kSum));
  // The most batches any worker has (the others take part with empty ones), or
  // with drop_remainder the full batches every worker has.
  const int64_t b = d.per_replica_batch_size;
  d.steps_per_pass = drop_remainder ? d.shard_examples[0] / b : 0;
  for (int64_t examples : d.shard_examples) {
    d.steps_per_pass = drop_remainder ? std::min(d.steps_per_pass, examples / b)
                                      : std::max(d.steps_per_pass, (examples + b - 1) / b);
  }
  if (d.steps_per_pass == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the dataset (", dataset.examples().count(), " examples) has no ",
                     drop_remainder ? "full " : "", "global batch of ", global_batch_size, " for ",
                     replicas, " replicas"));
  }
  d.steps_per_epoch = d.steps_per_pass;
  return d;
}

absl::Status MultiWorkerMirroredStrategy::CheckSameOnEveryWorker(
    absl::string_view what, const std::vector<std::string>& lines) {
  TimelineSpan span("startup", "check the same ", std::string_view(what.data(), what.size()));
  return ::ringwork::CheckSameOnEveryWorker(comm(), cluster(), what, lines);
}

absl::Status MultiWorkerMirroredStrategy::ShareChiefStatus(const absl::Status& status) {
  constexpr size_t kMaxMessage = 64 << 10;
  const absl::string_view message = status.message().substr(0, kMaxMessage);
  int64_t head[2] = {static_cast<int64_t>(status.code()), static_cast<int64_t>(message.size())};
  RW_RETURN_IF_ERROR(comm()->Broadcast(head, 2, DataType::kInt64, /*root=*/0));
  if (head[0] == 0) return absl::OkStatus();
  if (head[1] < 0 || head[1] > static_cast<int64_t>(kMaxMessage)) {
    return absl::InternalError("the chief sent a malformed status");
  }
  std::vector<int64_t> words((static_cast<size_t>(head[1]) + 7) / 8 + 1, 0);
  if (rank() == 0) std::memcpy(words.data(), message.data(), message.size());
  RW_RETURN_IF_ERROR(comm()->Broadcast(words.data(), words.size(), DataType::kInt64, 0));
  if (rank() == 0) return status;
  return absl::Status(static_cast<absl::StatusCode>(head[0]),
                      absl::StrCat("on the chief ", cluster().DescribeRank(0), ": ",
                                   absl::string_view(reinterpret_cast<const char*>(words.data()),
                                                     static_cast<size_t>(head[1]))));
}

void MultiWorkerMirroredStrategy::BeginStep(int64_t step) {
  runtime_->progress().set_step(step);
  if (step >= 1 && !first_step_done_) {
    first_step_done_ = true;
    runtime_->EndFirstStep();
  }
}

void MultiWorkerMirroredStrategy::Abort(const absl::Status& cause) {
  if (!cause.ok() && runtime_->transport() != nullptr) runtime_->transport()->Abort(cause);
}

bool IsPeerFailure(const absl::Status& status) {
  if (status.ok()) return false;  // SIGTERM (143) is no peer failure.
  const int code = ExitCodeFor(status);
  return code == kPeerFailure || code == kTimeout;
}

bool MultiWorkerMirroredStrategy::elastic() const {
  return owned_runtime_ != nullptr && options_.min_workers >= 1 &&
         options_.min_workers < runtime_->config().configured_world_size();
}

std::vector<std::pair<std::string, int64_t>> MultiWorkerMirroredStrategy::ElasticSettings() const {
  auto ms = [](double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000)); };
  return {{"--min_workers", options_.min_workers},
          {"--regroup_discovery_s (ms)", ms(options_.regroup_discovery_s)},
          {"--regroup_timeout_s (ms)", ms(options_.regroup_timeout_s)},
          {"--heartbeat_interval_s (ms)", ms(options_.runtime.heartbeat.interval_s)},
          {"--heartbeat_misses", options_.runtime.heartbeat.misses}};
}

int64_t MultiWorkerMirroredStrategy::ElasticSettingsHash() const {
  std::string text;
  for (const auto& [flag, value] : ElasticSettings())
    absl::StrAppend(&text, flag, "=", value, "\n");
  return static_cast<int64_t>(Fnv1a64(text) >> 1);
}

bool MultiWorkerMirroredStrategy::ring_failed() const {
  return runtime_->transport() == nullptr || !runtime_->transport()->status().ok();
}

RegroupOptions MultiWorkerMirroredStrategy::regroup_options() const {
  RegroupOptions regroup;
  regroup.min_workers = options_.min_workers;
  regroup.discovery_s = options_.regroup_discovery_s;
  regroup.connect_timeout_s = options_.regroup_timeout_s;
  regroup.join_wait_s = std::max(10.0, 2 * options_.regroup_timeout_s);
  regroup.late_member_wait_s = regroup.join_wait_s;
  return regroup;
}

RuntimeOptions MultiWorkerMirroredStrategy::elastic_runtime_options() const {
  RuntimeOptions runtime = WithCommunication(options_.runtime, options_.communication);
  runtime.rendezvous.elastic = true;
  return runtime;
}

absl::Status MultiWorkerMirroredStrategy::ReplaceRuntime(
    const ClusterConfig& previous, absl::StatusOr<std::unique_ptr<WorkerRuntime>> next,
    const std::string& after) {
  if (!next.ok()) {
    return absl::Status(next.status().code(),
                        absl::StrCat(next.status().message(), " (after: ", after, ")"));
  }
  owned_runtime_ = std::move(*next);
  runtime_ = owned_runtime_.get();
  first_step_done_ = true;
  departed_ = DescribeDeparted(previous, runtime_->config());
  arrived_ = DescribeArrived(previous, runtime_->config());
  return absl::OkStatus();
}

ClusterConfig MultiWorkerMirroredStrategy::ConfigWithKnownExtras() const {
  // Workers added on new hosts that asked this one to let them in.
  absl::StatusOr<ClusterConfig> known =
      runtime_->config().WithExtraWorkers(runtime_->known_extra_workers());
  return known.ok() ? *known : runtime_->config();
}

absl::StatusOr<std::unique_ptr<WorkerRuntime>> MultiWorkerMirroredStrategy::RegroupFrom(
    const ClusterConfig& previous) {
  RegroupOptions regroup = regroup_options();
  regroup.first_generation = std::max(previous.generation(), generations_tried_) + 1;
  int tried = 0;
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> next =
      ::ringwork::Regroup(previous, elastic_runtime_options(), regroup, &tried);
  generations_tried_ = std::max(generations_tried_, tried);
  return next;
}

absl::Status MultiWorkerMirroredStrategy::Regroup(const absl::Status& cause) {
  if (!elastic()) return cause;
  const ClusterConfig previous = ConfigWithKnownExtras();
  TimelineSpan span("elastic", "regroup");
  // Peers still waiting learn the cause at once; the shutdown waits for nobody.
  Abort(cause.ok() ? absl::AbortedError("regrouping") : cause);
  // Shut down but kept until a new ring replaces it: after a failed regroup the
  // strategy still answers Abort and Shutdown (it has no communicator).
  (void)owned_runtime_->Shutdown();
  return ReplaceRuntime(previous, RegroupFrom(previous), std::string(cause.message()));
}

int MultiWorkerMirroredStrategy::joiners_waiting() const {
  return joining() ? 0 : runtime_->joiners_waiting();
}

absl::Status MultiWorkerMirroredStrategy::Grow() {
  if (!elastic() || joining())
    return absl::FailedPreconditionError("Grow: not a member of an elastic ring");
  const ClusterConfig previous = ConfigWithKnownExtras();
  TimelineSpan span("elastic", "let workers join");
  // Every member is here (the count of joiners was all-reduced at the same step):
  // after the barrier nothing of this ring travels any more.
  RW_RETURN_IF_ERROR(comm()->Barrier());
  (void)owned_runtime_->Shutdown();
  return ReplaceRuntime(previous, RegroupFrom(previous), "letting workers join");
}

absl::Status MultiWorkerMirroredStrategy::JoinRunningJob() {
  if (!joining())
    return absl::FailedPreconditionError("JoinRunningJob: this worker is a member already");
  const ClusterConfig alone = runtime_->config();
  TimelineSpan span("elastic", "join the running job");
  (void)owned_runtime_->Shutdown();
  const ClusterConfig configured = alone.Configured();
  RW_RETURN_IF_ERROR(ReplaceRuntime(
      alone,
      ::ringwork::JoinRunningJob(configured, joining_generation_, elastic_runtime_options(),
                                 regroup_options(), options_.runtime.rendezvous.startup_timeout_s),
      "starting while the job ran"));
  joining_generation_ = -1;
  departed_.clear();
  arrived_ = runtime_->config().DescribeOriginalRank(runtime_->config().original_rank());
  return absl::OkStatus();
}

absl::Status MultiWorkerMirroredStrategy::Shutdown() {
  if (owned_runtime_ == nullptr) return absl::OkStatus();
  if (comm() == nullptr) return owned_runtime_->Shutdown();  // A regroup failed: no ring left.
  // Nobody leaves while another still needs it (its last collectives).
  CrashPoint("shutdown");  // Tests: a worker dies after training and evaluation.
  const absl::Status barrier = comm()->Barrier();
  if (!barrier.ok() && elastic() && !joining() && IsPeerFailure(barrier) && ring_failed()) {
    // The caller's collectives before Shutdown succeeded (it would not have come
    // here otherwise): the work is done, and a peer that left now, or just before
    // (the ring's failure already known), needs nothing more of this one.
    RW_LOG(WARNING) << "elastic training: a peer left after the work was done ("
                    << barrier.message() << "); this worker ends normally";
    Abort(barrier);
    (void)owned_runtime_->Shutdown();
    return absl::OkStatus();
  }
  RW_RETURN_IF_ERROR(barrier);
  return owned_runtime_->Shutdown();
}

}  // namespace ringwork
