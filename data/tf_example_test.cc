// tf.train.Example records written by an independent writer (protobuf's Python
// serializer, crcmod's CRC32C), read through RecordReader and parsed by a spec.
#include "data/tf_example.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "io/proto_wire.h"
#include "io/record_reader.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// Writes `json` (write_tf_examples.py's spec) to `path` with the independent writer.
void WriteExamples(const std::string& path, const std::string& json) {
  SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "data/testdata/write_tf_examples.py", "data/testdata", path, json},
      Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

std::vector<std::string> Records(const std::string& path) {
  auto reader = RecordReader::Open(path);
  REQUIRE(reader.ok());
  std::vector<std::string> out;
  std::string record;
  while (*(*reader)->Next(&record)) out.push_back(record);
  return out;
}

TEST_CASE("Examples from an independent writer parse by a spec", "[data]") {
  const std::string dir = FreshTestDir("tf_example");
  std::string image = "[";
  for (int i = 0; i < 784; ++i) image += (i ? "," : "") + std::to_string(i * 0.25);
  image += "]";
  const std::string path = dir + "/a.tfrecord.gz";
  WriteExamples(path,
                "[{\"image\": {\"float\": " + image +
                    "}, \"label\": {\"int64\": [7]}, \"tags\": {\"int64\": [3, 1, 4000000000]}, "
                    "\"name\": {\"bytes\": [\"shirt\"]}},"
                    " {\"image\": {\"float\": " +
                    image + "}, \"label\": {\"int64\": [2]}}]");
  const std::vector<std::string> records = Records(path);
  REQUIRE(records.size() == 2);
  auto parser = ExampleParser::Create({
      {.name = "image", .type = ValueType::kFloat32, .shape = {28, 28, 1}},
      {.name = "label", .type = ValueType::kInt32, .shape = {}},
      {.name = "tags", .type = ValueType::kInt64, .var_len = true},
      {.name = "name", .type = ValueType::kString, .shape = {}, .default_string = "?"},
  });
  REQUIRE(parser.ok());
  std::vector<TypedTensor> values;
  REQUIRE(parser->Parse(records[0], &values).ok());
  REQUIRE(values.size() == 4);
  CHECK(values[0].shape() == Shape{28, 28, 1});
  CHECK(values[0].data<float>()[0] == 0.0f);
  CHECK(values[0].data<float>()[783] == 195.75f);
  CHECK(values[1].shape().empty());
  CHECK(values[1].type() == ValueType::kInt32);
  CHECK(values[1].data<int32_t>()[0] == 7);
  CHECK(values[2].shape() == Shape{3});
  CHECK(values[2].data<int64_t>()[2] == 4000000000);
  CHECK(values[3].strings() == std::vector<std::string>{"shirt"});
  // The second lacks tags (a variable-length feature: none) and name (its default).
  REQUIRE(parser->Parse(records[1], &values).ok());
  CHECK(values[1].data<int32_t>()[0] == 2);
  CHECK(values[2].shape() == Shape{0});
  CHECK(values[3].strings() == std::vector<std::string>{"?"});
}

TEST_CASE("a record that does not match the spec names the feature", "[data]") {
  const std::string dir = FreshTestDir("tf_example_errors");
  const std::string path = dir + "/bad.tfrecord";
  WriteExamples(path,
                "[{\"image\": {\"float\": [1, 2, 3]}, \"label\": {\"int64\": [1]}},"
                " {\"image\": {\"int64\": [1, 2, 3, 4]}, \"label\": {\"int64\": [1]}},"
                " {\"image\": {\"float\": [1, 2, 3, 4]}},"
                " {\"image\": {\"float\": [1, 2, 3, 4]}, \"label\": {\"int64\": [300]}}]");
  const std::vector<std::string> records = Records(path);
  REQUIRE(records.size() == 4);
  auto parser = ExampleParser::Create(
      {{.name = "image", .shape = {2, 2}}, {.name = "label", .type = ValueType::kUInt8}});
  REQUIRE(parser.ok());
  std::vector<TypedTensor> values;
  auto message = [&](int i) { return std::string(parser->Parse(records[i], &values).message()); };
  CHECK(message(0) == "feature \"image\": 3 values; its shape [2, 2] needs 4");
  CHECK(message(1) ==
        "feature \"image\" is a int64_list; the spec asks for float32 (a float_list)");
  CHECK(message(2) == "feature \"label\" is missing (and the spec gives no default)");
  CHECK(message(3) == "feature \"label\": value 300 is outside uint8");
  CHECK(parser->Parse("\xff\xff\xff", &values).code() == absl::StatusCode::kInvalidArgument);
  // A default fills a missing feature.
  auto with_default = ExampleParser::Create(
      {{.name = "image", .shape = {2, 2}}, {.name = "label", .default_value = {{-1}}}});
  REQUIRE(with_default.ok());
  REQUIRE(with_default->Parse(records[2], &values).ok());
  CHECK(values[1].data<float>()[0] == -1.0f);
}

TEST_CASE("unpacked value lists parse as packed ones do", "[data]") {
  // Field by field, as an old writer may send them: Example.features.feature["x"]
  // = Feature{float_list{value: 1.5, value: 2.5}}, and "n" int64 3, 4 unpacked.
  WireWriter float_feature, int_feature;
  // Fixed32 fields written by hand: tag (1 << 3 | 5) then 4 little-endian bytes.
  std::string fl;
  for (float v : {1.5f, 2.5f}) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    fl += static_cast<char>(0x0d);
    for (int k = 0; k < 4; ++k) fl += static_cast<char>((bits >> (8 * k)) & 0xff);
  }
  float_feature.Bytes(2, fl);
  WireWriter int_list;
  int_list.Varint(1, 3);
  int_list.Varint(1, 4);
  int_feature.Bytes(3, int_list.data());
  WireWriter entry_x, entry_n, features, example;
  entry_x.Bytes(1, "x");
  entry_x.Bytes(2, float_feature.data());
  entry_n.Bytes(1, "n");
  entry_n.Bytes(2, int_feature.data());
  features.Bytes(1, entry_x.data());
  features.Bytes(1, entry_n.data());
  example.Bytes(1, features.data());
  auto parser = ExampleParser::Create(
      {{.name = "x", .shape = {2}}, {.name = "n", .type = ValueType::kInt64, .shape = {2}}});
  REQUIRE(parser.ok());
  std::vector<TypedTensor> values;
  REQUIRE(parser->Parse(example.data(), &values).ok());
  CHECK(values[0].data<float>()[1] == 2.5f);
  CHECK(values[1].data<int64_t>()[1] == 4);
}

TEST_CASE("a spec that cannot be met is refused", "[data]") {
  CHECK(ExampleParser::Create({}).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ExampleParser::Create({{.name = "a"}, {.name = "a"}}).status().message() ==
        "feature \"a\" is in the spec twice");
  CHECK(ExampleParser::Create({{.name = "a", .shape = {3}, .default_value = {{1, 2}}}})
            .status()
            .message() == "feature \"a\": a default of 2 numbers for float32 of shape [3]");
}

}  // namespace
}  // namespace ringwork
