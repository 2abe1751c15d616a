#include "runtime/auth/tls_credentials.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": cannot read it: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", path, ": not a PEM file"));
  }
  return text.str();
}

}  // namespace

absl::StatusOr<TlsCredentials> LoadTlsCredentials(const TlsFiles& files) {
  TlsCredentials tls;
  if (!files.enabled()) {
    tls.server = grpc::InsecureServerCredentials();
    tls.channel = grpc::InsecureChannelCredentials();
    return tls;
  }
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string*>{"--tls_ca", &files.ca},
        {"--tls_cert", &files.cert},
        {"--tls_key", &files.key}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mutual TLS needs --tls_ca, --tls_cert and --tls_key; ", flag, " is missing"));
    }
  }
  absl::StatusOr<std::string> ca = ReadPem("--tls_ca", files.ca);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert = ReadPem("--tls_cert", files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls_key", files.key);
  if (!key.ok()) return key.status();

  grpc::SslServerCredentialsOptions server(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  server.pem_root_certs = *ca;
  server.pem_key_cert_pairs.push_back({*key, *cert});
  tls.server = grpc::SslServerCredentials(server);
  grpc::SslCredentialsOptions channel;
  channel.pem_root_certs = *ca;
  channel.pem_private_key = *key;
  channel.pem_cert_chain = *cert;
  tls.channel = grpc::SslCredentials(channel);
  tls.enabled = true;
  return tls;
}

}  // namespace ringwork
