// TFRecord files read one record at a time, plain, GZIP and ZLIB, and what a
// reader says about a corrupt or cut one.
#include "io/record_reader.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "io/record_file.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// `records` framed as TFRecord in a new file `path`.
void WriteRecords(const std::string& path, const std::vector<std::string>& records) {
  std::remove(path.c_str());
  auto writer = RecordWriter::Append(path);
  REQUIRE(writer.ok());
  for (const std::string& r : records) REQUIRE((*writer)->Write(r).ok());
}

// `bytes` deflated with a GZIP (window_bits 15 + 16) or ZLIB (15) wrapper.
std::string Deflate(const std::string& bytes, int window_bits) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<std::string> SomeRecords() {
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) {
    // Sizes across the reader's buffer: empty, small, and larger than 256 KiB.
    const size_t size = i == 0 ? 0 : i == 7 ? (300 << 10) : static_cast<size_t>(i * 37 % 5000);
    std::string r(size, '\0');
    for (size_t k = 0; k < size; ++k) r[k] = static_cast<char>((k * 131 + i) & 0xff);
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<std::string> ReadAll(const std::string& path,
                                 std::optional<Compression> compression = std::nullopt) {
  auto reader = RecordReader::Open(path, compression);
  REQUIRE(reader.ok());
  std::vector<std::string> out;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&record);
    INFO(more.status().message());
    REQUIRE(more.ok());
    if (!*more) break;
    out.push_back(record);
  }
  return out;
}

TEST_CASE("plain, GZIP and ZLIB files give the same records, their compression detected", "[io]") {
  const std::string dir = FreshTestDir("record_reader");
  const std::vector<std::string> records = SomeRecords();
  WriteRecords(dir + "/plain.tfrecord", records);
  const std::string plain = ReadFile(dir + "/plain.tfrecord");
  WriteFile(dir + "/a.tfrecord.gz", Deflate(plain, 15 + 16));
  WriteFile(dir + "/a.tfrecord.zlib", Deflate(plain, 15));
  CHECK(ReadAll(dir + "/plain.tfrecord") == records);
  CHECK(ReadAll(dir + "/a.tfrecord.gz") == records);
  CHECK(ReadAll(dir + "/a.tfrecord.zlib") == records);
  CHECK(ReadAll(dir + "/a.tfrecord.zlib", Compression::kZlib) == records);
  CHECK((*RecordReader::Open(dir + "/a.tfrecord.gz"))->compression() == Compression::kGzip);
  CHECK((*RecordReader::Open(dir + "/a.tfrecord.zlib"))->compression() == Compression::kZlib);
  CHECK((*RecordReader::Open(dir + "/plain.tfrecord"))->compression() == Compression::kNone);
  // Concatenated GZIP members, as `cat a.gz b.gz` makes, read as one file.
  WriteFile(dir + "/two.gz", Deflate(plain, 15 + 16) + Deflate(plain, 15 + 16));
  std::vector<std::string> twice = records;
  twice.insert(twice.end(), records.begin(), records.end());
  CHECK(ReadAll(dir + "/two.gz") == twice);
}

TEST_CASE("a plain file whose first record begins like a GZIP stream stays plain", "[io]") {
  const std::string dir = FreshTestDir("record_reader_lookalike");
  // A length of 0x...8b1f puts GZIP's magic at the file's start.
  WriteRecords(dir + "/a.tfrecord", {std::string(0x8b1f, 'x'), "y"});
  CHECK(ReadFile(dir + "/a.tfrecord").substr(0, 2) == "\x1f\x8b");
  CHECK(ReadAll(dir + "/a.tfrecord").size() == 2);
}

TEST_CASE("Skip passes over records and counts them", "[io]") {
  const std::string dir = FreshTestDir("record_reader_skip");
  const std::vector<std::string> records = SomeRecords();
  WriteRecords(dir + "/a.tfrecord", records);
  auto reader = RecordReader::Open(dir + "/a.tfrecord");
  REQUIRE(reader.ok());
  REQUIRE(*(*reader)->Skip(10));
  std::string record;
  REQUIRE(*(*reader)->Next(&record));
  CHECK(record == records[10]);
  CHECK((*reader)->records() == 11);
  CHECK_FALSE(*(*reader)->Skip(1000));
}

TEST_CASE("a flipped byte or a cut file names the file, the record and its offset", "[io]") {
  const std::string dir = FreshTestDir("record_reader_corrupt");
  WriteRecords(dir + "/a.tfrecord", {"first", "second record", "third"});
  std::string bytes = ReadFile(dir + "/a.tfrecord");
  const size_t second = 12 + 5 + 4;  // Where the second record starts.
  std::string flipped = bytes;
  flipped[second + 12 + 3] ^= 0x40;  // Inside the second record's data.
  WriteFile(dir + "/flipped.tfrecord", flipped);
  auto reader = RecordReader::Open(dir + "/flipped.tfrecord");
  REQUIRE(reader.ok());
  std::string record;
  REQUIRE(*(*reader)->Next(&record));
  absl::StatusOr<bool> bad = (*reader)->Next(&record);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(bad.status().message()) ==
        dir + "/flipped.tfrecord: record 1 at byte 21: the data's CRC does not match");

  std::string length_flipped = bytes;
  length_flipped[second] ^= 0x01;
  WriteFile(dir + "/length.tfrecord", length_flipped);
  reader = RecordReader::Open(dir + "/length.tfrecord");
  REQUIRE(*(*reader)->Next(&record));
  bad = (*reader)->Next(&record);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("record 1 at byte 21: the length's CRC") !=
        std::string::npos);

  WriteFile(dir + "/cut.tfrecord", bytes.substr(0, bytes.size() - 3));
  reader = RecordReader::Open(dir + "/cut.tfrecord");
  REQUIRE(*(*reader)->Next(&record));
  REQUIRE(*(*reader)->Next(&record));
  bad = (*reader)->Next(&record);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("record 2 at byte") != std::string::npos);
  CHECK(std::string(bad.status().message()).find("ends inside its 5 bytes of data") !=
        std::string::npos);

  // A cut GZIP stream, and a missing file.
  WriteFile(dir + "/cut.gz", Deflate(bytes, 15 + 16).substr(0, 20));
  reader = RecordReader::Open(dir + "/cut.gz", Compression::kGzip);
  REQUIRE(reader.ok());
  bad = (*reader)->Next(&record);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(bad.status().message()).find("cut.gz: the gzip stream ends early") !=
        std::string::npos);
  CHECK(RecordReader::Open(dir + "/missing.tfrecord").status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ringwork
