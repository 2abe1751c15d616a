#include "checkpoint/zip_archive.h"

#include <zip.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"

namespace ringwork {
namespace {

std::string ZipErrorText(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  const std::string why = zip_error_strerror(&e);
  zip_error_fini(&e);
  return why;
}

absl::Status Fail(zip_t* z, const std::string& tmp, const std::string& what) {
  const std::string why = zip_strerror(z);
  zip_discard(z);
  std::remove(tmp.c_str());
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

}  // namespace

absl::Status WriteZipArchive(const ZipMembers& members, const std::string& path) {
  if (members.empty()) {
    // libzip writes no file for an empty archive: its end record alone.
    return WriteFileAtomically(path, std::string("PK\x05\x06", 4) + std::string(18, '\0'),
                               "zip archive");
  }
  const std::string tmp = path + ".tmp";
  std::remove(tmp.c_str());
  int error = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (z == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", tmp, ": ", ZipErrorText(error)));
  }
  for (const auto& [name, bytes] : members) {
    // zip_close reads the buffers: `members` outlives it.
    zip_source_t* source = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t index =
        source == nullptr ? -1 : zip_file_add(z, name.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0 && source != nullptr) zip_source_free(source);
    if (index < 0 || zip_set_file_compression(z, index, ZIP_CM_STORE, 0) != 0) {
      return Fail(z, tmp, absl::StrCat("cannot write ", name, " to ", tmp));
    }
  }
  if (zip_close(z) != 0) return Fail(z, tmp, absl::StrCat("cannot write ", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadZipMember(const std::string& path, const std::string& name) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    if (error == ZIP_ER_NOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (error == ZIP_ER_NOZIP || error == ZIP_ER_INCONS) {
      return absl::DataLossError(absl::StrCat(path, ": not a zip archive"));
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", ZipErrorText(error)));
  }
  const std::string where = absl::StrCat(path, ", member ", name);
  // Deflate inflates at most about 1032:1: a member that claims more than that
  // of the whole archive (or over 16 GiB) is refused before it is read.
  std::error_code size_error;
  const uint64_t archive_bytes = std::filesystem::file_size(path, size_error);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, name.c_str(), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
      (st.size > (uint64_t{16} << 30) || (!size_error && st.size > 1100 * archive_bytes + 4096))) {
    zip_discard(z);
    return absl::DataLossError(
        absl::StrCat(where, ": claims ", st.size, " bytes, more than the archive can hold"));
  }
  const uint64_t declared = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (f == nullptr) {
    const bool missing = zip_get_error(z)->zip_err == ZIP_ER_NOENT;
    zip_discard(z);
    if (missing) return absl::NotFoundError(where + ": not in the archive");
    return absl::DataLossError(where + ": cannot be read");
  }
  // In pieces, never sized by what the archive claims: a small file cannot
  // make this allocate much more than it inflates to.
  std::string out;
  char piece[1 << 16];
  zip_int64_t got = 0;
  // No further than the member's declared size.
  while (out.size() <= declared && (got = zip_fread(f, piece, sizeof(piece))) > 0) {
    out.append(piece, static_cast<size_t>(got));
  }
  zip_fclose(f);
  zip_discard(z);
  if (got < 0 || out.size() != declared) {
    return absl::DataLossError(where + ": cannot be read (damaged or truncated)");
  }
  return out;
}

}  // namespace ringwork
