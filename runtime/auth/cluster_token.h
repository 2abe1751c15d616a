// The cluster token: a secret every task of one job shares, which authenticates
// every RPC between workers (runtime/auth/rpc_auth.h). Read from the file
// --cluster_token_file names, or from the environment variable
// RINGWORK_CLUSTER_TOKEN; never from a command line, and never printed. `launch`
// makes one per run.
//
//   RW_ASSIGN_OR_RETURN(std::string token, LoadClusterToken(flag_value,
//   std::getenv(kClusterTokenEnv)));
#ifndef RINGWORK_RUNTIME_AUTH_CLUSTER_TOKEN_H_
#define RINGWORK_RUNTIME_AUTH_CLUSTER_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace ringwork {

inline constexpr char kClusterTokenEnv[] = "RINGWORK_CLUSTER_TOKEN";
inline constexpr size_t kMinClusterTokenBytes = 16;

// The token from `token_file` (when not empty) or else `env_value` (may be null);
// "" when neither is given. Surrounding whitespace is dropped. Errors (exit 2):
// an unreadable file, a token shorter than kMinClusterTokenBytes. Warns when the
// file can be read by other users.
absl::StatusOr<std::string> LoadClusterToken(const std::string& token_file, const char* env_value);

// A new random token (64 hex digits from the kernel's random source).
absl::StatusOr<std::string> NewClusterToken();

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_AUTH_CLUSTER_TOKEN_H_
