// TFRecord files of tf.train.Example through the pipeline: parsed on threads,
// sharded by file, and what a bad record does with and without ignore_errors.
#include "data/pipeline/tfrecord_source.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "data/pipeline/test_records.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// Files f0..f{n-1}, file f holding per records {"x": [i, i + 1], "id": 100 f + i}.
std::vector<std::string> WriteFiles(const std::string& dir, int n, int per) {
  return WriteExampleFiles(dir, std::vector<int64_t>(n, per), [per](int64_t k) {
    const float i = static_cast<float>(k % per);
    return SerializeExample({{"x", {i, i + 1}}}, {{"id", {100 * (k / per) + k % per}}});
  });
}

ExampleParser Parser() {
  auto parser = ExampleParser::Create(
      {{.name = "x", .shape = {2}}, {.name = "id", .type = ValueType::kInt64, .shape = {}}});
  REQUIRE(parser.ok());
  return *parser;
}

std::vector<int64_t> Ids(const Pipeline& p, const IterateOptions& options = {}) {
  absl::StatusOr<std::vector<Element>> all = ReadAll(p, options);
  INFO(all.status().message());
  REQUIRE(all.ok());
  std::vector<int64_t> ids;
  for (const Element& e : *all) {
    for (int64_t i = 0; i < e.values[1].size(); ++i) ids.push_back(e.values[1].data<int64_t>()[i]);
  }
  return ids;
}

TEST_CASE("TFRecord files parse on threads, in order, and shard by file", "[pipeline]") {
  const std::vector<std::string> files = WriteFiles(FreshTestDir("tfrecord_source"), 4, 50);
  const ExampleParser parser = Parser();
  Pipeline p = TFRecordPipeline(files).Map(ParseExamplesFn(parser), 3, ParsedSpec(parser));
  CHECK(p.spec().size() == 2);
  CHECK(p.node().file_count() == 4);
  std::vector<int64_t> want;
  for (int f = 0; f < 4; ++f) {
    for (int i = 0; i < 50; ++i) want.push_back(100 * f + i);
  }
  CHECK(Ids(p) == want);
  CHECK(Ids(p.Batch(32)) == want);
  // FILE policy: worker 1 of 2 reads files 1 and 3.
  std::vector<int64_t> mine(want.begin() + 50, want.begin() + 100);
  mine.insert(mine.end(), want.begin() + 150, want.end());
  CHECK(Ids(p, {.num_shards = 2, .shard_index = 1}) == mine);
  // Values come through as they were written.
  auto it = p.Iterate();
  Element e;
  REQUIRE(*it->Next(&e));
  REQUIRE(*it->Next(&e));
  CHECK(e.values[0].data<float>()[0] == 1.0f);
  CHECK(e.values[0].data<float>()[1] == 2.0f);
}

// id -> the draw a random Map gave it, over a pass of `p`.
std::map<int64_t, uint64_t> Draws(const Pipeline& p, IterateOptions options = {}) {
  std::map<int64_t, uint64_t> draws;
  auto it = p.Iterate(options);
  Element e;
  while (*it->Next(&e)) {
    draws[e.values[1].data<int64_t>()[0]] = static_cast<uint64_t>(e.values[0].data<float>()[0]);
  }
  return draws;
}

TEST_CASE("a random Map draws by file and record: alike on any shard, anew each pass",
          "[pipeline]") {
  const std::vector<std::string> files = WriteFiles(FreshTestDir("tfrecord_draws"), 4, 10);
  const ExampleParser parser = Parser();
  // The draw, cut to 20 bits, into x[0].
  const RandomMapFn keep = [](Element* e, uint64_t draw) {
    e->values[0].data<float>()[0] = static_cast<float>(draw >> 44);
    return absl::OkStatus();
  };
  const Pipeline p = TFRecordPipeline(files)
                         .Map(ParseExamplesFn(parser), 2, ParsedSpec(parser))
                         .MapRandom(keep, /*seed=*/3, 2);
  const auto whole = Draws(p);
  REQUIRE(whole.size() == 40);
  auto shards = Draws(p, {.num_shards = 2, .shard_index = 0});
  const auto other = Draws(p, {.num_shards = 2, .shard_index = 1});
  shards.insert(other.begin(), other.end());
  CHECK(shards == whole);  // File f's records draw alike wherever they are read.
  CHECK(Draws(p, {.pass = 1}) != whole);
  // Above a Repeat (as a distributed reader puts Maps): each repetition its own pass.
  const Pipeline repeated = TFRecordPipeline({files[0]})
                                .Map(ParseExamplesFn(parser), 1, ParsedSpec(parser))
                                .Repeat(2)
                                .MapRandom(keep, 3, 1);
  std::vector<uint64_t> in_order;
  auto it = repeated.Iterate();
  Element e;
  while (*it->Next(&e)) in_order.push_back(static_cast<uint64_t>(e.values[0].data<float>()[0]));
  REQUIRE(in_order.size() == 20);
  CHECK(std::vector<uint64_t>(in_order.begin(), in_order.begin() + 10) !=
        std::vector<uint64_t>(in_order.begin() + 10, in_order.end()));
}

TEST_CASE("a corrupt record names its file and record; ignore_errors skips what it must",
          "[pipeline]") {
  const std::string dir = FreshTestDir("tfrecord_source_bad");
  std::vector<std::string> files = WriteFiles(dir, 2, 20);
  std::stringstream bytes;
  bytes << std::ifstream(files[0], std::ios::binary).rdbuf();
  std::string corrupt = bytes.str();
  corrupt[corrupt.size() / 2] ^= 0x10;
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << corrupt;
  const ExampleParser parser = Parser();
  Pipeline p = TFRecordPipeline(files).Map(ParseExamplesFn(parser), 2, ParsedSpec(parser));
  auto it = p.Iterate();
  Element e;
  absl::StatusOr<bool> more = true;
  while (more.ok() && *more) more = it->Next(&e);
  REQUIRE_FALSE(more.ok());
  CHECK(more.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(more.status().message()).find(files[0] + ": record ") == 0);
  PipelineStats stats;
  const std::vector<int64_t> kept = Ids(p, {.ignore_errors = true, .stats = &stats});
  CHECK(stats.skipped() == 1);
  CHECK(kept.size() < 40);
  CHECK(kept.back() == 119);  // The second file whole.
  // A record whose data alone is bad (its length sound): only it is skipped.
  corrupt = bytes.str();
  corrupt[12 + 2] ^= 0x10;  // Record 0's data, after its 12-byte header.
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << corrupt;
  PipelineStats one;
  CHECK(Ids(p, {.ignore_errors = true, .stats = &one}).size() == 39);
  CHECK(one.skipped() == 1);
  // A bad length: nothing after it in the file can be framed.
  corrupt = bytes.str();
  corrupt[0] ^= 0x10;
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << corrupt;
  PipelineStats rest;
  CHECK(Ids(p, {.ignore_errors = true, .stats = &rest}).size() == 20);
  CHECK(rest.skipped() == 1);

  // A record that does not match the spec: the file, the record and the feature.
  auto narrow = ExampleParser::Create({{.name = "x", .shape = {3}}});
  REQUIRE(narrow.ok());
  auto bad =
      TFRecordPipeline({files[1]}).Map(ParseExamplesFn(*narrow), 2, ParsedSpec(*narrow)).Iterate();
  more = bad->Next(&e);
  REQUIRE_FALSE(more.ok());
  CHECK(more.status().message() ==
        files[1] + ", record 0: feature \"x\": 2 values; its shape [3] needs 3");
}

}  // namespace
}  // namespace ringwork
