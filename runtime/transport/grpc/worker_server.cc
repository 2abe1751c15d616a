#include "runtime/transport/grpc/worker_server.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {

class WorkerServer::Service final
    : public proto::Worker::WithRawMethod_Join<proto::Worker::WithRawMethod_Heartbeat<
          proto::Worker::WithRawMethod_Transfer<proto::Worker::Service>>> {};

// One Join or Heartbeat call, served on the completion queue: requested, handled
// on the thread that delivers its arrival (the queue's loop thread, or a collective
// thread that borrowed the queue), answered, then freed when the answer is sent.
// The next call of the method is requested before the handler runs.
class WorkerServer::UnaryCall : public CqTag {
 public:
  using Method = UnaryMethod;
  UnaryCall(WorkerServer* server, Method method) : server_(server), method_(method) {}

  // Requests the call; called with server_->request_mu_ held.
  void Request() {
    grpc::ServerCompletionQueue* cq = server_->cq_.get();
    if (method_ == Method::kJoin) {
      server_->service_->RequestJoin(&context_, &request_, &responder_, cq, cq, this);
    } else {
      server_->service_->RequestHeartbeat(&context_, &request_, &responder_, cq, cq, this);
    }
  }

  void OnEvent(bool ok) override {
    if (answered_ || !ok) {  // The answer went out, or the server is shutting down.
      delete this;
      return;
    }
    // Under request_mu_: once the server has shut down, the queue may be shut down
    // too, and nothing may be started on it (not even this call's answer).
    std::unique_lock<std::mutex> lock(server_->request_mu_);
    if (server_->calls_closed_) {
      lock.unlock();
      delete this;
      return;
    }
    server_->RequestUnary_Locked(method_);
    const WorkerServer::UnaryHandler& handler =
        method_ == Method::kJoin ? server_->handlers_.join : server_->handlers_.heartbeat;
    grpc::ByteBuffer response;
    const grpc::Status status = handler(&context_, request_, &response);
    answered_ = true;
    if (status.ok()) {
      responder_.Finish(response, status, this);
    } else {
      responder_.FinishWithError(status, this);
    }
  }

 private:
  WorkerServer* const server_;  // Not owned.
  const Method method_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder_{&context_};
  bool answered_ = false;
};

void WorkerServer::RequestUnary(UnaryMethod method) {
  std::lock_guard<std::mutex> lock(request_mu_);
  RequestUnary_Locked(method);
}

void WorkerServer::RequestUnary_Locked(UnaryMethod method) {
  if (stop_requests_) return;
  (new UnaryCall(this, method))->Request();
}

grpc::Status ParseSmallMessage(const grpc::ByteBuffer& request, size_t max_bytes,
                               google::protobuf::Message* message) {
  if (request.Length() > max_bytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("a ", message->GetTypeName(), " of ", request.Length(),
                                     " bytes is over the limit of ", max_bytes, " bytes"));
  }
  grpc::ByteBuffer copy(request);  // Shares the slices; Deserialize consumes them.
  grpc::Status status =
      grpc::GenericDeserialize<grpc::ProtoBufferReader, google::protobuf::Message>(&copy, message);
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("not a valid ", message->GetTypeName()));
  }
  return grpc::Status::OK;
}

grpc::Status SerializeMessage(const google::protobuf::Message& message,
                              grpc::ByteBuffer* response) {
  bool own = false;
  return grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(message,
                                                                                    response, &own);
}

// Keeps one RequestTransfer outstanding; hands every accepted call on.
class WorkerServer::Acceptor : public CqTag {
 public:
  Acceptor(Service* service, grpc::ServerCompletionQueue* cq, Handlers handlers)
      : service_(service), cq_(cq), handlers_(std::move(handlers)) {}

  void Request() {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    pending_ = std::make_unique<InboundCall>();
    outstanding_ = true;
    service_->RequestTransfer(&pending_->context, &pending_->stream, cq_, cq_, this);
  }
  void OnEvent(bool ok) override {
    std::unique_ptr<InboundCall> call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      outstanding_ = false;
      call = std::move(pending_);
      if (!ok) stopped_ = true;  // The server is shutting down.
    }
    done_.notify_all();
    if (!ok) return;
    handlers_.transfer(std::move(call));
    Request();
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  void Wait(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    while (outstanding_ && !deadline.Expired()) {
      done_.wait_for(lock, std::chrono::milliseconds(10));
    }
  }

 private:
  Service* service_;                 // Not owned.
  grpc::ServerCompletionQueue* cq_;  // Not owned.
  Handlers handlers_;
  std::mutex mu_;
  std::condition_variable done_;
  std::unique_ptr<InboundCall> pending_;  // Guarded by mu_.
  bool outstanding_ = false;              // Guarded by mu_.
  bool stopped_ = false;                  // Guarded by mu_.
};

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(
    const HostPort& address, const std::string& task_name, Handlers handlers,
    size_t max_message_bytes, std::shared_ptr<grpc::ServerCredentials> credentials,
    bool bdp_probe) {
  std::unique_ptr<WorkerServer> server(new WorkerServer());
  server->handlers_ = handlers;
  server->service_ = std::make_unique<Service>();
  grpc::ServerBuilder builder;
  int port = 0;
  // Only this task's own address: never every interface.
  builder.AddListeningPort(address.ToString(),
                           credentials != nullptr ? credentials : grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  for (const auto& [key, value] : DataStreamChannelSettings(bdp_probe)) {
    builder.AddChannelArgument(key, value);
  }
  // gRPC would share the port with another process (SO_REUSEPORT): a second worker
  // with the same address would then receive half the connections. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // The server writes frames from the caller's buffers (a peer's data call), and a
  // write completes once its bytes are in the socket: no zero-copy sends, which
  // would read the buffer later (as on the channels, worker_runtime.cc).
  builder.AddChannelArgument(GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED, 0);
  server->cq_ = builder.AddCompletionQueue();
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    // Tear down what was built so no thread is left behind.
    if (server->server_ != nullptr) server->server_->Shutdown();
    server->cq_->Shutdown();
    void* tag;
    bool ok;
    while (server->cq_->Next(&tag, &ok)) {
    }
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", address.ToString(), " (the TF_CONFIG address of ",
                     task_name, "): the port is in use, or the address is not one of this host's"));
  }
  server->port_ = port;
  server->acceptor_ =
      std::make_unique<Acceptor>(server->service_.get(), server->cq_.get(), std::move(handlers));
  return server;
}

WorkerServer::~WorkerServer() { Shutdown(Deadline::AfterSeconds(5)); }

void WorkerServer::StartAccepting() {
  RequestUnary(UnaryMethod::kJoin);
  RequestUnary(UnaryMethod::kHeartbeat);
  acceptor_->Request();
}

void WorkerServer::Shutdown(Deadline deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  if (acceptor_ != nullptr) acceptor_->Stop();
  {
    // No call is requested from here on: the queue may be shut down after this.
    std::lock_guard<std::mutex> lock(request_mu_);
    stop_requests_ = true;
  }
  if (server_ != nullptr) server_->Shutdown(ToSystemTime(deadline));
  {
    // Calls matched before the shutdown and not yet answered are dropped unanswered
    // (the server cancelled them): the queue goes next.
    std::lock_guard<std::mutex> lock(request_mu_);
    calls_closed_ = true;
  }
  if (acceptor_ != nullptr) acceptor_->Wait(Deadline::AfterSeconds(5));
}

}  // namespace ringwork
