#include "io/input_stream.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ringwork {

absl::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZlib:
      return "zlib";
  }
  return "invalid";
}

absl::StatusOr<Compression> ParseCompression(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower == "none") return Compression::kNone;
  if (lower == "gzip") return Compression::kGzip;
  if (lower == "zlib") return Compression::kZlib;
  return absl::InvalidArgumentError(
      absl::StrCat("compression \"", text, "\": expected none, gzip or zlib"));
}

Compression DetectCompression(absl::string_view first_bytes, bool plain_header_valid) {
  if (plain_header_valid) return Compression::kNone;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(first_bytes[i]); };
  if (first_bytes.size() >= 2 && byte(0) == 0x1f && byte(1) == 0x8b) return Compression::kGzip;
  // RFC 1950: deflate (CM 8) with a window of at most 32 KiB, and a header check.
  if (first_bytes.size() >= 2 && (byte(0) & 0x0f) == 8 && (byte(0) >> 4) <= 7 &&
      (byte(0) * 256 + byte(1)) % 31 == 0) {
    return Compression::kZlib;
  }
  return Compression::kNone;
}

struct InputStream::Inflater {
  z_stream z{};
  bool initialized = false;
  ~Inflater() {
    if (initialized) inflateEnd(&z);
  }
};

InputStream::InputStream(std::string path, int fd, Compression compression, size_t buffer_bytes)
    : path_(std::move(path)),
      fd_(fd),
      compression_(compression),
      buffer_(std::max<size_t>(buffer_bytes, 4096)) {}

InputStream::~InputStream() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<InputStream>> InputStream::Open(const std::string& path,
                                                               Compression compression,
                                                               size_t buffer_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<InputStream> stream(new InputStream(path, fd, compression, buffer_bytes));
  if (compression != Compression::kNone) {
    stream->inflater_ = std::make_unique<Inflater>();
    // 15: the largest window; + 16: a GZIP header and trailer instead of ZLIB's.
    const int window_bits = compression == Compression::kGzip ? 15 + 16 : 15;
    if (inflateInit2(&stream->inflater_->z, window_bits) != Z_OK) {
      return absl::InternalError(absl::StrCat(path, ": cannot start zlib's inflate"));
    }
    stream->inflater_->initialized = true;
  }
  return stream;
}

absl::StatusOr<bool> InputStream::Fill() {
  if (file_ended_) return false;
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::InternalError(absl::StrCat("cannot read ", path_, ": ", std::strerror(errno)));
    }
    begin_ = 0;
    end_ = static_cast<size_t>(n);
    if (n == 0) file_ended_ = true;
    return n > 0;
  }
}

absl::StatusOr<size_t> InputStream::Read(void* out, size_t size) {
  absl::StatusOr<size_t> got = compression_ == Compression::kNone
                                   ? ReadPlain(static_cast<char*>(out), size)
                                   : ReadCompressed(static_cast<char*>(out), size);
  if (got.ok()) position_ += static_cast<int64_t>(*got);
  return got;
}

absl::StatusOr<size_t> InputStream::ReadPlain(char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (begin_ == end_) {
      // A large read skips the buffer: the bytes go straight where they are wanted.
      if (size - done >= buffer_.size() && !file_ended_) {
        const ssize_t n = ::read(fd_, out + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          return absl::InternalError(
              absl::StrCat("cannot read ", path_, ": ", std::strerror(errno)));
        }
        if (n == 0) {
          file_ended_ = true;
          break;
        }
        done += static_cast<size_t>(n);
        continue;
      }
      absl::StatusOr<bool> filled = Fill();
      if (!filled.ok()) return filled.status();
      if (!*filled) break;
    }
    const size_t take = std::min(size - done, end_ - begin_);
    std::memcpy(out + done, buffer_.data() + begin_, take);
    begin_ += take;
    done += take;
  }
  return done;
}

absl::StatusOr<size_t> InputStream::ReadCompressed(char* out, size_t size) {
  z_stream& z = inflater_->z;
  size_t done = 0;
  while (done < size && !stream_ended_) {
    if (begin_ == end_) {
      absl::StatusOr<bool> filled = Fill();
      if (!filled.ok()) return filled.status();
      if (!*filled) {
        return absl::DataLossError(absl::StrCat(
            path_, ": the ", CompressionName(compression_), " stream ends early (cut after ",
            position_ + static_cast<int64_t>(done), " uncompressed bytes)"));
      }
    }
    z.next_in = reinterpret_cast<Bytef*>(buffer_.data() + begin_);
    z.avail_in = static_cast<uInt>(end_ - begin_);
    z.next_out = reinterpret_cast<Bytef*>(out + done);
    z.avail_out = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
    const uInt out_before = z.avail_out;
    const int result = inflate(&z, Z_NO_FLUSH);
    begin_ = end_ - z.avail_in;
    done += out_before - z.avail_out;
    if (result == Z_STREAM_END) {
      // Concatenated GZIP members (as `cat a.gz b.gz` makes) go on as one stream.
      if (compression_ == Compression::kGzip && (begin_ < end_ || Fill().value_or(false))) {
        inflateReset(&z);
        continue;
      }
      stream_ended_ = true;
    } else if (result != Z_OK && result != Z_BUF_ERROR) {
      return absl::DataLossError(
          absl::StrCat(path_, ": corrupt ", CompressionName(compression_), " data after ",
                       position_ + static_cast<int64_t>(done),
                       " uncompressed bytes (zlib: ", z.msg != nullptr ? z.msg : "error", ")"));
    }
  }
  return done;
}

}  // namespace ringwork
