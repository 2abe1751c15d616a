// MultiWorkerMirroredStrategy for C++: synchronous data parallelism over the
// workers of a cluster, one replica per worker, as TensorFlow's.
//
//   // Every worker runs the same program; TF_CONFIG says who it is.
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
//                       MultiWorkerMirroredStrategy::Create());
//   auto scope = strategy->scope();   // models created here are mirrored
//   Sequential model;
//   model.Add(Dense(10));
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true}}));
//   RW_RETURN_IF_ERROR(model.Fit(train, {.epochs = 5, .batch_size = 256}).status());  // global
//
// Mirrored variables: every worker creates the same variables in the same order and
// then takes the chief's values (BroadcastVariables), so replicas start equal; the
// gradients are averaged over all replicas every step (GradientReducer, packed and
// overlapped with the backward pass), so they stay bit-identical.
//
// Input: DistributeDataset splits a dataset between workers with tf.distribute's
// semantics (global batch -> global / replicas per worker; auto-shard DATA by
// default) and makes all workers agree on the steps per epoch.
//
// Threads: use a strategy from one thread (plus the reducer's own thread).
#ifndef RINGWORK_STRATEGY_MULTI_WORKER_MIRRORED_STRATEGY_H_
#define RINGWORK_STRATEGY_MULTI_WORKER_MIRRORED_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "runtime/config/cluster_source.h"
#include "runtime/regroup.h"
#include "runtime/worker_runtime.h"
#include "strategy/distributed_dataset.h"
#include "strategy/gradient_reducer.h"
#include "strategy/variable.h"

namespace ringwork {

// TensorFlow's tf.distribute.experimental.CommunicationOptions.
struct CommunicationOptions {
  // "auto" or "ring" (TensorFlow's AUTO / RING; NCCL does not apply on CPUs).
  std::string implementation = "auto";
  // Deadline of each collective; 0 keeps the runtime's --collective_timeout_s.
  double timeout_seconds = 0;
  // Gradient pack size; 0: automatic.
  int64_t bytes_per_pack = 0;
  // kBFloat16: gradients travel as bfloat16 (Horovod's fp16 compression, DDP's
  // bf16 hook); every worker must use the same (the model agreement check says).
  GradientCompression compression = GradientCompression::kNone;
  // Embedding tables' gradients: (ids, rows) by all-gather when smaller than the
  // table (kAuto), always, or never.
  SparseReduction sparse_reduction = SparseReduction::kAuto;
};

// Elastic training: what stays when the ring's size changes.
enum class ElasticBatch {
  kGlobal,      // The global batch, split over the replicas there are.
  kPerReplica,  // Each replica's batch (global / configured workers); the global
                // batch and the learning rate scale with the replicas (the linear
                // scaling rule, Goyal et al.).
};

struct StrategyOptions {
  ClusterSourceFlags cluster;  // Where the cluster comes from (TF_CONFIG by default).
  RuntimeOptions runtime;      // Transport, startup and collective timeouts.
  CommunicationOptions communication;
  // Inter-op parallelism (TensorFlow's inter_op_parallelism_threads): 2 or more
  // overlaps the gradient all-reduce with the backward pass on a second thread;
  // 1 reduces after it; 0 chooses (DefaultInterOpThreads).
  int inter_op_threads = 0;
  // Elastic training (Horovod Elastic, torchrun): with 1 <= min_workers < the
  // cluster's workers, fit() survives a peer failure: the workers still running
  // form the next generation of the ring (runtime/regroup.h) and go on, while
  // they are more than half of the cluster and at least min_workers. 0: every
  // worker is needed (a failure ends the job, as TensorFlow's strategy).
  int min_workers = 0;
  ElasticBatch elastic_batch = ElasticBatch::kGlobal;
  double regroup_discovery_s = 1.0;  // How long survivors look for each other.
  double regroup_timeout_s = 5;      // The new ring's rendezvous.
};

// A failure of a peer or of the network (exit 3 or 4, not a SIGTERM): what elastic
// training survives.
bool IsPeerFailure(const absl::Status& status);

// 2 when each worker on this host has a core of its own for the overlap thread, else
// 1: with one core per worker the second thread only competes with the backward
// pass (MLP, 2 workers on 2 cores: 89K samples/s with it, 107K without).
int DefaultInterOpThreads(int cores_per_worker);
// Ring members whose TF_CONFIG host is this task's (every loopback address counting
// as this machine); 1 in local mode.
int WorkersOnThisHost(const ClusterConfig& config);
// 2 batches assembled ahead on a thread when each worker has 2 cores or more, else
// 0 (the training thread gathers its batch: a prefetch thread sharing its core
// only adds switches; MLP, 2 workers on 2 cores: 134K samples/s without, 127K with).
int DefaultPrefetchBatches(int cores_per_worker);

// What TF_CONFIG (or Slurm, or `options.cluster`) makes this process, without
// joining anything: TensorFlow's cluster_resolver task_type and task_id. Chief
// and workers (in_ring()) then call MultiWorkerMirroredStrategy::Create; an
// evaluator task, which Create refuses, builds the same model outside any scope
// and runs a SidecarEvaluator on the chief's checkpoints (keras/sidecar_evaluator.h,
// examples/evaluator_app.cc). Without a cluster: a lone worker in local mode.
//
//   absl::StatusOr<ClusterConfig> task = ResolveThisTask();
//   if (task.ok() && !task->in_ring()) { /* evaluator: SidecarEvaluator(...).Run() */ }
absl::StatusOr<ClusterConfig> ResolveThisTask(const StrategyOptions& options = StrategyOptions());

class MultiWorkerMirroredStrategy {
 public:
  using Options = StrategyOptions;

