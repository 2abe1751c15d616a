// Reads a TFRecord file (io/record_file.h's framing) one record at a time through
// an InputStream: plain, GZIP or ZLIB, as tf.data.TFRecordDataset reads them, in
// bounded memory (the buffers and the largest record). Both CRCs of every record
// are checked.
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, RecordReader::Open(path));
//   std::string record;
//   while (true) {
//     RW_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
//     if (!more) break;
//     ... record holds the bytes of one record ...
//   }
//
// Errors are DATA_LOSS naming the file, the record (from 0) and its byte offset
// (in the uncompressed stream): a CRC that does not match, a file that ends inside
// a record, a length beyond kMaxRecordBytes. NOT_FOUND when the file cannot be opened.
// Threads: one thread uses a reader.
#ifndef RINGWORK_IO_RECORD_READER_H_
#define RINGWORK_IO_RECORD_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "io/input_stream.h"

namespace ringwork {

class RecordReader {
 public:
  // No record is larger: a length beyond it is corruption, not an allocation.
  static constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 30;

  // `compression`: nullopt detects it from the file's first bytes (a valid plain
  // header, else GZIP's magic, else a ZLIB header).
  static absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, std::optional<Compression> compression = std::nullopt,
      size_t buffer_bytes = 256 << 10);

  // The next record into `*record` (its capacity is reused); false at the end.
  absl::StatusOr<bool> Next(std::string* record);
  // Skips the next `count` records, checking their framing but not their data's
  // CRC; false when the file ended first.
  absl::StatusOr<bool> Skip(int64_t count);
  // Records read or skipped so far (a record whose data's CRC failed counts).
  int64_t records() const { return records_; }
  // After an error: whether the records after it can still be read. True when
  // only a record's data failed its CRC (its length was sound, the file goes on
  // past it); false when the framing itself is broken (a length or its CRC, a
  // truncated file, a read that failed).
  bool can_continue() const { return can_continue_; }
  const std::string& path() const { return stream_->path(); }
  Compression compression() const { return stream_->compression(); }

 private:
  explicit RecordReader(std::unique_ptr<InputStream> stream) : stream_(std::move(stream)) {}
  // Reads a record's header; its data's length, or nullopt at a clean end.
  absl::StatusOr<std::optional<uint64_t>> ReadHeader();
  absl::Status Corrupt(int64_t offset, const std::string& what) const;

  std::unique_ptr<InputStream> stream_;
  int64_t records_ = 0;
  bool can_continue_ = true;
  std::string scratch_;  // Skipped records' data.
};

}  // namespace ringwork

#endif  // RINGWORK_IO_RECORD_READER_H_
