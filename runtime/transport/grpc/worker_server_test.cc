// The worker's server over real loopback gRPC, its queue driven by a
// CompletionQueueLoop: Join and Heartbeat reach their handlers as raw bytes, small control messages
// parse, larger ones are refused before parsing; trailing metadata reaches the caller.
#include "runtime/transport/grpc/worker_server.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("Join and Heartbeat reach their handlers; big control messages are refused", "[grpc]") {
  WorkerServer::Handlers handlers;
  handlers.join = [](grpc::ServerContextBase* context, const grpc::ByteBuffer& raw,
                     grpc::ByteBuffer* out) {
    proto::JoinRequest request;
    grpc::Status parsed = ParseSmallMessage(raw, kMaxControlMessageBytes, &request);
    if (!parsed.ok()) return parsed;
    context->AddTrailingMetadata("rw-test", "joined");
    proto::JoinResponse response;
    response.set_rank(request.to_rank());
    response.set_task(request.from_task());
    return SerializeMessage(response, out);
  };
  handlers.heartbeat = [](grpc::ServerContextBase*, const grpc::ByteBuffer& raw,
                          grpc::ByteBuffer* out) {
    proto::HeartbeatRequest request;
    grpc::Status parsed = ParseSmallMessage(raw, kMaxControlMessageBytes, &request);
    if (!parsed.ok()) return parsed;
    proto::HeartbeatResponse response;
    response.set_step(static_cast<int64_t>(request.sequence()) + 1);
    return SerializeMessage(response, out);
  };
  handlers.transfer = [](std::unique_ptr<InboundCall> call) { call->context.TryCancel(); };
  absl::StatusOr<std::unique_ptr<WorkerServer>> server =
      WorkerServer::Start(HostPort{"127.0.0.1", 0}, "worker:0", handlers, 1 << 20, nullptr);
  REQUIRE(server.ok());
  CompletionQueueLoop loop((*server)->cq());
  loop.Start();
  (*server)->StartAccepting();
  auto stub = proto::Worker::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  auto context = [] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return c;
  };
  {
    auto c = context();
    proto::HeartbeatRequest request;
    request.set_sequence(41);
    proto::HeartbeatResponse response;
    const grpc::Status status = stub->Heartbeat(c.get(), request, &response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    CHECK(response.step() == 42);
  }
  {
    auto c = context();
    proto::JoinRequest request;
    request.set_to_rank(3);
    request.set_from_task("worker:1");
    proto::JoinResponse response;
    const grpc::Status status = stub->Join(c.get(), request, &response);
    REQUIRE(status.ok());
    CHECK(response.rank() == 3);
    CHECK(response.task() == "worker:1");
    auto it = c->GetServerTrailingMetadata().find("rw-test");
    REQUIRE(it != c->GetServerTrailingMetadata().end());
    CHECK(std::string(it->second.data(), it->second.size()) == "joined");
  }
  {
    auto c = context();
    proto::JoinRequest request;
    request.set_hostname(std::string(kMaxControlMessageBytes, 'x'));
    proto::JoinResponse response;
    const grpc::Status status = stub->Join(c.get(), request, &response);
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(status.error_message().find("over the limit of 4096 bytes") != std::string::npos);
  }
  (*server)->Shutdown(Deadline::AfterSeconds(2));
  loop.ShutdownAndJoin();
}

}  // namespace
}  // namespace ringwork
