// The gRPC server every ring member runs on its own TF_CONFIG address (never on
// 0.0.0.0). Everything it serves is asynchronous on one completion queue, the one
// the transport's CompletionQueueLoop drives (or a collective thread that borrowed
// it): no gRPC thread of its own polls, so one thread at a time moves every byte of
// the process. It answers Join and Heartbeat (handlers run on that thread, with the
// request still raw bytes: the handler authenticates the call before it parses
// anything, and parses only small messages, ParseSmallMessage; they must be quick
// and must not wait) and accepts the peers' Transfer calls, handing each to a
// callback.
//
//   WorkerServer::Handlers handlers{join_fn, heartbeat_fn, transfer_fn};
//   absl::StatusOr<std::unique_ptr<WorkerServer>> server =
//       WorkerServer::Start(address, "worker:0", handlers, max_message_bytes);
//   (*server)->port();            // the bound port (for port 0)
//   (*server)->StartAccepting();  // once transfer_fn can route calls
//   ...
//   (*server)->Shutdown(deadline);  // before the completion queue is shut down
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_WORKER_SERVER_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_WORKER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "base/deadline.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/config/host_port.h"
#include "runtime/transport/grpc/cq_loop.h"
#include "runtime/transport/grpc/grpc_link.h"

namespace ringwork {

class WorkerServer {
 public:
  // A unary call: the request as received, the response to fill.
  using UnaryHandler = std::function<grpc::Status(grpc::ServerContextBase*, const grpc::ByteBuffer&,
                                                  grpc::ByteBuffer*)>;
  struct Handlers {
    UnaryHandler join;
    UnaryHandler heartbeat;
    // Called on the loop thread for every accepted Transfer call; owns it from then.
    std::function<void(std::unique_ptr<InboundCall>)> transfer;
  };

  // Binds `address` (port 0 picks a free port). Fails with INVALID_ARGUMENT (exit 2)
  // naming the address and `task_name` when it cannot listen there. `bdp_probe`:
  // the flow-control windows it announces (DataStreamChannelSettings).
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(
      const HostPort& address, const std::string& task_name, Handlers handlers,
      size_t max_message_bytes, std::shared_ptr<grpc::ServerCredentials> credentials,
      bool bdp_probe = false);
  ~WorkerServer();
  WorkerServer(const WorkerServer&) = delete;
  WorkerServer& operator=(const WorkerServer&) = delete;

  int port() const { return port_; }
  grpc::ServerCompletionQueue* cq() { return cq_.get(); }
  // Begins answering Join and Heartbeat and accepting Transfer calls (the queue
  // must be driven from here on).
  void StartAccepting();
  // Stops accepting; cancels calls still open at `deadline`. Call before shutting
  // the completion queue down.
  void Shutdown(Deadline deadline);

 private:
  class Service;
  class Acceptor;
  class UnaryCall;
  enum class UnaryMethod { kJoin, kHeartbeat };
  WorkerServer() = default;
  // Requests the next call of Join or Heartbeat (unless shutting down).
  void RequestUnary(UnaryMethod method);
  void RequestUnary_Locked(UnaryMethod method);

  Handlers handlers_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Acceptor> acceptor_;
  int port_ = 0;
  bool shut_down_ = false;
  std::mutex request_mu_;       // Held while requesting or answering a call.
  bool stop_requests_ = false;  // Guarded by request_mu_.
  bool calls_closed_ = false;   // The server shut down: answer nothing. Guarded by request_mu_.
};

// Join and Heartbeat messages are a few hundred bytes; no caller makes the server
// parse more than this.
inline constexpr size_t kMaxControlMessageBytes = 4096;

// Parses `request` into `message` when it is at most `max_bytes` long:
// RESOURCE_EXHAUSTED over it, INVALID_ARGUMENT when it does not parse.
grpc::Status ParseSmallMessage(const grpc::ByteBuffer& request, size_t max_bytes,
                               google::protobuf::Message* message);
// Serializes `message` into `response`.
grpc::Status SerializeMessage(const google::protobuf::Message& message, grpc::ByteBuffer* response);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_WORKER_SERVER_H_
