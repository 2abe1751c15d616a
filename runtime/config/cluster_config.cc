#include "runtime/config/cluster_config.h"

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/check.h"
#include "base/fnv1a.h"

namespace ringwork {
namespace {}  // namespace

absl::string_view TaskTypeName(TaskType type) {
  switch (type) {
    case TaskType::kChief:
      return "chief";
    case TaskType::kWorker:
      return "worker";
    case TaskType::kEvaluator:
      return "evaluator";
  }
  return "?";
}

std::string TaskId::ToString() const { return absl::StrCat(TaskTypeName(type), ":", index); }

const std::vector<HostPort>& ClusterSpec::Job(TaskType type) const {
  switch (type) {
    case TaskType::kChief:
      return chief;
    case TaskType::kWorker:
      return worker;
    case TaskType::kEvaluator:
      return evaluator;
  }
  return worker;
}

std::vector<HostPort>& ClusterSpec::Job(TaskType type) {
  return const_cast<std::vector<HostPort>&>(static_cast<const ClusterSpec*>(this)->Job(type));
}

ClusterConfig ClusterConfig::Local(std::string source_description) {
  ClusterConfig config;
  config.task_ = TaskId{TaskType::kWorker, 0};
  config.source_ = std::move(source_description);
  config.local_mode_ = true;
  return config;
}

ClusterConfig::ClusterConfig(ClusterSpec spec, TaskId task, std::string source)
    : spec_(std::move(spec)), task_(task), source_(std::move(source)) {}

int ClusterConfig::configured_world_size() const {
  if (local_mode_) return 1;
  const size_t workers =
      voting_workers_ < 0 ? spec_.worker.size() : static_cast<size_t>(voting_workers_);
  return static_cast<int>(spec_.chief.size() + workers);
}

int ClusterConfig::roster_size() const {
  if (local_mode_) return 1;
  return static_cast<int>(spec_.chief.size() + spec_.worker.size());
}

absl::Status ClusterConfig::SetVotingWorkers(int workers) {
  if (local_mode_) return absl::InvalidArgumentError("voting workers: not a cluster");
  if (workers < 0 || static_cast<size_t>(workers) > spec_.worker.size() ||
      spec_.chief.size() + static_cast<size_t>(workers) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RINGWORK_VOTING_WORKERS=", workers, ": the cluster lists ",
                     spec_.worker.size(), " workers", spec_.chief.empty() ? "" : " and a chief",
                     "; the voting ring needs at least one task and at most every worker"));
  }
  voting_workers_ = workers;
  return absl::OkStatus();
}

bool ClusterConfig::is_extra() const {
  return !local_mode_ && original_rank() >= configured_world_size();
}

std::vector<HostPort> ClusterConfig::ExtraWorkers() const {
  const size_t voting = static_cast<size_t>(configured_world_size()) - spec_.chief.size();
  if (local_mode_ || voting >= spec_.worker.size()) return {};
  return std::vector<HostPort>(spec_.worker.begin() + static_cast<long>(voting),
                               spec_.worker.end());
}

absl::StatusOr<ClusterConfig> ClusterConfig::WithExtraWorkers(
    const std::vector<HostPort>& extras) const {
  const std::vector<HostPort> known = ExtraWorkers();
  for (size_t i = 0; i < known.size() && i < extras.size(); ++i) {
    if (known[i].ToString() != extras[i].ToString()) {
      const int index =
          configured_world_size() - static_cast<int>(spec_.chief.size()) + static_cast<int>(i);
      return absl::InvalidArgumentError(absl::StrCat(
          "worker:", index, " is ", known[i].ToString(), " here but ", extras[i].ToString(),
          " in the caller's roster: the workers added to the job differ (another job?)"));
    }
  }
  ClusterConfig grown = *this;
  if (extras.size() <= known.size()) return grown;
  // The ring stays what it was: the workers added are known, not members.
  if (grown.members_.empty()) grown.members_ = OriginalRanks();
  if (grown.voting_workers_ < 0) grown.voting_workers_ = static_cast<int>(spec_.worker.size());
  for (size_t i = known.size(); i < extras.size(); ++i) grown.spec_.worker.push_back(extras[i]);
  return grown;
}

std::string ClusterConfig::RosterText() const {
  const std::vector<HostPort> extras = ExtraWorkers();
  if (extras.empty()) return "";
  std::vector<std::string> parts;
  for (const HostPort& a : extras) parts.push_back(a.ToString());
  return absl::StrCat(";roster=", absl::StrJoin(parts, ","));
}

absl::StatusOr<std::vector<HostPort>> ClusterConfig::ParseRosterText(absl::string_view ring_text) {
  constexpr absl::string_view kKey = ";roster=";
  const size_t at = ring_text.rfind(kKey);
  if (at == absl::string_view::npos) return std::vector<HostPort>{};
  absl::string_view list = ring_text.substr(at + kKey.size());
  std::vector<HostPort> extras;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    absl::StatusOr<HostPort> address = ParseHostPort(part, "a Join's roster");
    if (!address.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a malformed roster in a Join (", part, "): ", address.status().message()));
    }
    extras.push_back(*address);
  }
  return extras;
}

