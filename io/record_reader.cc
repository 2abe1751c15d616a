#include "io/record_reader.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/record_file.h"

namespace ringwork {
namespace {

uint64_t LittleEndian(const char* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  }
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, std::optional<Compression> compression, size_t buffer_bytes) {
  if (!compression.has_value()) {
    absl::StatusOr<std::unique_ptr<InputStream>> raw =
        InputStream::Open(path, Compression::kNone, 4096);
    if (!raw.ok()) return raw.status();
    char head[12];
    absl::StatusOr<size_t> got = (*raw)->Read(head, sizeof(head));
    if (!got.ok()) return got.status();
    const bool plain_header = *got == sizeof(head) && static_cast<uint32_t>(LittleEndian(
                                                          head + 8, 4)) == MaskedCrc32c(head, 8);
    compression = DetectCompression(absl::string_view(head, *got), plain_header);
  }
  absl::StatusOr<std::unique_ptr<InputStream>> stream =
      InputStream::Open(path, *compression, buffer_bytes);
  if (!stream.ok()) return stream.status();
  return std::unique_ptr<RecordReader>(new RecordReader(std::move(*stream)));
}

absl::Status RecordReader::Corrupt(int64_t offset, const std::string& what) const {
  return absl::DataLossError(absl::StrCat(
      stream_->path(), ": record ", records_, " at byte ", offset,
      stream_->compression() == Compression::kNone ? "" : " (uncompressed)", ": ", what));
}

absl::StatusOr<std::optional<uint64_t>> RecordReader::ReadHeader() {
  const int64_t offset = stream_->position();
  char header[12];
  absl::StatusOr<size_t> got = stream_->Read(header, sizeof(header));
  if (!got.ok()) return got.status();
  if (*got == 0) return std::optional<uint64_t>();
  if (*got < sizeof(header)) return Corrupt(offset, "the file ends inside its header");
  if (static_cast<uint32_t>(LittleEndian(header + 8, 4)) != MaskedCrc32c(header, 8)) {
    return Corrupt(offset, "the length's CRC does not match");
  }
  const uint64_t length = LittleEndian(header, 8);
  if (length > kMaxRecordBytes) {
    return Corrupt(offset,
                   absl::StrCat("a length of ", length, " bytes (at most ", kMaxRecordBytes, ")"));
  }
  return std::optional<uint64_t>(length);
}

absl::StatusOr<bool> RecordReader::Next(std::string* record) {
  const int64_t offset = stream_->position();
  can_continue_ = false;  // Unless all that fails is the data's CRC.
  absl::StatusOr<std::optional<uint64_t>> length = ReadHeader();
  if (!length.ok()) return length.status();
  if (!length->has_value()) return false;
  record->resize(**length + 4);
  absl::StatusOr<size_t> got = stream_->Read(record->data(), record->size());
  if (!got.ok()) return got.status();
  if (*got < record->size()) {
    return Corrupt(offset, absl::StrCat("the file ends inside its ", **length, " bytes of data"));
  }
  const uint32_t crc = static_cast<uint32_t>(LittleEndian(record->data() + **length, 4));
  if (crc != MaskedCrc32c(record->data(), **length)) {
    const absl::Status corrupt = Corrupt(offset, "the data's CRC does not match");
    can_continue_ = true;  // Read past: the next record starts where it should.
    ++records_;
    return corrupt;
  }
  can_continue_ = true;
  record->resize(**length);
  ++records_;
  return true;
}

absl::StatusOr<bool> RecordReader::Skip(int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t offset = stream_->position();
    absl::StatusOr<std::optional<uint64_t>> length = ReadHeader();
    if (!length.ok()) return length.status();
    if (!length->has_value()) return false;
    scratch_.resize(**length + 4);
    absl::StatusOr<size_t> got = stream_->Read(scratch_.data(), scratch_.size());
    if (!got.ok()) return got.status();
    if (*got < scratch_.size()) {
      return Corrupt(offset, absl::StrCat("the file ends inside its ", **length, " bytes of data"));
    }
    ++records_;
  }
  return true;
}

}  // namespace ringwork
