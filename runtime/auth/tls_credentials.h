// Optional mutual TLS between workers, with gRPC's SSL credentials: each worker
// presents its certificate (--tls_cert, --tls_key) and accepts only peers whose
// certificate the CA (--tls_ca) signed, in both directions. Peers are reached by
// their TF_CONFIG host names, which their certificates must name (subjectAltName).
// Without the flags, connections are plaintext. Shared memory between workers on
// one host does not go through the network and is unaffected.
//
//   RW_ASSIGN_OR_RETURN(TlsCredentials tls, LoadTlsCredentials({ca, cert, key}));
//   builder.AddListeningPort(address, tls.server);
//   grpc::CreateCustomChannel(target, tls.channel, args);
#ifndef RINGWORK_RUNTIME_AUTH_TLS_CREDENTIALS_H_
#define RINGWORK_RUNTIME_AUTH_TLS_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ringwork {

struct TlsFiles {
  std::string ca;    // PEM: the CA that signs every worker's certificate.
  std::string cert;  // PEM: this worker's certificate (chain).
  std::string key;   // PEM: its private key.
  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

struct TlsCredentials {
  bool enabled = false;
  std::shared_ptr<grpc::ServerCredentials> server;
  std::shared_ptr<grpc::ChannelCredentials> channel;
};

// Plaintext credentials when no file is given; mutual TLS when all three are.
// Errors (exit 2): only some given, a file unreadable or not PEM.
absl::StatusOr<TlsCredentials> LoadTlsCredentials(const TlsFiles& files);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_AUTH_TLS_CREDENTIALS_H_