  // Resolves the cluster (TF_CONFIG, Slurm, or local mode) and joins the ring.
  static absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Create(
      const Options& options = Options());
  static absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Create(
      const ClusterConfig& cluster, const Options& options);
  // Over a runtime that is already connected (e.g. from testing::LocalCluster).
  MultiWorkerMirroredStrategy(WorkerRuntime* runtime /* not owned */, const Options& options);
  ~MultiWorkerMirroredStrategy();

  int num_replicas_in_sync() const { return comm()->world_size(); }
  int rank() const { return comm()->rank(); }
  bool is_chief() const { return runtime_->config().is_chief(); }
  const ClusterConfig& cluster() const { return runtime_->config(); }
  const Options& options() const { return options_; }
  Communicator* communicator() { return comm(); }
  // Workers sharing this host (for the default intra-op thread count).
  int workers_on_this_host() const;
  // Options::inter_op_threads, or its default for this host's cores and workers.
  int inter_op_threads() const;
  // This host's cores divided among its workers.
  int cores_per_worker() const;

  // While a Scope lives, models built on this thread use this strategy.
  class Scope {
   public:
    ~Scope();
    Scope(Scope&& other) noexcept;
    Scope(const Scope&) = delete;

   private:
    friend class MultiWorkerMirroredStrategy;
    explicit Scope(MultiWorkerMirroredStrategy* strategy);
    MultiWorkerMirroredStrategy* previous_;
    bool active_ = true;
  };
  Scope scope();
  // The strategy of the innermost live Scope on this thread, or null.
  static MultiWorkerMirroredStrategy* Current();

  // Runs one replica's step (one replica per worker).
  absl::Status Run(const std::function<absl::Status()>& replica_step) { return replica_step(); }
  // Element-wise reduction across replicas, in place (kSum, kMean, kMin, kMax).
  // UNAVAILABLE on a worker that started while its job ran and has not joined it
  // (joining(): only fit joins; a custom loop would otherwise train alone).
  absl::Status Reduce(ReduceOp op, float* values, int64_t count);
  absl::Status Reduce(ReduceOp op, double* values, int64_t count);
  // Refuses (exit 7) when the workers' descriptions of `what` differ, naming the
  // first differing line on both sides (strategy/agreement.h).
  absl::Status CheckSameOnEveryWorker(absl::string_view what,
                                      const std::vector<std::string>& lines);
  // Every worker returns the chief's `status` (what other workers pass is ignored):
  // after work only the chief does (reading a checkpoint), so that all of them
  // fail, or go on, together. Others' errors name the chief.
  absl::Status ShareChiefStatus(const absl::Status& status);
  // Makes every replica's variables equal to the chief's.
  absl::Status BroadcastVariables(const std::vector<Variable*>& variables);
  // A reducer for these variables' gradients (every worker, same variables, same order).
  // `allow_overlap` false: packs are reduced after the backward pass even with an
  // overlap thread to spare (the model's layers use the communicator meanwhile).
  std::unique_ptr<GradientReducer> MakeGradientReducer(const std::vector<Variable*>& variables,
                                                       bool allow_overlap = true);
  // This worker's part of `dataset` for a `global_batch_size`; every worker must
  // call it (strategy/distributed_dataset.h). DATA and FILE shard one common order
  // (the chief's seed); with OFF every worker reads all of its own data in its own
  // order (the seed mixed with its rank), as in TensorFlow. `dataset`'s Repeat
  // gives the passes. `drop_remainder`: only full global batches (fixed shapes).
  // `prefetch_batches`: batches assembled ahead on a thread; -1 chooses
  // (DefaultPrefetchBatches).
  absl::StatusOr<DistributedDataset> DistributeDataset(
      const Dataset& dataset, int64_t global_batch_size,
      AutoShardPolicy policy = AutoShardPolicy::kData, uint64_t shuffle_seed = 0,
      int64_t prefetch_batches = -1, bool drop_remainder = false);
  // Marks the start of training step `step` (counted from 0 over the whole run):
  // heartbeats report it to peers, failure messages name it, and once step 1
  // begins, collectives switch from --first_step_timeout_s to
  // --collective_timeout_s. fit() calls it; custom training loops should too.
  void BeginStep(int64_t step);
  int64_t step() const { return runtime_->progress().step(); }
  // A barrier, then an orderly shutdown of the runtime (if the strategy owns it).
  // In elastic training a peer failure there is logged and survived (OK): call it
  // after the work, whose own collectives report their errors.
  absl::Status Shutdown();

