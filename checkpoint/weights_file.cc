#include "checkpoint/weights_file.h"

#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "checkpoint/zip_archive.h"

namespace ringwork {
namespace {

static_assert(sizeof(float) == 4, "float32 weights");

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The bytes of `shape` at `item` bytes each; false for a negative dimension or a
// product that overflows (a crafted header must not size an allocation).
bool ByteSize(const std::vector<int64_t>& shape, int item, uint64_t* bytes) {
  uint64_t n = static_cast<uint64_t>(item);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  *bytes = n;
  return true;
}

// Larger tensors are refused as corrupt (a model's largest is far below).
constexpr uint64_t kMaxTensorBytes = uint64_t{16} << 30;

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// One array as a .npy file (format 1.0): magic, header length, a Python dict
// padded with spaces to a 64-byte boundary, then the values.
std::string NpyBytes(const NamedTensor& t) {
  std::vector<std::string> dims;
  for (int64_t d : t.shape) dims.push_back(std::to_string(d));
  const std::string shape = t.shape.size() == 1 ? absl::StrCat("(", dims[0], ",)")
                                                : absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': ", shape, ", }");
  const size_t prefix = 10;  // Magic (6), version (2), header length (2).
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
  return out;
}

absl::Status WriteNpz(const std::vector<NamedTensor>& tensors, const std::string& path) {
  ZipMembers members;
  members.reserve(tensors.size());
  for (const NamedTensor& t : tensors) members.emplace_back(t.name + ".npy", NpyBytes(t));
  return WriteZipArchive(members, path);
}

// safetensors: an 8-byte little-endian header size, the JSON header (padded with
// spaces to 8 bytes), then the tensors' bytes at the offsets it gives.
absl::Status WriteSafetensors(const std::vector<NamedTensor>& tensors, const std::string& path) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}, {"writer", "ringwork"}};
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    const uint64_t bytes = t.values.size() * sizeof(float);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t size = text.size();
  std::memcpy(out.data(), &size, 8);
  out += text;
  for (const NamedTensor& t : tensors) {
    out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
  }
  return WriteFileAtomically(path, out, "weights file");
}

// The values of an array of `count` items of NumPy/safetensors type `dtype`
// ("<f4"/"F32", "<f8"/"F64") at `data` as float32.
absl::Status ToFloats(const std::string& dtype, const char* data, int64_t count,
                      std::vector<float>* out) {
  out->resize(static_cast<size_t>(count));
  if (dtype == "<f4" || dtype == "F32") {
    std::memcpy(out->data(), data, static_cast<size_t>(count) * 4);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, data + i * 8, 8);
      (*out)[static_cast<size_t>(i)] = static_cast<float>(v);
    }
  }
  return absl::OkStatus();
}

int ItemBytes(const std::string& dtype) {
  if (dtype == "<f4" || dtype == "F32") return 4;
  if (dtype == "<f8" || dtype == "F64") return 8;
  return 0;
}

// A .npy member's header (from the first bytes of the member).
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  uint64_t data_at = 0, data_bytes = 0;
};

absl::StatusOr<NpyHeader> ParseNpyHeader(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return absl::DataLossError(absl::StrCat(where, ": not a .npy array"));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_at = 10, header_size = static_cast<unsigned char>(bytes[8]) |
                                       (static_cast<unsigned char>(bytes[9]) << 8);
  if (major >= 2) {
    if (bytes.size() < 12) return absl::DataLossError(absl::StrCat(where, ": truncated header"));
    uint32_t n;
    std::memcpy(&n, bytes.data() + 8, 4);
    header_at = 12;
    header_size = n;
  }
  if (header_size > bytes.size() - header_at) {
    return absl::DataLossError(absl::StrCat(where, ": truncated header"));
  }
  const std::string header = bytes.substr(header_at, header_size);
  auto value = [&](const std::string& key) -> std::string {
    const size_t at = header.find("'" + key + "':");
    if (at == std::string::npos) return "";
    size_t begin = header.find_first_not_of(' ', at + key.size() + 3);
    if (begin == std::string::npos) return "";
    const char open = header[begin];
    const size_t end = open == '('    ? header.find(')', begin) + 1
                       : open == '\'' ? header.find('\'', begin + 1) + 1
                                      : header.find_first_of(",}", begin);
    return end == std::string::npos || end == 0 ? "" : header.substr(begin, end - begin);
  };
  NpyHeader out;
  out.descr = std::string(absl::StripSuffix(absl::StripPrefix(value("descr"), "'"), "'"));
  if (ItemBytes(out.descr) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": dtype ",
                                                   out.descr.empty() ? "(none)" : out.descr,
                                                   " (weights are float32 or float64)"));
  }
  if (value("fortran_order") != "False") {
    return absl::InvalidArgumentError(absl::StrCat(where, ": Fortran order (save it C-ordered)"));
  }
  const std::string shape = value("shape");
  if (shape.size() < 2 || shape.front() != '(') {
    return absl::DataLossError(absl::StrCat(where, ": no shape in its header"));
  }
  for (absl::string_view d :
       absl::StrSplit(shape.substr(1, shape.size() - 2), ',', absl::SkipWhitespace())) {
    int64_t n;
    if (!absl::SimpleAtoi(d, &n) || n < 0) {
      return absl::DataLossError(absl::StrCat(where, ": shape ", shape));
    }
    out.shape.push_back(n);
  }
  if (!ByteSize(out.shape, ItemBytes(out.descr), &out.data_bytes) ||
      out.data_bytes > kMaxTensorBytes) {
    return absl::DataLossError(absl::StrCat(where, ": shape ", shape, " is too large"));
  }
  out.data_at = header_at + header_size;
  return out;
}

