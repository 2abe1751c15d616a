// TFRecord framing, the container of TensorBoard's event files: each record is
//
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
//   data | uint32 masked CRC32C of the data
//
// where masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. The writer only
// appends, each record with one write(2): a reader (TensorBoard) sees it at once,
// and a killed writer leaves at most its last record cut. The reader checks both
// CRCs of every record.
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> w, RecordWriter::Append(path));
//   RW_RETURN_IF_ERROR(w->Write(bytes));
//   RW_ASSIGN_OR_RETURN(std::vector<std::string> records, ReadRecords(path));
#ifndef RINGWORK_IO_RECORD_FILE_H_
#define RINGWORK_IO_RECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

uint32_t MaskedCrc32c(const void* data, size_t size);

class RecordWriter {
 public:
  // Opens `path` for appending (created when missing).
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Append(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  absl::Status Write(const std::string& data);
  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

enum class CutTail {
  kRefuse,  // A file that ends inside a record is DATA_LOSS.
  kIgnore,  // ... has the records before it (a file being written, or a killed writer's).
};

// Every record of `path`. DATA_LOSS naming the record and offset when a CRC does
// not match, or (kRefuse) the file ends inside a record; NOT_FOUND when unreadable.
absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path,
                                                     CutTail cut_tail = CutTail::kRefuse);

}  // namespace ringwork

#endif  // RINGWORK_IO_RECORD_FILE_H_
