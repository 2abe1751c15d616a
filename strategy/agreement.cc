#include "strategy/agreement.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/exit_code.h"
#include "base/fnv1a.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

// Descriptions longer than this are compared by hash only past this point.
constexpr size_t kMaxShownBytes = 1 << 20;

std::string Quoted(const std::vector<absl::string_view>& lines, size_t i) {
  return i < lines.size() ? absl::StrCat("`", lines[i], "`") : std::string("(nothing)");
}

}  // namespace

absl::Status CheckSameOnEveryWorker(Communicator* comm, const ClusterConfig& cluster,
                                    absl::string_view what, const std::vector<std::string>& lines) {
  const int world = comm->world_size();
  if (world == 1) return absl::OkStatus();
  std::string text = absl::StrJoin(lines, "\n");
  const uint64_t hash = Fnv1a64(text);
  // MIN of h and of ~h: equal hashes everywhere iff min(h) == ~min(~h).
  int64_t folded[2] = {static_cast<int64_t>(hash), static_cast<int64_t>(~hash)};
  RW_RETURN_IF_ERROR(comm->AllReduce(folded, 2, DataType::kInt64, ReduceOp::kMin));
  if (folded[0] == ~folded[1]) return absl::OkStatus();

  // They differ: gather every description (padded to whole int64s) and compare.
  if (text.size() > kMaxShownBytes) text.resize(kMaxShownBytes);
  int64_t words = static_cast<int64_t>((text.size() + 7) / 8) + 1;  // +1: the length.
  int64_t most = words;
  RW_RETURN_IF_ERROR(comm->AllReduce(&most, 1, DataType::kInt64, ReduceOp::kMax));
  std::vector<int64_t> mine(static_cast<size_t>(most), 0);
  mine[0] = static_cast<int64_t>(text.size());
  std::memcpy(mine.data() + 1, text.data(), text.size());
  std::vector<int64_t> all(static_cast<size_t>(most) * world);
  RW_RETURN_IF_ERROR(
      comm->AllGather(mine.data(), all.data(), static_cast<size_t>(most), DataType::kInt64));
  auto text_of = [&](int rank) {
    const int64_t* base = all.data() + static_cast<size_t>(rank) * most;
    const size_t size = std::min<size_t>(static_cast<size_t>(base[0]), (most - 1) * 8);
    return std::string(reinterpret_cast<const char*>(base + 1), size);
  };
  const int me = comm->rank();
  int other = 0;
  if (me == 0) {
    for (other = 1; other < world && text_of(other) == text; ++other) {
    }
    if (other == world) other = 1;  // Only the truncated tails differ.
  }
  const std::string theirs = text_of(other);
  const std::vector<absl::string_view> a = absl::StrSplit(text, '\n');
  const std::vector<absl::string_view> b = absl::StrSplit(theirs, '\n');
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (text == theirs) {
    return MismatchError(absl::StrCat("the ", what, " differs between workers, refusing to train (",
                                      cluster.DescribeRank(me), " has the same as ",
                                      cluster.DescribeRank(other),
                                      "; the others' errors show the difference)"));
  }
  return MismatchError(absl::StrCat("the ", what,
                                    " differs between workers, refusing to train: at line ", i + 1,
                                    ", ", cluster.DescribeRank(me), " has ", Quoted(a, i), " but ",
                                    cluster.DescribeRank(other), " has ", Quoted(b, i)));
}

}  // namespace ringwork
