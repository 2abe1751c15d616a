#include "runtime/transport/grpc/worker_server.h"

#include <chrono>

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {

class WorkerServer::Service final
    : public proto::Worker::WithRawCallbackMethod_Join<
          proto::Worker::WithRawCallbackMethod_Heartbeat<
              proto::Worker::WithRawMethod_Transfer<proto::Worker::Service>>> {
 public:
  explicit Service(const Handlers* handlers) : handlers_(handlers) {}

  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(handlers_->join(context, *request, response));
    return reactor;
  }
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(handlers_->heartbeat(context, *request, response));
    return reactor;
  }

 private:
  const Handlers* handlers_;  // Not owned.
};

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
  return grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(
      message, response, &own);
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
    service_->RequestTransfer(&pending_->context, &pending_->reader, cq_, cq_, this);
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
  Service* service_;                   // Not owned.
  grpc::ServerCompletionQueue* cq_;    // Not owned.
  Handlers handlers_;
  std::mutex mu_;
  std::condition_variable done_;
  std::unique_ptr<InboundCall> pending_;  // Guarded by mu_.
  bool outstanding_ = false;              // Guarded by mu_.
  bool stopped_ = false;                  // Guarded by mu_.
};

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(
    const HostPort& address, const std::string& task_name, Handlers handlers,
    size_t max_message_bytes, std::shared_ptr<grpc::ServerCredentials> credentials) {
  std::unique_ptr<WorkerServer> server(new WorkerServer());
  server->handlers_ = handlers;
  server->service_ = std::make_unique<Service>(&server->handlers_);
  grpc::ServerBuilder builder;
  int port = 0;
  // Only this task's own address: never every interface.
  builder.AddListeningPort(address.ToString(),
                           credentials != nullptr ? credentials : grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  for (const auto& [key, value] : DataStreamChannelSettings()) {
    builder.AddChannelArgument(key, value);
  }
  // gRPC would share the port with another process (SO_REUSEPORT): a second worker
  // with the same address would then receive half the connections. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
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
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot listen on ", address.ToString(), " (the TF_CONFIG address of ", task_name,
        "): the port is in use, or the address is not one of this host's"));
  }
  server->port_ = port;
  server->acceptor_ =
      std::make_unique<Acceptor>(server->service_.get(), server->cq_.get(), std::move(handlers));
  return server;
}

WorkerServer::~WorkerServer() { Shutdown(Deadline::AfterSeconds(5)); }

void WorkerServer::StartAccepting() { acceptor_->Request(); }

void WorkerServer::Shutdown(Deadline deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  if (acceptor_ != nullptr) acceptor_->Stop();
  if (server_ != nullptr) server_->Shutdown(ToSystemTime(deadline));
  if (acceptor_ != nullptr) acceptor_->Wait(Deadline::AfterSeconds(5));
}

}  // namespace ringwork
