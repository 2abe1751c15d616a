#include "base/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::Status WriteFileAtomically(const std::string& path, absl::string_view text,
                                 absl::string_view what) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return absl::InvalidArgumentError(
          absl::StrCat(what, "=", path, ": cannot write ", tmp, ": ", why));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, ": cannot rename ", tmp, ": ", why));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
