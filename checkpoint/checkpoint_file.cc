#include "checkpoint/checkpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crash_points.h"
#include "base/crc32c.h"
#include "base/exit_code.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

constexpr char kMagic[8] = {'R', 'W', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr int kMaxRank = 8;
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr size_t kMaxTensors = 1 << 20;
constexpr size_t kMaxNameBytes = 4096;
constexpr DataType kDataTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                                   DataType::kInt32, DataType::kInt64};

uint64_t AlignUp(uint64_t n) { return (n + 63) & ~uint64_t{63}; }

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

absl::Status SystemError(const std::string& path, const char* doing) {
  return CheckpointError(
      absl::StrCat("checkpoint ", path, ": ", doing, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError(path, "write failed");
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadAllAt(int fd, void* data, size_t size, uint64_t offset, const std::string& path) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError(path, "read failed");
    if (n == 0) {
      return CheckpointError(absl::StrCat("checkpoint ", path, ": ended early (truncated?)"));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

bool ParseDataType(const std::string& name, DataType* out) {
  for (DataType t : kDataTypes) {
    if (DataTypeName(t) == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

// Validates manifest fields, naming the JSON path of the first bad one.
class ManifestParser {
 public:
  ManifestParser(const std::string& path, uint64_t data_bytes)
      : path_(path), data_bytes_(data_bytes) {}

  absl::Status Parse(const std::string& text, CheckpointManifest* m) {
    const Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) return Error("manifest", "is not valid JSON");
    if (!root.is_object()) return Error("manifest", "is not a JSON object");
    int64_t version = 0;
    RW_RETURN_IF_ERROR(
        Int(root, "format_version", "manifest.format_version", 0, INT64_MAX, &version));
    if (version != kCheckpointFormatVersion) {
      return Error("manifest.format_version",
                   absl::StrCat("is ", version, ", but this build reads version ",
                                kCheckpointFormatVersion, " only"));
    }
    RW_RETURN_IF_ERROR(Int(root, "step", "manifest.step", 0, INT64_MAX, &m->step));
    RW_RETURN_IF_ERROR(Int(root, "epoch", "manifest.epoch", 0, INT64_MAX, &m->epoch));
    RW_RETURN_IF_ERROR(
        Int(root, "step_in_epoch", "manifest.step_in_epoch", 0, INT64_MAX, &m->step_in_epoch));
    RW_RETURN_IF_ERROR(Bool(root, "final", "manifest.final", &m->final));
    RW_RETURN_IF_ERROR(String(root, "cluster_fingerprint", "manifest.cluster_fingerprint",
                              &m->cluster_fingerprint));
    RW_RETURN_IF_ERROR(
        String(root, "model_fingerprint", "manifest.model_fingerprint", &m->model_fingerprint));
    const auto counters = root.find("counters");
    if (counters == root.end() || !counters->is_object()) {
      return Error("manifest.counters", "is missing or not an object");
    }
    for (const auto& [key, value] : counters->items()) {
      if (!value.is_number_integer()) {
        return Error(absl::StrCat("manifest.counters.", key), "is not an integer");
      }
      m->counters[key] = value.get<int64_t>();
    }
    const auto tensors = root.find("tensors");
    if (tensors == root.end() || !tensors->is_array()) {
      return Error("manifest.tensors", "is missing or not an array");
    }
    if (tensors->size() > kMaxTensors) {
      return Error("manifest.tensors",
                   absl::StrCat("has ", tensors->size(), " entries; the limit is ", kMaxTensors));
    }
    std::set<std::string> names;
    for (size_t i = 0; i < tensors->size(); ++i) {
      const std::string where = absl::StrCat("manifest.tensors[", i, "]");
      CheckpointTensor t;
      RW_RETURN_IF_ERROR(Tensor((*tensors)[i], where, &t));
      if (!names.insert(t.name).second) {
        return Error(where + ".name", absl::StrCat("\"", t.name, "\" appears twice"));
      }
      m->tensors.push_back(std::move(t));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(const std::string& where, const std::string& what) const {
    return CheckpointError(absl::StrCat("checkpoint ", path_, ": ", where, " ", what));
  }

  absl::Status Int(const Json& obj, const char* key, const std::string& where, int64_t min,
                   int64_t max, int64_t* out) const {
    const auto it = obj.find(key);
    if (it == obj.end()) return Error(where, "is missing");
    if (!it->is_number_integer())
      return Error(where, absl::StrCat("is not an integer: ", it->dump()));
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Error(where, absl::StrCat("is out of range: ", it->dump()));
    }
    const int64_t v = it->get<int64_t>();
    if (v < min || v > max) {
      return Error(where, absl::StrCat("is ", v, "; expected ", min, "..", max));
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status Bool(const Json& obj, const char* key, const std::string& where, bool* out) const {
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_boolean()) return Error(where, "is missing or not true/false");
    *out = it->get<bool>();
    return absl::OkStatus();
  }

  absl::Status String(const Json& obj, const char* key, const std::string& where,
                      std::string* out) const {
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_string()) return Error(where, "is missing or not a string");
    *out = it->get<std::string>();
    if (out->size() > kMaxNameBytes) return Error(where, "is too long");
    return absl::OkStatus();
  }

  absl::Status Tensor(const Json& j, const std::string& where, CheckpointTensor* t) const {
    if (!j.is_object()) return Error(where, "is not an object");
    RW_RETURN_IF_ERROR(String(j, "name", where + ".name", &t->name));
    if (t->name.empty()) return Error(where + ".name", "is empty");
    std::string dtype;
    RW_RETURN_IF_ERROR(String(j, "dtype", where + ".dtype", &dtype));
    if (!ParseDataType(dtype, &t->dtype)) {
      return Error(where + ".dtype", absl::StrCat("\"", dtype, "\" is not a known dtype"));
    }
    const auto shape = j.find("shape");
    if (shape == j.end() || !shape->is_array())
      return Error(where + ".shape", "is missing or not an array");
    if (shape->size() > kMaxRank) {
      return Error(where + ".shape",
                   absl::StrCat("has rank ", shape->size(), "; the limit is ", kMaxRank));
    }
    uint64_t elements = 1;
    for (size_t d = 0; d < shape->size(); ++d) {
      const Json& dim = (*shape)[d];
      const std::string at = absl::StrCat(where, ".shape[", d, "]");
      if (!dim.is_number_integer())
        return Error(at, absl::StrCat("is not an integer: ", dim.dump()));
      if (dim.is_number_unsigned() && dim.get<uint64_t>() > static_cast<uint64_t>(kMaxDim)) {
        return Error(at, absl::StrCat("is ", dim.dump(), "; expected 0..", kMaxDim));
      }
      const int64_t v = dim.get<int64_t>();
      if (v < 0 || v > kMaxDim) return Error(at, absl::StrCat("is ", v, "; expected 0..", kMaxDim));
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(v), &elements)) {
        return Error(where + ".shape", "has more elements than fit in 64 bits");
      }
      t->shape.push_back(v);
    }
    uint64_t expected_bytes = 0;
    if (__builtin_mul_overflow(elements, DataTypeSize(t->dtype), &expected_bytes) ||
        expected_bytes > data_bytes_) {
      return Error(
          where, absl::StrCat("(\"", t->name, "\") has shape of ", elements,
                              " elements, more than the file's ", data_bytes_, " data bytes hold"));
    }
    int64_t offset = 0, bytes = 0, crc = 0;
    RW_RETURN_IF_ERROR(Int(j, "offset", where + ".offset", 0, INT64_MAX, &offset));
    RW_RETURN_IF_ERROR(Int(j, "bytes", where + ".bytes", 0, INT64_MAX, &bytes));
    RW_RETURN_IF_ERROR(Int(j, "crc32c", where + ".crc32c", 0, UINT32_MAX, &crc));
    if (static_cast<uint64_t>(bytes) != expected_bytes) {
      return Error(where,
                   absl::StrCat("(\"", t->name, "\") says ", bytes, " bytes, but ",
                                DataTypeName(t->dtype), " x ", elements, " is ", expected_bytes));
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(static_cast<uint64_t>(offset), static_cast<uint64_t>(bytes), &end) ||
        end > data_bytes_) {
      return Error(where, absl::StrCat("(\"", t->name, "\") lies at data bytes [", offset, ", ",
                                       offset, " + ", bytes, "), past the end of the data (",
                                       data_bytes_, " bytes): the file is truncated"));
    }
    t->offset = static_cast<uint64_t>(offset);
    t->bytes = static_cast<uint64_t>(bytes);
    t->crc32c = static_cast<uint32_t>(crc);
    return absl::OkStatus();
  }

  const std::string& path_;
  const uint64_t data_bytes_;
};

std::string ManifestJson(const CheckpointManifest& m) {
  Json tensors = Json::array();
  for (const CheckpointTensor& t : m.tensors) {
    tensors.push_back({{"name", t.name},
                       {"dtype", std::string(DataTypeName(t.dtype))},
                       {"shape", t.shape},
                       {"offset", t.offset},
                       {"bytes", t.bytes},
                       {"crc32c", t.crc32c}});
  }
  Json counters = Json::object();
  for (const auto& [key, value] : m.counters) counters[key] = value;
  const Json root = {{"format_version", kCheckpointFormatVersion},
                     {"step", m.step},
                     {"epoch", m.epoch},
                     {"step_in_epoch", m.step_in_epoch},
                     {"final", m.final},
                     {"cluster_fingerprint", m.cluster_fingerprint},
                     {"model_fingerprint", m.model_fingerprint},
                     {"counters", counters},
                     {"tensors", tensors}};
  return root.dump(1);
}

}  // namespace

int64_t CheckpointTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const CheckpointTensor* CheckpointManifest::Find(const std::string& name) const {
  for (const CheckpointTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

absl::Status WriteCheckpointFile(const std::string& path, const CheckpointManifest& manifest,
                                 const std::vector<TensorData>& tensors) {
  CheckpointManifest m = manifest;
  m.tensors.clear();
  uint64_t offset = 0;
  for (const TensorData& t : tensors) {
    CheckpointTensor entry;
    entry.name = t.name;
    entry.dtype = t.dtype;
    entry.shape = t.shape;
    entry.bytes = static_cast<uint64_t>(entry.elements()) * DataTypeSize(t.dtype);
    entry.offset = entry.bytes == 0 ? 0 : offset;  // Empty tensors take no room.
    entry.crc32c = Crc32c(t.data, entry.bytes);
    if (entry.bytes > 0) offset = AlignUp(offset + entry.bytes);
    m.tensors.push_back(std::move(entry));
  }
  const std::string json = ManifestJson(m);
  uint8_t header[kCheckpointHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof(kMagic));
  PutU32(header + 8, kCheckpointFormatVersion);
  PutU32(header + 12, Crc32c(json.data(), json.size()));
  PutU64(header + 16, json.size());

  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError(path, "cannot create");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  static const uint8_t kZeros[64] = {};
  absl::Status st = WriteAll(fd, header, sizeof(header), path);
  if (st.ok()) st = WriteAll(fd, json.data(), json.size(), path);
  const uint64_t manifest_end = kCheckpointHeaderBytes + json.size();
  if (st.ok()) st = WriteAll(fd, kZeros, AlignUp(manifest_end) - manifest_end, path);
  uint64_t position = 0;  // In the data section; the file never ends in padding.
  for (size_t i = 0; i < tensors.size() && st.ok(); ++i) {
    if (i == tensors.size() / 2) CrashPoint("checkpoint_write");
    const CheckpointTensor& e = m.tensors[i];
    if (e.bytes == 0) continue;
    st = WriteAll(fd, kZeros, e.offset - position, path);
    if (st.ok()) st = WriteAll(fd, tensors[i].data, e.bytes, path);
    position = e.offset + e.bytes;
  }
  if (st.ok() && ::fsync(fd) != 0) st = SystemError(path, "fsync failed");
  return st;
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError(path, "cannot open");
  std::unique_ptr<CheckpointReader> reader(new CheckpointReader(path, fd));
  struct stat st;
  if (::fstat(fd, &st) != 0) return SystemError(path, "cannot stat");
  if (!S_ISREG(st.st_mode))
    return CheckpointError(absl::StrCat("checkpoint ", path, ": not a regular file"));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto error = [&](const std::string& what) {
    return CheckpointError(absl::StrCat("checkpoint ", path, ": ", what));
  };
  if (size < kCheckpointHeaderBytes) {
    return error(absl::StrCat("is ", size, " bytes, shorter than the ", kCheckpointHeaderBytes,
                              "-byte header: truncated"));
  }
  uint8_t header[kCheckpointHeaderBytes];
  absl::Status status = ReadAllAt(fd, header, sizeof(header), 0, path);
  if (!status.ok()) return status;
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return error("is not a Ringwork checkpoint (wrong magic bytes)");
  }
  const uint32_t version = GetU32(header + 8);
  if (version != kCheckpointFormatVersion) {
    return error(absl::StrCat("has format version ", version, ", but this build reads version ",
                              kCheckpointFormatVersion, " only"));
  }
  const uint32_t manifest_crc = GetU32(header + 12);
  const uint64_t manifest_bytes = GetU64(header + 16);
  if (manifest_bytes > kMaxManifestBytes) {
    return error(absl::StrCat("says its manifest is ", manifest_bytes, " bytes; the limit is ",
                              kMaxManifestBytes));
  }
  if (manifest_bytes > size - kCheckpointHeaderBytes) {
    return error(absl::StrCat("says its manifest is ", manifest_bytes, " bytes, but the file is ",
                              size, " bytes: truncated"));
  }
  std::string json(manifest_bytes, '\0');
  status = ReadAllAt(fd, json.data(), json.size(), kCheckpointHeaderBytes, path);
  if (!status.ok()) return status;
  const uint32_t crc = Crc32c(json.data(), json.size());
  if (crc != manifest_crc) {
    return error(absl::StrFormat("manifest CRC32C is 0x%08x, the header says 0x%08x: corrupt", crc,
                                 manifest_crc));
  }
  reader->data_start_ = AlignUp(kCheckpointHeaderBytes + manifest_bytes);
  const uint64_t data_bytes = size > reader->data_start_ ? size - reader->data_start_ : 0;
  ManifestParser parser(path, data_bytes);
  status = parser.Parse(json, &reader->manifest_);
  if (!status.ok()) return status;
  return reader;
}

CheckpointReader::~CheckpointReader() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status CheckpointReader::Read(const CheckpointTensor& tensor, void* out) const {
  absl::Status status = ReadAllAt(fd_, out, tensor.bytes, data_start_ + tensor.offset, path_);
  if (!status.ok()) return status;
  const uint32_t crc = Crc32c(out, tensor.bytes);
  if (crc != tensor.crc32c) {
    return CheckpointError(absl::StrFormat(
        "checkpoint %s: tensor \"%s\": CRC32C is 0x%08x, the manifest says 0x%08x: corrupt", path_,
        tensor.name, crc, tensor.crc32c));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
