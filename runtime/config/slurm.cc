#include "runtime/config/slurm.h"

#include <cctype>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

constexpr size_t kMaxHosts = 65536;

absl::Status HostlistError(absl::string_view hostlist, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("SLURM_STEP_NODELIST \"", hostlist, "\": ", problem));
}

// Splits at commas that are not inside brackets.
std::vector<absl::string_view> SplitTopLevel(absl::string_view text) {
  std::vector<absl::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Expands the first bracket group of `item`, recursing for the rest.
absl::Status ExpandItem(absl::string_view hostlist, absl::string_view item,
                        std::vector<std::string>* out) {
  const size_t open = item.find('[');
  if (open == absl::string_view::npos) {
    if (item.find(']') != absl::string_view::npos) {
      return HostlistError(hostlist, "has ']' without '['");
    }
    if (item.empty()) return HostlistError(hostlist, "has an empty host name");
    out->emplace_back(item);
    return absl::OkStatus();
  }
  const size_t close = item.find(']', open);
  if (close == absl::string_view::npos) {
    return HostlistError(hostlist, "has '[' without ']'");
  }
  const absl::string_view prefix = item.substr(0, open);
  const absl::string_view ranges = item.substr(open + 1, close - open - 1);
  const absl::string_view suffix = item.substr(close + 1);
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(range, '-');
    if (bounds.size() > 2 || bounds[0].empty() || (bounds.size() == 2 && bounds[1].empty())) {
      return HostlistError(hostlist, absl::StrCat("bad range \"", range, "\""));
    }
    for (absl::string_view b : bounds) {
      for (char c : b) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
          return HostlistError(hostlist, absl::StrCat("bad range \"", range, "\": not a number"));
        }
      }
    }
    uint64_t low = 0, high = 0;
    if (!absl::SimpleAtoi(bounds[0], &low) || !absl::SimpleAtoi(bounds.back(), &high) ||
        high < low) {
      return HostlistError(hostlist, absl::StrCat("bad range \"", range, "\""));
    }
    if (high - low >= kMaxHosts) {
      return HostlistError(hostlist, absl::StrCat("range \"", range, "\" is too large"));
    }
    const size_t width = bounds[0].size();
    for (uint64_t n = low; n <= high; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < width) number.insert(0, width - number.size(), '0');
      RW_RETURN_IF_ERROR(ExpandItem(hostlist, absl::StrCat(prefix, number, suffix), out));
      if (out->size() > kMaxHosts) {
        return HostlistError(hostlist, "expands to too many hosts");
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Require(const EnvLookup& env, const std::string& name) {
  std::optional<std::string> value = env(name);
  if (!value || value->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm: environment variable ", name,
                     " is not set; run the workers with srun inside an allocation"));
  }
  return *value;
}

absl::StatusOr<int64_t> RequireInt(const EnvLookup& env, const std::string& name) {
  RW_ASSIGN_OR_RETURN(std::string text, Require(env, name));
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Slurm: environment variable ", name, "=\"",
                                                   text, "\" is not a non-negative integer"));
  }
  return value;
}

}  // namespace

EnvLookup EnvFromProcess() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

absl::StatusOr<std::vector<std::string>> ExpandHostlist(absl::string_view hostlist) {
  if (hostlist.empty()) return HostlistError(hostlist, "is empty");
  std::vector<std::string> hosts;
  for (absl::string_view item : SplitTopLevel(hostlist)) {
    RW_RETURN_IF_ERROR(ExpandItem(hostlist, item, &hosts));
  }
  return hosts;
}

absl::StatusOr<std::vector<int>> ExpandTasksPerNode(absl::string_view text) {
  auto bad = [&](absl::string_view part) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_STEP_TASKS_PER_NODE \"", text,
                                                   "\": bad part \"", part,
                                                   "\"; expected a form like \"2(x3),1\""));
  };
  std::vector<int> counts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t count = 0, repeat = 1;
    const size_t paren = part.find("(x");
    absl::string_view count_text = part.substr(0, paren);
    if (paren != absl::string_view::npos) {
      if (part.back() != ')') return bad(part);
      absl::string_view repeat_text = part.substr(paren + 2, part.size() - paren - 3);
      if (!absl::SimpleAtoi(repeat_text, &repeat) || repeat < 1 ||
          repeat > static_cast<int64_t>(kMaxHosts)) {
        return bad(part);
      }
    }
    if (!absl::SimpleAtoi(count_text, &count) || count < 1 || count > 4096) {
      return bad(part);
    }
    for (int64_t i = 0; i < repeat; ++i) counts.push_back(static_cast<int>(count));
    if (counts.size() > kMaxHosts) return bad(part);
  }
  return counts;
}

