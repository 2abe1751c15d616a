#include "checkpoint/weights_file.h"

#include <zip.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
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

namespace ringwork {
namespace {

static_assert(sizeof(float) == 4, "float32 weights");

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

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
  const std::string tmp = path + ".tmp";
  std::remove(tmp.c_str());
  int error = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (z == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", tmp, ": ", why));
  }
  std::vector<std::string> members;  // Alive until zip_close writes them.
  members.reserve(tensors.size());
  for (const NamedTensor& t : tensors) {
    members.push_back(NpyBytes(t));
    zip_source_t* source = zip_source_buffer(z, members.back().data(), members.back().size(), 0);
    const zip_int64_t index =
        source == nullptr ? -1
                          : zip_file_add(z, (t.name + ".npy").c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0 || zip_set_file_compression(z, index, ZIP_CM_STORE, 0) != 0) {
      if (source != nullptr && index < 0) zip_source_free(source);
      const std::string why = zip_strerror(z);
      zip_discard(z);
      std::remove(tmp.c_str());
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", t.name, " to ", tmp, ": ", why));
    }
  }
  if (zip_close(z) != 0) {
    const std::string why = zip_strerror(z);
    zip_discard(z);
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", tmp, ": ", why));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
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

// A .npy member: its header's descr, fortran_order and shape, then the values.
absl::Status ParseNpy(const std::string& bytes, const std::string& where, NamedTensor* out) {
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
  if (header_at + header_size > bytes.size()) {
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
  const std::string descr(absl::StripSuffix(absl::StripPrefix(value("descr"), "'"), "'"));
  if (ItemBytes(descr) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": dtype ", descr.empty() ? "(none)" : descr, " (weights are float32 or float64)"));
  }
  if (value("fortran_order") != "False") {
    return absl::InvalidArgumentError(absl::StrCat(where, ": Fortran order (save it C-ordered)"));
  }
  const std::string shape = value("shape");
  if (shape.size() < 2 || shape.front() != '(') {
    return absl::DataLossError(absl::StrCat(where, ": no shape in its header"));
  }
  out->shape.clear();
  for (absl::string_view d :
       absl::StrSplit(shape.substr(1, shape.size() - 2), ',', absl::SkipWhitespace())) {
    int64_t n;
    if (!absl::SimpleAtoi(d, &n) || n < 0) {
      return absl::DataLossError(absl::StrCat(where, ": shape ", shape));
    }
    out->shape.push_back(n);
  }
  const int64_t count = Elements(out->shape);
  const size_t data_at = header_at + header_size;
  if (bytes.size() - data_at != static_cast<size_t>(count) * ItemBytes(descr)) {
    return absl::DataLossError(
        absl::StrCat(where, ": ", bytes.size() - data_at, " bytes of data for shape ", shape));
  }
  return ToFloats(descr, bytes.data() + data_at, count, &out->values);
}

absl::StatusOr<std::vector<NamedTensor>> ReadNpz(const std::string& path) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    if (error == ZIP_ER_NOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return Corrupt(path, "not a zip archive (.npz)");
  }
  std::vector<NamedTensor> out;
  absl::Status status;
  const zip_int64_t entries = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < entries && status.ok(); ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
      status = Corrupt(path, absl::StrCat("member ", i, " cannot be read"));
      break;
    }
    absl::string_view member = st.name;
    if (!absl::ConsumeSuffix(&member, ".npy")) continue;  // Not an array.
    NamedTensor t;
    t.name = std::string(member);
    const std::string where = absl::StrCat(path, ", array ", t.name);
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(z, i, 0);
    const bool read =
        f != nullptr && zip_fread(f, bytes.data(), st.size) == static_cast<zip_int64_t>(st.size);
    if (f != nullptr) zip_fclose(f);
    status = read ? ParseNpy(bytes, where, &t) : absl::DataLossError(where + ": cannot be read");
    if (status.ok()) out.push_back(std::move(t));
  }
  zip_discard(z);
  RW_RETURN_IF_ERROR(status);
  return out;
}

absl::StatusOr<std::vector<NamedTensor>> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  if (bytes.size() < 8) return Corrupt(path, "shorter than a safetensors header");
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > bytes.size() - 8) {
    return Corrupt(path,
                   absl::StrCat("header of ", header_size, " bytes in a file of ", bytes.size()));
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(header_size), nullptr, false);
  if (!header.is_object()) return Corrupt(path, "the header is not a JSON object");
  const uint64_t data_at = 8 + header_size, data_size = bytes.size() - data_at;
  std::vector<NamedTensor> out;
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
      if (!d.is_number_unsigned()) return absl::DataLossError(where + ": a bad shape");
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& offsets = info["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return absl::DataLossError(where + ": bad data_offsets");
    }
    const uint64_t begin = offsets[0], end = offsets[1];
    if (begin > end || end > data_size ||
        end - begin != static_cast<uint64_t>(Elements(t.shape)) * ItemBytes(dtype)) {
      return absl::DataLossError(absl::StrCat(where, ": data_offsets [", begin, ", ", end,
                                              "] do not fit its shape and the file"));
    }
    RW_RETURN_IF_ERROR(
        ToFloats(dtype, bytes.data() + data_at + begin, Elements(t.shape), &t.values));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

WeightsFormat WeightsFormatOf(const std::string& path) {
  if (absl::EndsWith(path, ".npz")) return WeightsFormat::kNpz;
  if (absl::EndsWith(path, ".safetensors")) return WeightsFormat::kSafetensors;
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
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": weights files end in .npz or .safetensors"));
  }
}

}  // namespace ringwork
