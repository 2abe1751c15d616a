// Checkpoint files: round trip, and every kind of corruption refused with DATA_LOSS
// (exit 5) and a message naming the file and the tensor or field.
#include "checkpoint/checkpoint_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/crc32c.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  ::unlink(path.c_str());
  return path;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Sample {
  std::vector<float> a = std::vector<float>(12);
  std::vector<int64_t> b = {1, -2, 3, -4, 5};
  std::vector<float> empty;
  Sample() {
    for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * static_cast<float>(i) - 1.f;
  }
  std::vector<TensorData> tensors() const {
    return {{"dense/kernel", DataType::kFloat32, {3, 4}, a.data()},
            {"counter", DataType::kInt64, {5}, b.data()},
            {"empty", DataType::kFloat32, {0, 7}, empty.data()}};
  }
};

CheckpointManifest SampleManifest() {
  CheckpointManifest m;
  m.step = 120;
  m.epoch = 2;
  m.step_in_epoch = 3;
  m.cluster_fingerprint = "cluster-fp";
  m.model_fingerprint = "model-fp";
  m.counters["optimizer_iterations"] = 120;
  return m;
}

std::string WriteSample(const std::string& name) {
  const std::string path = TempPath(name);
  Sample s;
  REQUIRE(WriteCheckpointFile(path, SampleManifest(), s.tensors()).ok());
  return path;
}

uint64_t Le64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

// Rewrites the manifest with `edit` applied, with a valid CRC and the data moved
// to its new place: corruption that only the field checks can catch.
void EditManifest(const std::string& path, const std::function<void(Json&)>& edit) {
  const std::string bytes = ReadBytes(path);
  const uint64_t manifest_bytes = Le64(bytes, 16);
  Json manifest = Json::parse(bytes.substr(64, manifest_bytes));
  const uint64_t old_data = (64 + manifest_bytes + 63) / 64 * 64;
  edit(manifest);
  const std::string text = manifest.dump();
  std::string header = bytes.substr(0, 64);
  const uint32_t crc = Crc32c(text.data(), text.size());
  for (int i = 0; i < 4; ++i) header[12 + i] = static_cast<char>(crc >> (8 * i));
  for (int i = 0; i < 8; ++i) header[16 + i] = static_cast<char>(text.size() >> (8 * i));
  std::string out = header + text;
  out.resize((out.size() + 63) / 64 * 64, '\0');
  out += bytes.substr(old_data);
  WriteBytes(path, out);
}

