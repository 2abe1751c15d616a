// The validated description of a training cluster and of this task's place in it,
// whatever produced it (TF_CONFIG, Slurm, a flag, or nothing: local mode). Every
// later layer (transport, collectives, strategy) reads only this.
//
//   absl::StatusOr<ClusterConfig> config = ParseTfConfig(std::getenv("TF_CONFIG"));
//   config->world_size();   // len(chief) + len(worker)
//   config->rank();         // chief 0, worker i -> i + len(chief); -1 off the ring
//   config->is_chief();     // the chief task, or worker 0 when there is no chief
//   config->Fingerprint();  // equal on every task of the same cluster
//   std::cout << config->RoleTable();
//   // Elastic training: the survivors of ranks 0, 2, 3 as generation 1 (ranks
//   // 0, 1, 2 of a ring of 3; worker:2 keeps its task name and address).
//   ClusterConfig next = config->Regrouped({0, 2, 3}, /*generation=*/1);
//   // Growing onto new hosts: worker:3, started by launch after the job began,
//   // has the 3 workers of TF_CONFIG ("voting workers") and itself in its
//   // cluster, and RINGWORK_VOTING_WORKERS=3.
//   config->SetVotingWorkers(3);
//   config->configured_world_size();  // 3: the quorum's base
//   config->roster_size();            // 4: every worker it knows
//
// Terms: a *task* is one process ("worker:1"); the *ring* is the chief and the
// workers, ordered by rank; an evaluator is a task outside the ring. The
// *voting* ring is TF_CONFIG's chief and first workers, the job as it started:
// its size is the quorum's base and its addresses the cluster's identity (the
// fingerprint). Workers after them (*extras*, `launch --host_discovery` adds
// them on hosts that appear) are a *roster* that grows: every worker's list is
// a prefix of one list, so a worker's original rank (chief count + index) is
// the same wherever it is known.
#ifndef RINGWORK_RUNTIME_CONFIG_CLUSTER_CONFIG_H_
#define RINGWORK_RUNTIME_CONFIG_CLUSTER_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/config/host_port.h"

namespace ringwork {

enum class TaskType { kChief, kWorker, kEvaluator };

absl::string_view TaskTypeName(TaskType type);  // "chief", "worker", "evaluator"

struct TaskId {
  TaskType type = TaskType::kWorker;
  int index = 0;

  std::string ToString() const;  // "worker:1"
  bool operator==(const TaskId& o) const { return type == o.type && index == o.index; }
  bool operator!=(const TaskId& o) const { return !(*this == o); }
};

// The jobs of a cluster, each a dense list of addresses indexed by task index.
struct ClusterSpec {
  std::vector<HostPort> chief;  // At most one.
  std::vector<HostPort> worker;
  std::vector<HostPort> evaluator;  // At most one; may be absent even for an evaluator.

  const std::vector<HostPort>& Job(TaskType type) const;
  std::vector<HostPort>& Job(TaskType type);
};

// One member of the ring.
struct RingMember {
  int rank = 0;
  TaskId task;
  HostPort address;
};

class ClusterConfig {
 public:
  // A single-worker cluster without networking (no TF_CONFIG, or one without a
  // cluster): world size 1, rank 0, chief.
  static ClusterConfig Local(std::string source_description);
  // A validated cluster; see tf_config.h and slurm.h for the ways to get one.
  ClusterConfig(ClusterSpec spec, TaskId task, std::string source_description);

  bool local_mode() const { return local_mode_; }
  const ClusterSpec& spec() const { return spec_; }
  const TaskId& task() const { return task_; }
  // Where the configuration came from: "TF_CONFIG", "--tf_config_file=/x.json",
  // "Slurm", "local (no TF_CONFIG)".
  const std::string& source() const { return source_; }

  // The ring's size: every chief and worker, or the members of a regrouped ring.
  int world_size() const;
  // This task's rank in the ring, or -1 for an evaluator (or a task left out of a
  // regrouped ring).
  int rank() const;

