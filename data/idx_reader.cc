#include "data/idx_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

uint32_t BigEndian32(const std::string& data, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path, size_t max_bytes) {
  gzFile file = gzopen(path.c_str(), "rb");  // Reads plain files unchanged too.
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string data;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", message));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      gzclose(file);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes once decompressed"));
    }
  }
  gzclose(file);
  return data;
}

absl::StatusOr<Tensor> ReadIdxImages(const std::string& path) {
  absl::StatusOr<std::string> data = ReadMaybeGzipped(path);
  if (!data.ok()) return data.status();
  if (data->size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", data->size(), " bytes is too short for an IDX image header"));
  }
  const uint32_t magic = BigEndian32(*data, 0);
  if (magic != 0x00000803) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": magic 0x", absl::Hex(magic),
                                                   " is not an IDX image file's 0x00000803"));
  }
  const uint64_t count = BigEndian32(*data, 4), rows = BigEndian32(*data, 8),
                 cols = BigEndian32(*data, 12);
  const uint64_t expected = 16 + count * rows * cols;
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || expected != data->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header says ", count, " images of ", rows, "x", cols, " (", expected,
                     " bytes) but the file has ", data->size(), " bytes"));
  }
  Tensor images(
      {static_cast<int64_t>(count), static_cast<int64_t>(rows), static_cast<int64_t>(cols), 1});
  const auto* pixels = reinterpret_cast<const unsigned char*>(data->data() + 16);
  for (int64_t i = 0; i < images.size(); ++i) images[i] = pixels[i] * (1.0f / 255.0f);
  return images;
}

absl::StatusOr<std::vector<int32_t>> ReadIdxLabels(const std::string& path) {
  absl::StatusOr<std::string> data = ReadMaybeGzipped(path);
  if (!data.ok()) return data.status();
  if (data->size() < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", data->size(), " bytes is too short for an IDX label header"));
  }
  const uint32_t magic = BigEndian32(*data, 0);
  if (magic != 0x00000801) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": magic 0x", absl::Hex(magic),
                                                   " is not an IDX label file's 0x00000801"));
  }
  const uint64_t count = BigEndian32(*data, 4);
  if (8 + count != data->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header says ", count, " labels but the file has ", data->size() - 8));
  }
  std::vector<int32_t> labels(count);
  for (uint64_t i = 0; i < count; ++i) labels[i] = static_cast<unsigned char>((*data)[8 + i]);
  return labels;
}

}  // namespace ringwork