absl::Status OpenAndReadAll(const std::string& path) {
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(path);
  if (!reader.ok()) return reader.status();
  for (const CheckpointTensor& t : (*reader)->manifest().tensors) {
    std::vector<uint8_t> buffer(t.bytes);
    absl::Status st = (*reader)->Read(t, buffer.data());
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

void CheckRefused(const absl::Status& st, const std::string& path, const std::string& words) {
  INFO(st.message());
  CHECK(st.code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(st.message()), Catch::Contains("checkpoint " + path));
  CHECK_THAT(std::string(st.message()), Catch::Contains(words));
}

TEST_CASE("a checkpoint reads back exactly what was written", "[checkpoint]") {
  const std::string path = WriteSample("roundtrip.rwckpt");
  auto reader = CheckpointReader::Open(path);
  REQUIRE(reader.ok());
  const CheckpointManifest& m = (*reader)->manifest();
  CHECK(m.step == 120);
  CHECK(m.epoch == 2);
  CHECK(m.step_in_epoch == 3);
  CHECK(!m.final);
  CHECK(m.cluster_fingerprint == "cluster-fp");
  CHECK(m.model_fingerprint == "model-fp");
  CHECK(m.counters.at("optimizer_iterations") == 120);
  REQUIRE(m.tensors.size() == 3);
  Sample want;
  std::vector<float> a(12);
  REQUIRE((*reader)->Read(*m.Find("dense/kernel"), a.data()).ok());
  CHECK(a == want.a);
  std::vector<int64_t> b(5);
  REQUIRE((*reader)->Read(*m.Find("counter"), b.data()).ok());
  CHECK(b == want.b);
  CHECK(m.Find("empty")->bytes == 0);
  CHECK(m.Find("counter")->offset % 64 == 0);
  CHECK(m.Find("missing") == nullptr);
  // An existing file is never overwritten in place.
  Sample s;
  CHECK(!WriteCheckpointFile(path, SampleManifest(), s.tensors()).ok());
}

TEST_CASE("a flipped bit in a tensor is refused, naming the tensor", "[checkpoint]") {
  const std::string path = WriteSample("flip.rwckpt");
  std::string bytes = ReadBytes(path);
  bytes[bytes.size() - 3] ^= 0x10;  // Inside "counter", the last non-empty tensor.
  WriteBytes(path, bytes);
  CheckRefused(OpenAndReadAll(path), path, "tensor \"counter\": CRC32C is 0x");
}

TEST_CASE("a flipped bit in the manifest is refused", "[checkpoint]") {
  const std::string path = WriteSample("flip_manifest.rwckpt");
  std::string bytes = ReadBytes(path);
  bytes[70] ^= 0x01;
  WriteBytes(path, bytes);
  CheckRefused(OpenAndReadAll(path), path, "manifest CRC32C is 0x");
}

TEST_CASE("truncated files are refused wherever they end", "[checkpoint]") {
  const std::string path = WriteSample("truncated.rwckpt");
  const std::string bytes = ReadBytes(path);
  const uint64_t manifest_bytes = Le64(bytes, 16);
  struct Case {
    size_t size;
    const char* words;
  };
  for (const Case& c : {Case{0, "shorter than the 64-byte header: truncated"},
                        Case{40, "shorter than the 64-byte header: truncated"},
                        Case{64 + manifest_bytes / 2, "bytes: truncated"},
                        Case{bytes.size() - 8, "past the end of the data"},
                        Case{bytes.size() - 1, "past the end of the data"}}) {
    INFO("cut at " << c.size);
    WriteBytes(path, bytes.substr(0, c.size));
    CheckRefused(OpenAndReadAll(path), path, c.words);
  }
}

TEST_CASE("a missing file, another format and an unknown version are refused", "[checkpoint]") {
  const std::string missing = TempPath("missing.rwckpt");
  CheckRefused(OpenAndReadAll(missing), missing, "cannot open: No such file or directory");

  const std::string path = WriteSample("version.rwckpt");
  std::string bytes = ReadBytes(path);
  bytes[8] = 2;
  WriteBytes(path, bytes);
  CheckRefused(OpenAndReadAll(path), path,
               "has format version 2, but this build reads version 1 only");

  bytes[8] = 1;
  bytes[0] = 'X';
  WriteBytes(path, bytes);
  CheckRefused(OpenAndReadAll(path), path, "is not a Ringwork checkpoint");

  bytes = ReadBytes(path);
  bytes[0] = 'R';
  for (int i = 16; i < 24; ++i) bytes[i] = static_cast<char>(0xFF);
  WriteBytes(path, bytes);
  CheckRefused(OpenAndReadAll(path), path,
               "says its manifest is 18446744073709551615 bytes; the limit is");
}

TEST_CASE("manifests with absurd or inconsistent fields are refused before allocating",
          "[checkpoint]") {
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* words;
  };
  const std::vector<Case> cases = {
      {"huge shape",
       [](Json& m) {
         m["tensors"][0]["shape"] = {1ll << 40, 1ll << 40};
       },
       "manifest.tensors[0].shape has more elements than fit in 64 bits"},
      {"shape beyond the file",
       [](Json& m) {
         m["tensors"][0]["shape"] = {1 << 20, 1 << 10};
       },
       "manifest.tensors[0] (\"dense/kernel\") has shape of 1073741824 elements, more than"},
      {"negative dimension", [](Json& m) { m["tensors"][1]["shape"][0] = -5; },
       "manifest.tensors[1].shape[0] is -5; expected 0..1099511627776"},
      {"rank", [](Json& m) { m["tensors"][1]["shape"] = {1, 1, 1, 1, 1, 1, 1, 1, 5}; },
       "manifest.tensors[1].shape has rank 9; the limit is 8"},
      {"bytes disagree with the shape", [](Json& m) { m["tensors"][1]["bytes"] = 48; },
       "says 48 bytes, but int64 x 5 is 40"},
      {"offset past the end", [](Json& m) { m["tensors"][1]["offset"] = 1 << 30; },
       "past the end of the data"},
      {"unknown dtype", [](Json& m) { m["tensors"][0]["dtype"] = "complex128"; },
       "manifest.tensors[0].dtype \"complex128\" is not a known dtype"},
      {"wrong type", [](Json& m) { m["step"] = "120"; },
       "manifest.step is not an integer: \"120\""},
      {"negative step", [](Json& m) { m["step"] = -1; }, "manifest.step is -1; expected 0.."},
      {"missing field", [](Json& m) { m.erase("epoch"); }, "manifest.epoch is missing"},
      {"manifest version", [](Json& m) { m["format_version"] = 9; },
       "manifest.format_version is 9, but this build reads version 1 only"},
      {"duplicate names", [](Json& m) { m["tensors"][1]["name"] = "dense/kernel"; },
       "manifest.tensors[1].name \"dense/kernel\" appears twice"},
      {"not an object", [](Json& m) { m = Json::array(); }, "manifest is not a JSON object"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string path = WriteSample("edited.rwckpt");
    EditManifest(path, c.edit);
    CheckRefused(OpenAndReadAll(path), path, c.words);
  }
}

}  // namespace
}  // namespace ringwork
