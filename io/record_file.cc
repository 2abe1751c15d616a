#include "io/record_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/crc32c.h"

namespace ringwork {
namespace {

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(const char* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  return value;
}

}  // namespace

uint32_t MaskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = Crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Append(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", path, " for appending: ", std::strerror(errno)));
  }
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, fd));
}

RecordWriter::~RecordWriter() { ::close(fd_); }

absl::Status RecordWriter::Write(const std::string& data) {
  std::string frame;
  frame.reserve(data.size() + 16);
  PutLittleEndian(data.size(), 8, &frame);
  PutLittleEndian(MaskedCrc32c(frame.data(), 8), 4, &frame);
  frame += data;
  PutLittleEndian(MaskedCrc32c(data.data(), data.size()), 4, &frame);
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(absl::StrCat("cannot write ", path_, ": ",
                                              n < 0 ? std::strerror(errno) : "no space written"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path, CutTail cut_tail) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    auto corrupt = [&](const std::string& what) {
      return absl::DataLossError(
          absl::StrCat(path, ": record ", records.size(), " at byte ", at, ": ", what));
    };
    const bool ignore_cut = cut_tail == CutTail::kIgnore;
    if (bytes.size() - at < 12) {
      if (ignore_cut) break;
      return corrupt("the file ends inside its header");
    }
    const uint64_t length = GetLittleEndian(bytes.data() + at, 8);
    if (static_cast<uint32_t>(GetLittleEndian(bytes.data() + at + 8, 4)) !=
        MaskedCrc32c(bytes.data() + at, 8)) {
      return corrupt("the length's CRC does not match");
    }
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) {
      if (ignore_cut) break;
      return corrupt(absl::StrCat("the file ends inside its ", length, " bytes of data"));
    }
    const char* data = bytes.data() + at + 12;
    if (static_cast<uint32_t>(GetLittleEndian(data + length, 4)) != MaskedCrc32c(data, length)) {
      return corrupt("the data's CRC does not match");
    }
    records.emplace_back(data, length);
    at += 12 + length + 4;
  }
  return records;
}

}  // namespace ringwork