// Member `index` of `z` (`size` bytes uncompressed) as a tensor named `name`.
absl::Status ReadNpyMember(zip_t* z, zip_int64_t index, uint64_t size, const std::string& where,
                           NamedTensor* out) {
  zip_file_t* f = zip_fopen_index(z, index, 0);
  if (f == nullptr) return absl::DataLossError(where + ": cannot be read");
  // The header first (at most 64 KiB), then the data it announces, once the
  // member's size agrees with it.
  std::string bytes(std::min<uint64_t>(size, 65536 + 12), '\0');
  absl::Status status;
  if (zip_fread(f, bytes.data(), bytes.size()) != static_cast<zip_int64_t>(bytes.size())) {
    status = absl::DataLossError(where + ": cannot be read");
  }
  absl::StatusOr<NpyHeader> header =
      status.ok() ? ParseNpyHeader(bytes, where) : absl::StatusOr<NpyHeader>(status);
  if (header.ok() && header->data_at + header->data_bytes != size) {
    header = absl::DataLossError(absl::StrCat(where, ": ", size, " bytes, not the ",
                                              header->data_at + header->data_bytes,
                                              " its header and shape make"));
  }
  if (header.ok()) {
    const size_t have = bytes.size();
    bytes.resize(size);
    if (zip_fread(f, bytes.data() + have, size - have) != static_cast<zip_int64_t>(size - have)) {
      header = absl::DataLossError(where + ": cannot be read");
    }
  }
  zip_fclose(f);
  RW_RETURN_IF_ERROR(header.status());
  out->shape = header->shape;
  return ToFloats(header->descr, bytes.data() + header->data_at,
                  static_cast<int64_t>(header->data_bytes / ItemBytes(header->descr)),
                  &out->values);
}

absl::StatusOr<std::vector<NamedTensor>> ReadNpz(const std::string& path) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    if (error == ZIP_ER_NOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (error == ZIP_ER_NOZIP || error == ZIP_ER_INCONS) {
      return Corrupt(path, "not a zip archive (.npz)");
    }
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", why));
  }
  std::vector<NamedTensor> out;
  std::set<std::string> names;
  absl::Status status;
  const zip_int64_t entries = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < entries && status.ok(); ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
        !(st.valid & ZIP_STAT_NAME)) {
      status = Corrupt(path, absl::StrCat("member ", i, " cannot be read"));
      break;
    }
    absl::string_view member = st.name;
    if (!absl::ConsumeSuffix(&member, ".npy")) continue;  // Not an array.
    NamedTensor t;
    t.name = std::string(member);
    const std::string where = absl::StrCat(path, ", array ", t.name);
    if (!names.insert(t.name).second) {
      status = absl::DataLossError(where + ": twice in the archive");
      break;
    }
    try {
      status = ReadNpyMember(z, i, st.size, where, &t);
    } catch (const std::bad_alloc&) {
      status = absl::ResourceExhaustedError(where + ": too large for this machine's memory");
    }
    if (status.ok()) out.push_back(std::move(t));
  }
  zip_discard(z);
  RW_RETURN_IF_ERROR(status);
  return out;
}

