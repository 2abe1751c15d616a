#include "runtime/auth/cluster_token.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace ringwork {

absl::StatusOr<std::string> LoadClusterToken(const std::string& token_file, const char* env_value) {
  std::string token;
  std::string source;
  if (!token_file.empty()) {
    std::ifstream in(token_file, std::ios::binary);
    if (!in) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster_token_file=", token_file,
                                                     ": cannot read it: ", std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    token = text.str();
    source = absl::StrCat("--cluster_token_file=", token_file);
    struct stat st;
    if (::stat(token_file.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
      RW_LOG(WARNING) << source << " can be read by other users; chmod 600 it";
    }
  } else if (env_value != nullptr && *env_value != '\0') {
    token = env_value;
    source = kClusterTokenEnv;
  } else {
    return std::string();
  }
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.size() < kMinClusterTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the cluster token has ", token.size(), " characters; use at least ",
                     kMinClusterTokenBytes, " (e.g. `openssl rand -hex 32`)"));
  }
  return token;
}

absl::StatusOr<std::string> NewClusterToken() {
  char bytes[32];
  size_t done = 0;
  while (done < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + done, sizeof(bytes) - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(absl::string_view(bytes, sizeof(bytes)));
}

}  // namespace ringwork