int ClusterConfig::world_size() const {
  if (local_mode_ || members_.empty()) return roster_size();
  return static_cast<int>(members_.size());
}

int ClusterConfig::rank() const {
  const int original = original_rank();
  if (members_.empty() || original < 0) return original;
  const auto it = std::find(members_.begin(), members_.end(), original);
  return it == members_.end() ? -1 : static_cast<int>(it - members_.begin());
}

std::vector<int> ClusterConfig::OriginalRanks() const {
  if (!members_.empty()) return members_;
  std::vector<int> all(static_cast<size_t>(local_mode_ ? 1 : roster_size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

ClusterConfig ClusterConfig::Regrouped(std::vector<int> original_ranks, int generation,
                                       bool discovery, std::vector<int> member_since) const {
  member_since.resize(original_ranks.size(), 0);
  // Members since longest first (the chief is among them), then TF_CONFIG's order.
  std::vector<std::pair<int, int>> order;  // (member since, original rank)
  for (size_t i = 0; i < original_ranks.size(); ++i)
    order.emplace_back(member_since[i], original_ranks[i]);
  std::sort(order.begin(), order.end());
  original_ranks.clear();
  member_since.clear();
  for (const auto& [since, rank] : order) {
    if (!original_ranks.empty() &&
        std::find(original_ranks.begin(), original_ranks.end(), rank) != original_ranks.end()) {
      continue;
    }
    original_ranks.push_back(rank);
    member_since.push_back(since);
  }
  RW_CHECK(!local_mode_);
  RW_CHECK(!original_ranks.empty());
  for (int rank : original_ranks) {
    RW_CHECK_GE(rank, 0);
    RW_CHECK_LT(rank, roster_size());
  }
  RW_CHECK_GT(generation, 0);
  ClusterConfig next = *this;
  next.members_ = std::move(original_ranks);
  next.member_since_ = std::move(member_since);
  next.generation_ = generation;
  next.discovery_ = discovery;
  next.alone_ = false;
  return next;
}

int ClusterConfig::member_since() const {
  const int original = original_rank();
  for (size_t i = 0; i < members_.size() && i < member_since_.size(); ++i) {
    if (members_[i] == original) return member_since_[i];
  }
  return 0;
}

ClusterConfig ClusterConfig::Configured() const {
  ClusterConfig configured = *this;
  configured.members_.clear();
  configured.generation_ = 0;
  configured.discovery_ = false;
  configured.alone_ = false;
  configured.member_since_.clear();
  return configured;
}

ClusterConfig ClusterConfig::Alone(int generation) const {
  ClusterConfig alone = Configured();
  alone.members_ = {original_rank()};
  alone.generation_ = generation;
  alone.alone_ = true;
  return alone;
}

int ClusterConfig::original_rank() const {
  if (local_mode_) return 0;
  switch (task_.type) {
    case TaskType::kChief:
      return task_.index;
    case TaskType::kWorker:
      return task_.index + static_cast<int>(spec_.chief.size());
    case TaskType::kEvaluator:
      return -1;
  }
  return -1;
}

bool ClusterConfig::is_chief() const {
  if (local_mode_) return true;
  if (alone_) return false;
  if (!members_.empty()) return rank() == 0;
  if (task_.type == TaskType::kChief) return true;
  return task_.type == TaskType::kWorker && task_.index == 0 && spec_.chief.empty();
}

std::vector<RingMember> ClusterConfig::Ring() const {
  std::vector<RingMember> ring = ConfiguredRing();
  if (members_.empty()) return ring;
  std::vector<RingMember> kept;
  for (int original : members_) {
    kept.push_back(ring[static_cast<size_t>(original)]);
    kept.back().rank = static_cast<int>(kept.size()) - 1;
  }
  return kept;
}

std::string ClusterConfig::DescribeOriginalRank(int original_rank) const {
  const std::vector<RingMember> ring = ConfiguredRing();
  if (original_rank < 0 || original_rank >= static_cast<int>(ring.size())) {
    return absl::StrCat("rank ", original_rank, " (not in the ring)");
  }
  const RingMember& m = ring[static_cast<size_t>(original_rank)];
  return absl::StrCat(m.task.ToString(), " (", m.address.ToString(), ")");
}

std::vector<RingMember> ClusterConfig::ConfiguredRing() const {
  std::vector<RingMember> ring;
  if (local_mode_) return ring;
  for (size_t i = 0; i < spec_.chief.size(); ++i) {
    ring.push_back({static_cast<int>(ring.size()), TaskId{TaskType::kChief, static_cast<int>(i)},
                    spec_.chief[i]});
  }
  for (size_t i = 0; i < spec_.worker.size(); ++i) {
    ring.push_back({static_cast<int>(ring.size()), TaskId{TaskType::kWorker, static_cast<int>(i)},
                    spec_.worker[i]});
  }
  return ring;
}

std::optional<HostPort> ClusterConfig::address() const {
  if (local_mode_) return std::nullopt;
  const std::vector<HostPort>& job = spec_.Job(task_.type);
  if (task_.index < 0 || static_cast<size_t>(task_.index) >= job.size()) {
    return std::nullopt;
  }
  return job[task_.index];
}

std::string ClusterConfig::DescribeRank(int rank) const {
  if (local_mode_) return "local:0";
  const std::vector<RingMember> ring = Ring();
  if (rank < 0 || rank >= static_cast<int>(ring.size())) {
    return absl::StrCat("rank ", rank, " (not in the ring)");
  }
  return absl::StrCat(ring[rank].task.ToString(), " (", ring[rank].address.ToString(), ")");
}

std::string ClusterConfig::NormalizedRing() const {
  auto addresses = [](const std::vector<HostPort>& job) {
    std::vector<std::string> parts;
    for (const HostPort& a : job) parts.push_back(a.ToString());
    return absl::StrJoin(parts, ",");
  };
  if (local_mode_) return "v1;local";
  // The voting ring is the identity; extras appear only as members.
  const int voting = configured_world_size();
  const std::vector<HostPort> voting_workers(
      spec_.worker.begin(),
      spec_.worker.begin() + (voting - static_cast<long>(spec_.chief.size())));
  std::string ring =
      absl::StrCat("v1;chief=", addresses(spec_.chief), ";worker=", addresses(voting_workers));
  if (generation_ > 0 || alone_) {
    absl::StrAppend(&ring, ";generation=", generation_, discovery_ ? ";discovery" : "",
                    alone_ ? ";alone" : "");
    if (!discovery_) absl::StrAppend(&ring, ";members=", absl::StrJoin(members_, ","));
    if (std::any_of(member_since_.begin(), member_since_.end(), [](int g) { return g != 0; })) {
      absl::StrAppend(&ring, ";since=", absl::StrJoin(member_since_, ","));
    }
    std::vector<std::string> extras;
    const std::vector<RingMember> roster = ConfiguredRing();
    for (int original : members_) {
      if (original >= voting && !discovery_) {
        extras.push_back(
            absl::StrCat(original, "@", roster[static_cast<size_t>(original)].address.ToString()));
      }
    }
    if (!extras.empty()) absl::StrAppend(&ring, ";extra=", absl::StrJoin(extras, ","));
  }
  return ring;
}

std::string ClusterConfig::Fingerprint() const {
  return absl::StrFormat("%016x", Fnv1a64(NormalizedRing()));
}

std::string ClusterConfig::RoleTable() const {
  std::ostringstream out;
  out << "source: " << source_ << "\n";
  if (local_mode_) {
    out << "local mode: one worker, no networking (world size 1, rank 0, chief)\n";
    return out.str();
  }
  struct Row {
    TaskId task;
    std::string address, rank, chief, ring;
  };
  std::vector<Row> rows;
  for (const RingMember& m : Ring()) {
    const bool chief = members_.empty() ? (m.task.type == TaskType::kChief ||
                                           (spec_.chief.empty() && m.task.index == 0))
                                        : m.rank == 0;
    rows.push_back(
        {m.task, m.address.ToString(), std::to_string(m.rank), chief ? "yes" : "no", "yes"});
  }
  for (size_t i = 0; i < spec_.evaluator.size(); ++i) {
    rows.push_back({TaskId{TaskType::kEvaluator, static_cast<int>(i)},
                    spec_.evaluator[i].ToString(), "-", "no", "no"});
  }
  if (task_.type == TaskType::kEvaluator && spec_.evaluator.empty()) {
    rows.push_back({task_, "(none: not in cluster)", "-", "no", "no"});
  }
  size_t address_width = 7;
  for (const Row& r : rows) address_width = std::max(address_width, r.address.size());
  auto line = [&](absl::string_view a, absl::string_view b, absl::string_view c,
                  absl::string_view d, absl::string_view e, absl::string_view f) {
    out << std::left << std::setw(13) << a << ' ' << std::setw(address_width) << b << ' '
        << std::right << std::setw(5) << c << ' ' << std::left << std::setw(5) << d << ' '
        << std::setw(7) << e;
    if (!f.empty()) out << ' ' << f;
    out << "\n";
  };
  line("TASK", "ADDRESS", "RANK", "CHIEF", "IN RING", "");
  for (const Row& r : rows) {
    line(r.task.ToString(), r.address, r.rank, r.chief, r.ring,
         r.task == task_ ? "<- this task" : "");
  }
  out << "world size " << world_size() << "; this task: " << task_.ToString();
  if (in_ring()) {
    out << " (rank " << rank() << (is_chief() ? ", chief" : "") << ")";
  } else {
    out << " (evaluator, outside the ring)";
  }
  out << "; cluster fingerprint " << Fingerprint() << "\n";
  return out.str();
}

void ClusterConfig::SetAddress(const TaskId& task, const HostPort& address) {
  std::vector<HostPort>& job = spec_.Job(task.type);
  RW_CHECK_LT(static_cast<size_t>(task.index), job.size());
  job[task.index] = address;
}

}  // namespace ringwork