  // Elastic training: Options::min_workers allows losing workers, and this
  // strategy owns its runtime (a cluster made by Create).
  bool elastic() const;
  // The settings every worker must share for elastic training (workers that
  // decided the quorum or detected failures differently could disagree on the
  // membership): {flag, value}, durations in milliseconds. --min_workers first.
  std::vector<std::pair<std::string, int64_t>> ElasticSettings() const;
  // A hash of them (non-negative), for agreements that compare one word.
  int64_t ElasticSettingsHash() const;
  // Elastic training that keeps each replica's batch (ElasticBatch::kPerReplica).
  bool per_replica_batch() const {
    return elastic() && options().elastic_batch == ElasticBatch::kPerReplica;
  }
  // The ring failed (its transport was aborted: a peer failure or a collective's
  // deadline), as opposed to an error of this worker's own.
  bool ring_failed() const;
  // The ring's generation: 0 at start, one more after each Regroup.
  int generation() const { return runtime_->config().generation(); }
  // After `cause` (IsPeerFailure) ended a collective: stops this generation's
  // runtime and joins the next one with the workers still running (ranks,
  // world size and the chief may change; the communicator is a new one). Nothing
  // may use the old communicator any more (stop the gradient reducer first).
  // UNAVAILABLE (exit 3) when this worker is in a minority or the regroup failed;
  // then only Abort and Shutdown may be called.
  absl::Status Regroup(const absl::Status& cause);
  // After a Regroup: "worker:2 (host:port)", the tasks the last one lost.
  const std::string& departed() const { return departed_; }
  // After a Regroup, Grow or JoinRunningJob: the tasks that joined ("" if none).
  const std::string& arrived() const { return arrived_; }

  // Growing back. Created while its job runs elastically (a member answered its
  // first Join with the generation it runs), a worker is alone until it joins:
  // a ring of itself, not the chief, so that it builds its model and data as one
  // worker would (their collectives involve nobody else). fit() then calls
  // JoinRunningJob, which waits until the members let it in at their next step
  // boundary (runtime/regroup.h), and takes the training state from them.
  bool joining() const { return joining_generation_ >= 0; }
  absl::Status JoinRunningJob();
  // Members: how many workers asked to join (counted by this ring's server).
  int joiners_waiting() const;
  // Members: lets the waiting workers in. Every member calls it at the same step
  // boundary (fit all-reduces joiners_waiting): a barrier, an orderly shutdown,
  // then Regroup's rounds, which find the joiners. A peer failure meanwhile is
  // returned like a collective's (survive it with Regroup).
  absl::Status Grow();
  // This worker failed with `cause` outside the collectives (a callback, a file):
  // every peer is told it at once, and the runtime's shutdown waits for nobody.
  void Abort(const absl::Status& cause);

 private:
  MultiWorkerMirroredStrategy(std::unique_ptr<WorkerRuntime> runtime, const Options& options);
  Communicator* comm() const { return runtime_->communicator(); }
  RegroupOptions regroup_options() const;
  // UNAVAILABLE while joining(): Reduce would involve this worker alone.
  absl::Status NotJoining() const;
  RuntimeOptions elastic_runtime_options() const;
  // Takes `next` (the result of a regroup from `previous`) as the runtime.
  absl::Status ReplaceRuntime(const ClusterConfig& previous,
                              absl::StatusOr<std::unique_ptr<WorkerRuntime>> next,
                              const std::string& after);

  std::unique_ptr<WorkerRuntime> owned_runtime_;
  WorkerRuntime* runtime_;  // Not owned (or owned_runtime_).
  Options options_;
  bool first_step_done_ = false;
  std::string departed_, arrived_;
  int joining_generation_ = -1;  // While joining(): the generation found running.
  // The highest generation a membership round of this worker tried: a later
  // regroup (after a failed one, or a failed grow) starts above it.
  int generations_tried_ = 0;
  // Regroup's rounds from above every generation tried, noting the ones tried.
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> RegroupFrom(const ClusterConfig& previous);
  // The ring's configuration with every worker added to the job that asked this
  // one to let it in (WorkerRuntime::known_extra_workers): what a regroup looks for.
  ClusterConfig ConfigWithKnownExtras() const;
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_MULTI_WORKER_MIRRORED_STRATEGY_H_
