// The bytes of a file, read in order through a bounded buffer and decompressed on
// the way when the file is GZIP or ZLIB (as tf.data's compression_type), so that a
// reader of any size of file holds only its buffers in memory.
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in,
//                       InputStream::Open("train-00000.tfrecord.gz", Compression::kGzip));
//   char header[12];
//   RW_ASSIGN_OR_RETURN(size_t got, in->Read(header, sizeof(header)));  // < 12: the end
//
// Errors name the file: NOT_FOUND when it cannot be opened, DATA_LOSS for a
// compressed stream that is corrupt or cut, INTERNAL for a failed read(2).
// Threads: one thread uses a stream.
#ifndef RINGWORK_IO_INPUT_STREAM_H_
#define RINGWORK_IO_INPUT_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringwork {

enum class Compression { kNone, kGzip, kZlib };
absl::string_view CompressionName(Compression compression);  // "none", "gzip", "zlib"
// "", "none", "gzip", "zlib" (TensorFlow's "" and "GZIP", "ZLIB" too, any case).
absl::StatusOr<Compression> ParseCompression(absl::string_view text);

class InputStream {
 public:
  // `buffer_bytes`: how much of the file is read at once (and, compressed, how
  // much compressed input is held).
  static absl::StatusOr<std::unique_ptr<InputStream>> Open(const std::string& path,
                                                           Compression compression,
                                                           size_t buffer_bytes = 256 << 10);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads `size` bytes into `out`; fewer only at the end of the stream (0: at the end).
  absl::StatusOr<size_t> Read(void* out, size_t size);
  // Bytes of (decompressed) data read so far.
  int64_t position() const { return position_; }
  const std::string& path() const { return path_; }
  Compression compression() const { return compression_; }

 private:
  struct Inflater;
  InputStream(std::string path, int fd, Compression compression, size_t buffer_bytes);
  // Refills buffer_ from the file; false at its end.
  absl::StatusOr<bool> Fill();
  absl::StatusOr<size_t> ReadPlain(char* out, size_t size);
  absl::StatusOr<size_t> ReadCompressed(char* out, size_t size);

  const std::string path_;
  const int fd_;
  const Compression compression_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // The unread part of buffer_.
  bool file_ended_ = false, stream_ended_ = false;
  int64_t position_ = 0;
  std::unique_ptr<Inflater> inflater_;
};

// The compression a file's first bytes show: GZIP's magic, else a ZLIB header,
// else none. `plain_header_valid`: those bytes also begin a valid plain record
// (a TFRecord length and its CRC), which then wins (a plain file may start with
// bytes that look like a header).
Compression DetectCompression(absl::string_view first_bytes, bool plain_header_valid);

}  // namespace ringwork

#endif  // RINGWORK_IO_INPUT_STREAM_H_
