// CSV files through the pipeline: a header, quoted fields, missing values and
// their defaults, types inferred, GZIP, sharding by file, and errors naming the
// file, the line and the column.
#include "data/pipeline/csv_source.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "data/pipeline/test_records.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::vector<Element> All(const Pipeline& p, const IterateOptions& options = {}) {
  absl::StatusOr<std::vector<Element>> all = ReadAll(p, options);
  INFO(all.status().message());
  REQUIRE(all.ok());
  return *all;
}

TEST_CASE("CSV: header, quotes, defaults, inferred types", "[csv]") {
  const std::string dir = FreshTestDir("csv");
  Write(dir + "/a.csv",
        "id,name,score,city\n"
        "1,\"Smith, Ann\",0.5,Paris\n"
        "2,\"He said \"\"hi\"\"\",,Rome\r\n"
        "\n"
        "3,Bo,2,\n");
  auto p = CsvPipeline({dir + "/a.csv"}, {.defaults = {{"score", "-1"}, {"city", "?"}}}, 2);
  REQUIRE(p.ok());
  REQUIRE(p->spec().size() == 4);
  CHECK(p->spec()[0].type == ValueType::kInt64);
  CHECK(p->spec()[1].type == ValueType::kString);
  CHECK(p->spec()[2].type == ValueType::kFloat32);
  CHECK(p->spec()[3].type == ValueType::kString);
  const std::vector<Element> rows = All(*p);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].values[1].strings()[0] == "Smith, Ann");
  CHECK(rows[1].values[1].strings()[0] == "He said \"hi\"");
  CHECK(rows[1].values[2].data<float>()[0] == -1.0f);  // Missing: the default.
  CHECK(rows[1].values[3].strings()[0] == "Rome");     // No \r.
  CHECK(rows[2].values[3].strings()[0] == "?");
  CHECK(rows[2].values[0].data<int64_t>()[0] == 3);
  CHECK(rows[2].record == 5);  // Its line (the empty one counted).
  // Selected columns, in the order asked, and a type given.
  auto some = CsvPipeline(
      {dir + "/a.csv"},
      {.select = {"score", "id"}, .types = {{"id", "float32"}}, .defaults = {{"score", "0"}}});
  REQUIRE(some.ok());
  CHECK(some->spec()[0].name == "score");
  CHECK(some->spec()[1].type == ValueType::kFloat32);
  CHECK(All(*some)[1].values[1].data<float>()[0] == 2.0f);
  CHECK(CsvPipeline({dir + "/a.csv"}, {.select = {"age"}}).status().message() ==
        dir + "/a.csv has no column \"age\" (its header names id, name, score, city)");
}

TEST_CASE("CSV: bad lines name the file, the line and the column", "[csv]") {
  const std::string dir = FreshTestDir("csv_bad");
  Write(dir + "/a.csv", "x,y\n1,2\n3\n4,five\n5,\n6,7\n");
  // "five" would make y a string column: its type is given.
  auto p = CsvPipeline({dir + "/a.csv"}, {.types = {{"y", "int64"}}}, 1);
  REQUIRE(p.ok());
  auto it = p->Iterate();
  Element e;
  REQUIRE(*it->Next(&e));
  absl::StatusOr<bool> bad = it->Next(&e);
  CHECK(bad.status().message() == dir + "/a.csv, line 3: 1 fields; the header has 2");
  // ignore_errors: the bad lines are skipped and counted.
  PipelineStats stats;
  const std::vector<Element> rows = All(*p, {.ignore_errors = true, .stats = &stats});
  CHECK(rows.size() == 2);
  CHECK(stats.skipped() == 3);
  auto it2 = p->Skip(1).Iterate();
  absl::StatusOr<bool> five = it2->Next(&e);
  five = it2->Next(&e);
  CHECK(five.status().message() ==
        dir + "/a.csv, line 4: column \"y\" (field 2): \"five\" is not an integer");
  five = it2->Next(&e);
  CHECK(five.status().message() ==
        dir + "/a.csv, line 5: column \"y\" (field 2) is missing and has no default");
}

TEST_CASE("CSV: GZIP files, and each worker its own files", "[csv]") {
  const std::string dir = FreshTestDir("csv_files");
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    std::string text = "v\n";
    for (int i = 0; i < 5; ++i) text += std::to_string(10 * f + i) + "\n";
    const std::string path = dir + "/f" + std::to_string(f) + ".csv.gz";
    gzFile gz = gzopen(path.c_str(), "wb");
    gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
    gzclose(gz);
    files.push_back(path);
  }
  auto p = CsvPipeline(files);
  REQUIRE(p.ok());
  CHECK(All(*p).size() == 15);
  std::vector<int64_t> mine;
  for (const Element& e : All(*p, {.num_shards = 2, .shard_index = 1})) {
    mine.push_back(e.values[0].data<int64_t>()[0]);
  }
  CHECK(mine == std::vector<int64_t>{10, 11, 12, 13, 14});
}

TEST_CASE("packing features into one vector", "[csv]") {
  const std::string dir = FreshTestDir("csv_pack");
  Write(dir + "/a.csv", "a,b,label,c\n1,2.5,1,3\n");
  auto p = CsvPipeline({dir + "/a.csv"});
  REQUIRE(p.ok());
  auto spec = PackedSpec(p->spec(), {"a", "b", "c"}, "x");
  REQUIRE(spec.ok());
  CHECK((*spec)[0].shape == Shape{3});
  CHECK((*spec)[1].name == "label");
  const std::vector<Element> rows =
      All(p->Map(PackFeaturesFn(p->spec(), {"a", "b", "c"}, "x"), 1, *spec));
  CHECK(rows[0].values[0].data<float>()[1] == 2.5f);
  CHECK(rows[0].values[0].data<float>()[2] == 3.0f);
  CHECK(rows[0].values[1].data<int64_t>()[0] == 1);
}

}  // namespace
}  // namespace ringwork
