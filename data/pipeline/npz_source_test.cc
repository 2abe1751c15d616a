// NumPy archives written by NumPy itself (data/testdata/write_npz.py): every
// stored type as the pipeline gives it, plain and deflated members, several
// archives sharded by file, and the archives a reader must refuse, by name.
#include "data/pipeline/npz_source.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "base/exit_code.h"
#include "data/pipeline/test_records.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

std::string Written() {
  static const std::string dir = [] {
    const std::string d = FreshTestDir("npz");
    SubprocessResult r =
        RunSubprocess({"/usr/bin/python3", "data/testdata/write_npz.py", d}, Subprocess::Options{});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return d;
  }();
  return dir;
}

std::vector<Element> All(const Pipeline& p, const IterateOptions& options = {}) {
  absl::StatusOr<std::vector<Element>> all = ReadAll(p, options);
  INFO(all.status().message());
  REQUIRE(all.ok());
  return *all;
}

TEST_CASE("an .npz's arrays as rows, each stored type as the pipeline gives it", "[npz]") {
  const std::string dir = Written();
  auto described = DescribeNpz(dir + "/a.npz");
  REQUIRE(described.ok());
  REQUIRE(described->size() == 6);
  CHECK((*described)[0].name == "x");
  CHECK((*described)[0].shape == Shape{10, 3, 2});
  auto p = NpzPipeline({dir + "/a.npz", dir + "/c.npz"});  // Plain, then deflated.
  REQUIRE(p.ok());
  CHECK(SpecString(p->spec()) ==
        "x: float32 [3, 2], y: int64 [], w: float32 [], b: uint8 [2], u: uint8 [4], s: int32 []");
  CHECK(p->node().cardinality() == 17);
  const std::vector<Element> rows = All(*p);
  REQUIRE(rows.size() == 17);
  for (int64_t i = 0; i < 17; ++i) {
    INFO("row " << i);
    const Element& e = rows[static_cast<size_t>(i)];
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 2; ++k) {
        CHECK(e.values[0].data<float>()[j * 2 + k] == static_cast<float>(i + 0.5 * j + 0.25 * k));
      }
    }
    CHECK(e.values[1].data<int64_t>()[0] == 3 * i);
    CHECK(e.values[2].data<float>()[0] == static_cast<float>(i / 4.0));
    CHECK(e.values[3].data<uint8_t>()[0] == (i % 2 == 0));
    CHECK(e.values[3].data<uint8_t>()[1] == (i % 2 == 1));
    for (int k = 0; k < 4; ++k) CHECK(e.values[4].data<uint8_t>()[k] == (7 * i + k) % 256);
    CHECK(e.values[5].data<int32_t>()[0] == -100 * i);
    CHECK(e.record == (i < 10 ? i : i - 10));
  }
  // Selected arrays in the order asked; FILE shards: each worker its own archives.
  auto picked = NpzPipeline({dir + "/a.npz", dir + "/c.npz"}, {"y", "x"});
  REQUIRE(picked.ok());
  CHECK(SpecString(picked->spec()) == "y: int64 [], x: float32 [3, 2]");
  const std::vector<Element> second = All(*picked, {.num_shards = 2, .shard_index = 1});
  REQUIRE(second.size() == 7);
  CHECK(second[0].values[0].data<int64_t>()[0] == 30);
  CHECK(OriginOf(second[0]) == dir + "/c.npz, record 0: ");
}

TEST_CASE("archives a reader must refuse, named with the array", "[npz]") {
  const std::string dir = Written();
  auto message = [&](const std::string& file, std::vector<std::string> select = {}) {
    auto p = NpzPipeline({dir + "/" + file}, std::move(select));
    return p.ok() ? std::string("accepted") : std::string(p.status().message());
  };
  CHECK(message("fortran.npz") == "invalid input data: " + dir +
                                      "/fortran.npz, array x: an array in Fortran order " +
                                      "(save np.ascontiguousarray(a) instead)");
  CHECK(message("bigendian.npz").find("array x: dtype '>f4' is not read") != std::string::npos);
  CHECK(message("strings.npz").find("array x: dtype '<U1' is not read") != std::string::npos);
  CHECK(message("rows.npz") == "invalid input data: " + dir +
                                   "/rows.npz: arrays x and y have 4 and 5 rows; the arrays " +
                                   "read need one row per example");
  // Arrays of other lengths that are not read are no matter (mnist.npz's x_test).
  CHECK(message("rows.npz", {"x"}) == "accepted");
  CHECK(message("a.npz", {"z"}) == dir + "/a.npz has no array \"z\" (it has x, y, w, b, u, s)");
  CHECK(NpzPipeline({dir + "/none.npz"}).status().code() == absl::StatusCode::kNotFound);
  std::ofstream(dir + "/text.npz") << "not a zip";
  CHECK(message("text.npz").find("text.npz: not a .npz (zip) archive") != std::string::npos);
  // An archive whose arrays differ from the first's.
  auto mixed = NpzPipeline({dir + "/a.npz", dir + "/other.npz"}, {"x"});
  REQUIRE_FALSE(mixed.ok());
  CHECK(ExitCodeFor(mixed.status()) == kInvalidData);
  CHECK(std::string(mixed.status().message()) == "invalid input data: " + dir +
                                                     "/other.npz, array x: <f4 [4, 3] where " +
                                                     dir + "/a.npz has <f4 rows of [3, 2]");
}

TEST_CASE("a corrupt deflated array is named, or skipped with ignore_errors", "[npz]") {
  const std::string dir = Written();
  auto p = NpzPipeline({dir + "/corrupt.npz", dir + "/a.npz"});
  INFO(p.status().message());
  REQUIRE(p.ok());
  auto it = p->Iterate();
  Element e;
  absl::StatusOr<bool> more = true;
  while (more.ok() && *more) more = it->Next(&e);
  REQUIRE_FALSE(more.ok());
  CHECK(ExitCodeFor(more.status()) == kInvalidData);
  CHECK(std::string(more.status().message()).find(dir + "/corrupt.npz, array x, row ") !=
        std::string::npos);
  PipelineStats stats;
  const std::vector<Element> kept = All(*p, {.ignore_errors = true, .stats = &stats});
  CHECK(stats.skipped() == 1);
  REQUIRE(kept.size() >= 10);
  CHECK(kept.back().values[1].data<int64_t>()[0] == 27);  // a.npz's last row.
}

}  // namespace
}  // namespace ringwork