absl::StatusOr<std::vector<NamedTensor>> ReadSafetensors(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  if (bytes.size() < 8) return Corrupt(path, "shorter than a safetensors header");
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > bytes.size() - 8 || header_size == 0 || bytes[8] != '{') {
    return Corrupt(path, absl::StrCat("a header of ", header_size,
                                      " bytes (a JSON object) in a file of ", bytes.size()));
  }
  // Every name once (a JSON parser would keep the last of two).
  std::set<std::string> keys;
  bool repeated = false;
  const auto once = [&](int depth, nlohmann::ordered_json::parse_event_t event,
                        nlohmann::ordered_json& parsed) {
    if (depth == 1 && event == nlohmann::ordered_json::parse_event_t::key &&
        !keys.insert(parsed.get<std::string>()).second) {
      repeated = true;
    }
    return true;
  };
  nlohmann::ordered_json header = nlohmann::ordered_json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(header_size), once, false);
  if (!header.is_object()) return Corrupt(path, "the header is not a JSON object");
  if (repeated) return Corrupt(path, "the header names a tensor twice");
  const uint64_t data_at = 8 + header_size, data_size = bytes.size() - data_at;
  std::vector<NamedTensor> out;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = absl::StrCat(path, ", tensor ", name);
    if (!info.is_object() || !info.contains("dtype") || !info["dtype"].is_string() ||
        !info.contains("shape") || !info["shape"].is_array() || !info.contains("data_offsets") ||
        !info["data_offsets"].is_array() || info["data_offsets"].size() != 2) {
      return absl::DataLossError(where + ": needs dtype, shape and data_offsets");
    }
    const std::string dtype = info["dtype"];
    if (ItemBytes(dtype) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": dtype ", dtype, " (weights are F32 or F64)"));
    }
    NamedTensor t;
    t.name = name;
    for (const auto& d : info["shape"]) {
      if (!d.is_number_unsigned() ||
          d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::DataLossError(where + ": a bad shape");
      }
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& offsets = info["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return absl::DataLossError(where + ": bad data_offsets");
    }
    const uint64_t begin = offsets[0], end = offsets[1];
    uint64_t expected = 0;
    if (!ByteSize(t.shape, ItemBytes(dtype), &expected) || begin > end || end > data_size ||
        end - begin != expected) {
      return absl::DataLossError(absl::StrCat(where, ": data_offsets [", begin, ", ", end,
                                              "] do not fit its shape and the file"));
    }
    extents.push_back({begin, end});
    RW_RETURN_IF_ERROR(ToFloats(dtype, bytes.data() + data_at + begin,
                                static_cast<int64_t>(expected / ItemBytes(dtype)), &t.values));
    out.push_back(std::move(t));
  }
  // The spec: the tensors cover the data buffer exactly, without holes or overlaps.
  std::sort(extents.begin(), extents.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : extents) {
    if (begin != covered) return Corrupt(path, "its tensors' data overlap or leave holes");
    covered = end;
  }
  if (covered != data_size) return Corrupt(path, "bytes after its last tensor");
  return out;
}