  // Elastic training. A regrouped ring keeps some of TF_CONFIG's ring members,
  // renumbered from 0 in TF_CONFIG's order (so the lowest is the chief), at a
  // generation > 0 that its fingerprint includes: workers of different
  // generations or memberships never accept each other's calls. `discovery`
  // marks the ring of the membership round (runtime/regroup.h), which must not
  // be mistaken for the regrouped ring it leads to.
  // `member_since[i]`: the generation from which original_ranks[i] is a member
  // (0 if empty: all from the start; a worker joining, `generation`). The ring
  // orders its members by it, then by TF_CONFIG's order: a worker that joined
  // never becomes the chief while one that trained longer is there.
  ClusterConfig Regrouped(std::vector<int> original_ranks, int generation, bool discovery = false,
                          std::vector<int> member_since = {}) const;
  // This task's member_since in this ring (0 unless regrouped).
  int member_since() const;
  int generation() const { return generation_; }
  bool discovery() const { return discovery_; }
  // A worker starting while its job runs at `generation`, alone until it joins
  // (runtime/regroup.h, JoinRunningJob): a ring of this task only, not the chief,
  // with a fingerprint of its own.
  ClusterConfig Alone(int generation) const;
  bool alone() const { return alone_; }
  // TF_CONFIG's ring itself (generation 0, every member): what a worker starting
  // (again) sees.
  ClusterConfig Configured() const;
  // The ring members' ranks in TF_CONFIG's ring (all of them unless regrouped), in
  // the ring's order.
  std::vector<int> OriginalRanks() const;
  // The voting ring's size (TF_CONFIG's ring unless RINGWORK_VOTING_WORKERS
  // made later workers extras): the quorum's base.
  int configured_world_size() const;
  // Every chief and worker this task knows: the voting ring and the extras.
  int roster_size() const;
  // The first `workers` of TF_CONFIG's workers vote; the others are extras.
  // INVALID_ARGUMENT unless 1 <= chief + workers and workers <= the workers listed.
  absl::Status SetVotingWorkers(int workers);
  // This task is an extra (its original rank is past the voting ring).
  bool is_extra() const;
  // The extras' addresses (workers past the voting ones), in index order.
  std::vector<HostPort> ExtraWorkers() const;
  // The same configuration knowing `extras` (a longer list wins; a shorter one
  // changes nothing). INVALID_ARGUMENT when the two lists differ where both
  // name a worker: they come from different jobs.
  absl::StatusOr<ClusterConfig> WithExtraWorkers(const std::vector<HostPort>& extras) const;
  // ";roster=h:p,h:p" (the extras; "" when none): sent after NormalizedRing()
  // in a Join, so that a worker learns the extras the caller knows.
  std::string RosterText() const;
  // The extras a Join's ring text names (empty when none); INVALID_ARGUMENT for a
  // malformed list.
  static absl::StatusOr<std::vector<HostPort>> ParseRosterText(absl::string_view ring_text);
  int original_rank() const;
  // DescribeRank for a rank of TF_CONFIG's ring.
  std::string DescribeOriginalRank(int original_rank) const;
  bool in_ring() const { return task_.type != TaskType::kEvaluator; }
  bool is_chief() const;
  // Chief first, then workers by index. Empty in local mode.
  std::vector<RingMember> Ring() const;
  // This task's address; nullopt in local mode and for an evaluator outside the spec.
  std::optional<HostPort> address() const;
  // The task and address of a rank, for messages: "worker:1 (10.0.0.2:2222)".
  std::string DescribeRank(int rank) const;

  // A stable hash of the normalized ring ("v1;chief=a:1;worker=b:2,c:3"), as 16 hex
  // digits. Equal on every ring task of one cluster; evaluators do not change it,
  // nor do extras (only a regrouped ring that has some as members names them,
  // ";extra=3@h:p"). A membership round's names no members: its workers may
  // know different extras.
  std::string Fingerprint() const;
  // The canonical text the fingerprint hashes.
  std::string NormalizedRing() const;

  // Every task with address, rank, chief and ring membership, marking this one.
  std::string RoleTable() const;

  // The same spec with `address` substituted for a task (for port-0 servers in
  // tests, once their bound ports are known).
  void SetAddress(const TaskId& task, const HostPort& address);

 private:
  ClusterConfig() = default;
  std::vector<RingMember> ConfiguredRing() const;  // TF_CONFIG's, never regrouped.

  ClusterSpec spec_;
  TaskId task_;
  std::string source_;
  bool local_mode_ = false;
  std::vector<int> members_;  // Original ranks of a regrouped ring; empty: all.
  int generation_ = 0;
  bool discovery_ = false;
  bool alone_ = false;
  std::vector<int> member_since_;  // Aligned with members_ (empty: all 0).
  int voting_workers_ = -1;        // -1: every worker of the spec votes.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_CLUSTER_CONFIG_H_
