// Event files as TensorBoard reads them: TFRecord framing with both masked CRC32Cs,
// the file version first, scalars and histograms by TensorBoard's field numbers;
// corruption and truncation are found; a second writer never rewrites the first's.
#include "observability/event_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>

#include "absl/strings/str_format.h"
#include "base/crc32c.h"
#include "io/proto_wire.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

TEST_CASE("the record CRC is TFRecord's masked CRC32C", "[events]") {
  // masked(crc) = rotate right by 15, plus 0xa282ead8 (TensorFlow's crc32c::Mask).
  CHECK(MaskedCrc32c("", 0) == 0xa282ead8u);
  const uint32_t crc = Crc32c("123456789", 9);  // 0xE3069283
  CHECK(MaskedCrc32c("123456789", 9) == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  CHECK(MaskedCrc32c("123456789", 9) == 0xc78ab0e5u);  // worked by hand from 0xE3069283
}

TEST_CASE("scalars and histograms come back as written, after the file version", "[events]") {
  const std::string dir = FreshTestDir("events") + "/train";
  auto writer = EventFileWriter::Create(dir);
  REQUIRE(writer.ok());
  CHECK(std::regex_match(fs::path((*writer)->path()).filename().string(),
                         std::regex(R"(events\.out\.tfevents\.[0-9]+\..+\.[0-9]+\.v2)")));
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    REQUIRE((*writer)->WriteScalar("epoch_loss", epoch, 1.5f - 0.25f * epoch).ok());
  }
  const float values[] = {-1, 0, 0.5f, 2, 2};
  REQUIRE((*writer)->WriteHistogram("dense/kernel", 7, Histogram::Of(values, 5, 3)).ok());
  auto events = ReadEventFile((*writer)->path());
  REQUIRE(events.ok());
  REQUIRE(events->size() == 5);
  CHECK((*events)[0].file_version == "brain.Event:2");
  CHECK((*events)[0].wall_time > 1.6e9);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const EventRecord& e = (*events)[static_cast<size_t>(epoch) + 1];
    CHECK(e.step == epoch);
    REQUIRE(e.scalars.size() == 1);
    CHECK(e.scalars[0].first == "epoch_loss");
    CHECK(e.scalars[0].second == 1.5f - 0.25f * epoch);
  }
  const EventRecord& h = (*events)[4];
  CHECK(h.step == 7);
  REQUIRE(h.histograms.size() == 1);
  CHECK(h.histograms[0].first == "dense/kernel");
  const Histogram& histo = h.histograms[0].second;
  CHECK(histo.min == -1);
  CHECK(histo.max == 2);
  CHECK(histo.num == 5);
  CHECK(histo.sum == 3.5);
  CHECK(histo.bucket == std::vector<double>{1, 2, 2});
  CHECK(histo.bucket_limit == std::vector<double>{0, 1, 2});
  CHECK(EventFiles(dir) == std::vector<std::string>{(*writer)->path()});
}

TEST_CASE("each writer has a file of its own; curves read over files, the later winning",
          "[events]") {
  const std::string dir = FreshTestDir("events_curves");
  auto first = EventFileWriter::Create(dir);
  auto second = EventFileWriter::Create(dir);  // Same process, same second (usually).
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE((*first)->path() != (*second)->path());
  REQUIRE(((*first)->WriteScalar("epoch_loss", 0, 2.0f).ok() &&
           (*first)->WriteScalar("epoch_loss", 1, 1.0f).ok()));
  REQUIRE(((*second)->WriteScalar("epoch_loss", 1, 0.5f).ok()));
  CHECK(EventFiles(dir) == std::vector<std::string>{(*first)->path(), (*second)->path()});
  absl::StatusOr<ScalarCurves> curves = ReadScalarCurves(dir);
  REQUIRE(curves.ok());
  CHECK((*curves)["epoch_loss"] == std::map<int64_t, float>{{0, 2.0f}, {1, 0.5f}});

  SECTION("a file that does not open with its version is refused, named") {
    const std::string stray = dir + "/events.out.tfevents.1.stray.1.v2";
    auto records = RecordWriter::Append(stray);
    REQUIRE(records.ok());
    WireWriter event;  // A well-formed event, but no file_version.
    event.Double(1, 1.0);
    event.Varint(2, 3);
    REQUIRE((*records)->Write(event.data()).ok());
    REQUIRE(ReadEventFile(stray).ok());
    curves = ReadScalarCurves(dir);
    CHECK(curves.status().code() == absl::StatusCode::kDataLoss);
    CHECK(curves.status().message().find(stray) != absl::string_view::npos);
    CHECK(curves.status().message().find("file_version") != absl::string_view::npos);
  }
  SECTION("a record cut at a file's end is left out of the curves, not of ReadEventFile") {
    auto records = RecordWriter::Append((*second)->path());
    REQUIRE(records.ok());
    REQUIRE((*records)->Write(std::string(100, 'x')).ok());
    const auto size = fs::file_size((*second)->path());
    fs::resize_file((*second)->path(), size - 10);
    CHECK(absl::IsDataLoss(ReadEventFile((*second)->path()).status()));
    curves = ReadScalarCurves(dir);
    REQUIRE(curves.ok());
    CHECK((*curves)["epoch_loss"] == std::map<int64_t, float>{{0, 2.0f}, {1, 0.5f}});
  }
  SECTION("a directory without event files is NOT_FOUND") {
    CHECK(absl::IsNotFound(ReadScalarCurves(dir + "/nothing").status()));
  }
}