// TF.js' model.json: its weights manifest names the shards (beside it) and each
// weight's name, shape and dtype, in the order of their bytes.
absl::StatusOr<std::vector<NamedTensor>> ReadTfjs(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  const nlohmann::json model = nlohmann::json::parse(in, nullptr, false);
  if (!model.is_object() || !model.contains("weightsManifest") ||
      !model["weightsManifest"].is_array()) {
    return Corrupt(path, "no weightsManifest (a TF.js layers model's model.json)");
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::vector<NamedTensor> out;
  std::set<std::string> names;
  for (const auto& group : model["weightsManifest"]) {
    if (!group.is_object() || !group.contains("paths") || !group["paths"].is_array() ||
        !group.contains("weights") || !group["weights"].is_array()) {
      return Corrupt(path, "a weightsManifest group needs paths and weights");
    }
    // The shards lie beside model.json: a path that leaves its folder is refused.
    std::vector<std::string> files;
    uint64_t total = 0;
    for (const auto& shard : group["paths"]) {
      if (!shard.is_string()) return Corrupt(path, "a shard path is not a string");
      const std::filesystem::path relative(shard.get<std::string>());
      bool inside = !relative.empty() && relative.is_relative();
      for (const auto& part : relative) inside = inside && part != "..";
      if (!inside) {
        return Corrupt(path, absl::StrCat("shard ", relative.string(), " is not beside it"));
      }
      const std::string file = (std::filesystem::path(dir) / relative).string();
      if (!std::filesystem::is_regular_file(file, error)) {
        return absl::NotFoundError(absl::StrCat(file, ": no such file (a shard ", path, " names)"));
      }
      total += std::filesystem::file_size(file, error);
      files.push_back(file);
    }
    uint64_t declared = 0;
    for (const auto& w : group["weights"]) {
      uint64_t size = 0;
      std::vector<int64_t> shape;
      if (w.is_object() && w.contains("shape") && w["shape"].is_array()) {
        for (const auto& d : w["shape"]) {
          shape.push_back(d.is_number_unsigned() ? d.get<int64_t>() : -1);
        }
      }
      if (!ByteSize(shape, 4, &size) || __builtin_add_overflow(declared, size, &declared)) {
        return Corrupt(path, "a weight's shape is not a list of sizes, or too large");
      }
    }
    if (declared != total) {
      return Corrupt(
          path, absl::StrCat("its weights take ", declared, " bytes; its shards hold ", total));
    }
    std::string bytes;
    for (const std::string& file : files) {
      std::ifstream s(file, std::ios::binary);
      if (!s) return absl::InvalidArgumentError(absl::StrCat(file, ": cannot open"));
      bytes.append(std::istreambuf_iterator<char>(s), std::istreambuf_iterator<char>());
    }
    uint64_t at = 0;
    for (const auto& w : group["weights"]) {
      if (!w.is_object() || !w.contains("name") || !w["name"].is_string() || !w.contains("shape") ||
          !w["shape"].is_array()) {
        return Corrupt(path, "a weight needs a name and a shape");
      }
      NamedTensor t;
      t.name = w["name"].get<std::string>();
      const std::string where = absl::StrCat(path, ", weight ", t.name);
      if (w.value("dtype", "float32") != "float32" || w.contains("quantization")) {
        return absl::InvalidArgumentError(where + ": only unquantized float32 weights");
      }
      for (const auto& d : w["shape"]) {
        if (!d.is_number_unsigned() ||
            d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return absl::DataLossError(where + ": a bad shape");
        }
        t.shape.push_back(d.get<int64_t>());
      }
      uint64_t size = 0;
      if (!ByteSize(t.shape, 4, &size) || size > bytes.size() - at) {
        return absl::DataLossError(where + ": its shards end before it");
      }
      if (!names.insert(t.name).second) return absl::DataLossError(where + ": named twice");
      RW_RETURN_IF_ERROR(
          ToFloats("<f4", bytes.data() + at, static_cast<int64_t>(size / 4), &t.values));
      at += size;
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

WeightsFormat WeightsFormatOf(const std::string& path) {
  if (absl::EndsWith(path, ".npz")) return WeightsFormat::kNpz;
  if (absl::EndsWith(path, ".safetensors")) return WeightsFormat::kSafetensors;
  if (absl::EndsWith(path, ".json")) return WeightsFormat::kTfjs;
  return WeightsFormat::kOther;
}

absl::Status WriteWeightsFile(const std::vector<NamedTensor>& tensors, const std::string& path) {
  std::set<std::string> names;
  for (const NamedTensor& t : tensors) {
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("two weights are named ", t.name));
    }
    if (static_cast<int64_t>(t.values.size()) != Elements(t.shape)) {
      return absl::InvalidArgumentError(absl::StrCat(t.name, ": values do not fill its shape"));
    }
  }
  switch (WeightsFormatOf(path)) {
    case WeightsFormat::kNpz:
      return WriteNpz(tensors, path);
    case WeightsFormat::kSafetensors:
      return WriteSafetensors(tensors, path);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": weights files end in .npz or .safetensors"));
  }
}

absl::StatusOr<std::vector<NamedTensor>> ReadWeightsFile(const std::string& path) {
  switch (WeightsFormatOf(path)) {
    case WeightsFormat::kNpz:
      return ReadNpz(path);
    case WeightsFormat::kSafetensors:
      return ReadSafetensors(path);
    case WeightsFormat::kTfjs:
      try {
        return ReadTfjs(path);
      } catch (const nlohmann::json::exception& e) {  // A value of another type than TF.js writes.
        return Corrupt(path, absl::StrCat("not a TF.js model.json: ", e.what()));
      }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": weights files end in .npz or .safetensors"));
  }
}

absl::Status WriteNpyFile(const NamedTensor& tensor, const std::string& path) {
  if (static_cast<int64_t>(tensor.values.size()) != Elements(tensor.shape)) {
    return absl::InvalidArgumentError(absl::StrCat(tensor.name, ": values do not fill its shape"));
  }
  return WriteFileAtomically(path, NpyBytes(tensor), path);
}

}  // namespace ringwork