bool LooksLikeSlurmStep(const EnvLookup& env) {
  std::optional<std::string> ntasks = env("SLURM_NTASKS");
  std::optional<std::string> nodes = env("SLURM_STEP_NODELIST");
  int64_t n = 0;
  return nodes && ntasks && absl::SimpleAtoi(*ntasks, &n) && n > 1 && env("SLURM_PROCID");
}

absl::StatusOr<ClusterConfig> ClusterFromSlurm(const EnvLookup& env, int base_port) {
  RW_ASSIGN_OR_RETURN(int64_t procid, RequireInt(env, "SLURM_PROCID"));
  RW_ASSIGN_OR_RETURN(int64_t ntasks, RequireInt(env, "SLURM_NTASKS"));
  RW_ASSIGN_OR_RETURN(std::string nodelist, Require(env, "SLURM_STEP_NODELIST"));
  RW_ASSIGN_OR_RETURN(std::vector<std::string> nodes, ExpandHostlist(nodelist));
  std::vector<int> per_node;
  if (std::optional<std::string> text = env("SLURM_STEP_TASKS_PER_NODE")) {
    RW_ASSIGN_OR_RETURN(per_node, ExpandTasksPerNode(*text));
  } else if (ntasks % static_cast<int64_t>(nodes.size()) == 0) {
    per_node.assign(nodes.size(), static_cast<int>(ntasks / nodes.size()));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "Slurm: SLURM_STEP_TASKS_PER_NODE is not set and SLURM_NTASKS=", ntasks,
        " does not divide evenly over the ", nodes.size(), " nodes of \"", nodelist, "\""));
  }
  if (per_node.size() != nodes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm: SLURM_STEP_TASKS_PER_NODE lists ", per_node.size(),
                     " nodes but SLURM_STEP_NODELIST \"", nodelist, "\" has ", nodes.size()));
  }
  int64_t total = 0;
  for (int n : per_node) total += n;
  if (total != ntasks) {
    return absl::InvalidArgumentError(absl::StrCat("Slurm: SLURM_STEP_TASKS_PER_NODE adds up to ",
                                                   total, " tasks but SLURM_NTASKS=", ntasks));
  }
  if (procid >= ntasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm: SLURM_PROCID=", procid, " is out of range for SLURM_NTASKS=", ntasks));
  }
  int max_per_node = 0;
  for (int n : per_node) max_per_node = std::max(max_per_node, n);
  if (base_port < 1 || base_port + max_per_node - 1 > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm: base port ", base_port, " with up to ", max_per_node,
                     " tasks per node leaves 1..65535 (set --slurm_base_port)"));
  }
  ClusterSpec spec;
  std::string my_node;
  for (size_t node = 0; node < nodes.size(); ++node) {
    for (int local = 0; local < per_node[node]; ++local) {
      if (static_cast<int64_t>(spec.worker.size()) == procid) my_node = nodes[node];
      RW_ASSIGN_OR_RETURN(HostPort address,
                          ParseHostPort(absl::StrCat(nodes[node], ":", base_port + local),
                                        absl::StrCat("SLURM_STEP_NODELIST node ", nodes[node])));
      spec.worker.push_back(std::move(address));
    }
  }
  // Block distribution is assumed; a task placed elsewhere would bind an address of
  // another node, so say so now rather than fail to bind later.
  if (std::optional<std::string> here = env("SLURMD_NODENAME")) {
    if (!here->empty() && *here != my_node) {
      return absl::InvalidArgumentError(
          absl::StrCat("Slurm: SLURM_PROCID=", procid, " runs on ", *here,
                       " but block distribution places it on ", my_node,
                       "; start the step with srun --distribution=block"));
    }
  }
  return ClusterConfig(std::move(spec), TaskId{TaskType::kWorker, static_cast<int>(procid)},
                       "Slurm");
}

}  // namespace ringwork