TEST_CASE("a flipped bit or a cut file is found, naming the record", "[events]") {
  const std::string dir = FreshTestDir("events_corrupt");
  auto writer = EventFileWriter::Create(dir);
  REQUIRE(writer.ok());
  REQUIRE((*writer)->WriteScalar("epoch_loss", 0, 1.0f).ok());
  const std::string path = (*writer)->path();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  SECTION("a bit of the data") {
    std::string bad = bytes;
    bad[bad.size() - 6] ^= 0x10;
    std::ofstream(path, std::ios::binary) << bad;
    auto events = ReadEventFile(path);
    REQUIRE(!events.ok());
    CHECK(absl::IsDataLoss(events.status()));
    CHECK(std::string(events.status().message()).find("record 1") != std::string::npos);
    CHECK(std::string(events.status().message()).find("data's CRC") != std::string::npos);
  }
  SECTION("a bit of a length") {
    std::string bad = bytes;
    bad[0] ^= 0x01;
    std::ofstream(path, std::ios::binary) << bad;
    CHECK(absl::IsDataLoss(ReadEventFile(path).status()));
  }
  SECTION("the end of the file") {
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
    auto events = ReadEventFile(path);
    CHECK(absl::IsDataLoss(events.status()));
  }
}

std::string Hex(const std::string& bytes) {
  std::string hex;
  for (unsigned char c : bytes) absl::StrAppendFormat(&hex, "%02x ", c);
  return hex;
}

TEST_CASE("the bytes are protobuf's, by TensorBoard's field numbers", "[events]") {
  // Encodings worked out from the protobuf wire format, independently of the writer.
  WireWriter value;  // Summary.Value{tag: "a", simple_value: 1}
  value.Bytes(1, "a");
  value.Float(2, 1.0f);
  CHECK(Hex(value.data()) == "0a 01 61 15 00 00 80 3f ");
  WireWriter step;
  step.Varint(2, 300);
  CHECK(Hex(step.data()) == "10 ac 02 ");
  WireWriter negative;
  negative.Varint(2, static_cast<uint64_t>(int64_t{-1}));
  CHECK(Hex(negative.data()) == "10 ff ff ff ff ff ff ff ff ff 01 ");
  WireWriter packed;
  packed.PackedDoubles(6, {1.0});
  packed.PackedDoubles(7, {});
  CHECK(Hex(packed.data()) == "32 08 00 00 00 00 00 00 f0 3f 3a 00 ");
  WireWriter version;
  version.Bytes(3, "v");
  CHECK(Hex(version.data()) == "1a 01 76 ");
}

TEST_CASE("histograms leave out NaN and infinities; equal values make one bucket", "[events]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float mixed[] = {nan, 1, -inf, 3, inf, 2};
  Histogram h = Histogram::Of(mixed, 6, 2);
  CHECK(h.num == 3);
  CHECK((h.min == 1 && h.max == 3 && h.sum == 6 && h.sum_squares == 14));
  CHECK(h.bucket == std::vector<double>{1, 2});
  CHECK(h.bucket_limit == std::vector<double>{2, 3});
  const float same[] = {0.5f, 0.5f, 0.5f};
  h = Histogram::Of(same, 3);
  CHECK(h.bucket == std::vector<double>{3});
  CHECK(h.bucket_limit == std::vector<double>{0.5});
  const float only_nan[] = {nan, nan};
  h = Histogram::Of(only_nan, 2);
  CHECK((h.num == 0 && h.bucket.empty()));
  CHECK(Histogram::Of(mixed, 6, 0).bucket.size() == 1);
}

TEST_CASE("the wire reader skips unexpected wire types and refuses bad fields", "[events]") {
  WireWriter w;
  w.Varint(1, 7);  // Field 1 as a varint where a double is expected: skipped.
  w.Double(1, 0.5);
  WireReader r(w.data());
  double wall_time = 0;
  while (r.Next()) {
    if (r.Is(1, kFixed64)) wall_time = r.as_double();
  }
  CHECK(r.ok());
  CHECK(wall_time == 0.5);
  for (const std::string bad : {std::string("\x00\x01", 2),                  // field 0
                                std::string("\x0b", 1),                      // wire type 3
                                std::string("\x80\x80\x80\x80\x10\x00", 6),  // field 2^29
                                std::string("\x12\x05ab", 4)}) {  // longer than the input
    WireReader bad_reader(bad);
    while (bad_reader.Next()) {
    }
    CHECK(!bad_reader.ok());
  }
  WireWriter odd;
  odd.Bytes(6, "1234567");  // 7 bytes: not packed doubles.
  WireReader odd_reader(odd.data());
  REQUIRE(odd_reader.Next());
  std::vector<double> values;
  CHECK(!odd_reader.AppendDoubles(&values));
  CHECK(!odd_reader.ok());
}

TEST_CASE("the wire format reads what it writes, and refuses what is cut", "[events]") {
  WireWriter w;
  w.Varint(2, 300);
  w.Double(1, 0.25);
  w.Float(2, -1.5f);
  w.Bytes(3, "brain");
  WireReader r(w.data());
  REQUIRE(r.Next());
  CHECK((r.field() == 2 && r.varint() == 300));
  REQUIRE(r.Next());
  CHECK((r.field() == 1 && r.as_double() == 0.25));
  REQUIRE(r.Next());
  CHECK((r.field() == 2 && r.as_float() == -1.5f));
  REQUIRE(r.Next());
  CHECK((r.field() == 3 && r.bytes() == "brain"));
  CHECK(!r.Next());
  CHECK(r.ok());
  WireReader cut(absl::string_view(w.data()).substr(0, w.data().size() - 2));
  while (cut.Next()) {
  }
  CHECK(!cut.ok());
}

}  // namespace
}  // namespace ringwork
