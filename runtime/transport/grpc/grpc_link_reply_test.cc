// The lower rank of a pair reads the peer's frames from the answers on the call it
// opened (grpc_link.h), so it takes them only from a server that proves to be the
// peer: metadata signed for this process (RpcAuth, RpcMethod::kTransferReply) by
// the peer's rank and incarnation that joined. These tests open a real GrpcLink to
// a real gRPC server playing the peer, which answers with one frame after various
// proofs, or ends the call with an abort's cause (believed only from the proven
// peer, on the lower rank's data call and the higher rank's control call alike).
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/transport/grpc/cq_loop.h"
#include "runtime/transport/grpc/grpc_link.h"
#include "runtime/transport/transport.h"

namespace ringwork {
namespace {

constexpr char kToken[] = "reply-test-token-0123456789abcdef";
constexpr char kFingerprint[] = "reply-test-cluster";
constexpr uint64_t kOwnIncarnation = 55;   // The lower rank, rank 0: the link's side.
constexpr uint64_t kPeerIncarnation = 77;  // Rank 1, as it joined.
constexpr int kCount = 4;

CollectiveInfo Info() {
  CollectiveInfo info;
  info.kind = CollectiveKind::kBroadcast;
  info.count = kCount;
  info.root = 1;
  return info;
}

// A server at the peer's address. It answers the first call with `metadata`,
// then one frame of {1, 2, 3, 4} and waits for the caller to end its half; with
// `abort_cause` it sends no frame and ends the call at once with that cause,
// marked as an abort.
class FakePeer {
 public:
  FakePeer(CallMetadata metadata, std::string abort_cause)
      : metadata_(std::move(metadata)), abort_cause_(std::move(abort_cause)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterAsyncGenericService(&service_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakePeer() {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    // The answer may still post its Finish: the queue stays open until it is done.
    while (!answered_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cq_->Shutdown();
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  // Waits for the one operation outstanding; false once the queue shut down.
  bool Await(bool* ok) {
    void* tag = nullptr;
    return cq_->Next(&tag, ok);
  }
  void Serve() {
    grpc::GenericServerContext context;
    grpc::GenericServerAsyncReaderWriter stream(&context);
    bool ok = false;
    service_.RequestCall(&context, &stream, cq_.get(), cq_.get(), this);
    if (Await(&ok) && ok) Answer(&context, &stream);
    answered_.store(true);
    while (Await(&ok)) {
    }
  }
  void Answer(grpc::GenericServerContext* context, grpc::GenericServerAsyncReaderWriter* stream) {
    bool ok = false;
    for (const auto& [key, value] : metadata_) context->AddInitialMetadata(key, value);
    if (!abort_cause_.empty()) {
      // As a worker does: its first metadata goes out before anything else.
      stream->SendInitialMetadata(this);
      if (!Await(&ok) || !ok) return;
      context->AddTrailingMetadata(kAbortMetadataKey, "1");
      stream->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, abort_cause_), this);
      Await(&ok);
      return;
    }
    FrameHeader header;
    header.sender_rank = 1;
    header.key = FrameKey{1, 0, 0};
    header.info = Info();
    header.payload_bytes = kCount * sizeof(float);
    uint8_t bytes[kFrameHeaderBytes + kCount * sizeof(float)];
    EncodeFrameHeader(header, bytes);
    const float payload[kCount] = {1, 2, 3, 4};
    std::memcpy(bytes + kFrameHeaderBytes, payload, sizeof(payload));
    grpc::Slice slice(bytes, sizeof(bytes));
    stream->Write(grpc::ByteBuffer(&slice, 1), this);
    if (!Await(&ok) || !ok) return;
    grpc::ByteBuffer in;
    do {  // Until the caller ends its half (or cancels the call).
      stream->Read(&in, this);
    } while (Await(&ok) && ok);
    stream->Finish(grpc::Status::OK, this);
    Await(&ok);
  }

  CallMetadata metadata_;
  std::string abort_cause_;
  int port_ = 0;
  grpc::AsyncGenericService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<bool> answered_{false};
  std::thread thread_;
};

void Consume(void* context, size_t offset, const void* src, size_t bytes) {
  std::memcpy(static_cast<char*>(context) + offset, src, bytes);
}

struct Received {
  absl::Status status;
  float data[kCount] = {0, 0, 0, 0};
};

// `own_rank` (0: the lower rank, whose call is the data call; 1: the higher, whose
// call is the control call) opens its call to `peer`, waits for the broadcast's
// frame from the other rank, then closes the link.
Received ReceiveFrom(const FakePeer& peer, int own_rank = 0) {
  const int peer_rank = 1 - own_rank;
  // Declared in the order a worker tears them down in reverse: the loop thread is
  // joined before the transport, the link and what its check uses go away (a
  // completion may still be running when WaitClosed returns); the transport goes
  // before the link (its destructor still looks at its links).
  grpc::CompletionQueue cq;
  Received received;
  RpcAuth auth(kToken, kFingerprint, own_rank, kOwnIncarnation);
  GrpcLink link(&cq, std::make_shared<PeerLiveness>(), GrpcLink::Options(),
                /*opens_data_call=*/own_rank < peer_rank);
  Transport transport(own_rank, 2, Transport::Options(), nullptr);
  CompletionQueueLoop loop(&cq);
  loop.Start();
  link.set_peer_name(absl::StrCat("worker:", peer_rank, " (", peer.address(), ")"));
  transport.SetLink(peer_rank, &link);
  link.OpenOutbound(grpc::CreateChannel(peer.address(), grpc::InsecureChannelCredentials()),
                    auth.CallMetadataFor(RpcMethod::kTransfer, peer_rank, kPeerIncarnation),
                    [&auth, peer_rank](const auto& metadata) {
                      return auth.VerifyPeer(metadata, RpcMethod::kTransferReply, peer_rank,
                                             kPeerIncarnation);
                    });
  Request recv;
  recv.PrepareRecv(peer_rank, FrameKey{1, 0, 0}, Info(), kCount * sizeof(float),
                   RecvSink{&Consume, received.data});
  transport.PostRecv(&recv);
  received.status = transport.Wait(&recv, Deadline::AfterSeconds(20));
  link.BeginClose(Deadline::AfterSeconds(5));
  link.WaitClosed(Deadline::AfterSeconds(5));
  loop.ShutdownAndJoin();
  return received;
}

TEST_CASE("the lower rank takes frames on its call from a server that proves to be the peer",
          "[grpc][security]") {
  FakePeer peer(RpcAuth(kToken, kFingerprint, 1, kPeerIncarnation)
                    .CallMetadataFor(RpcMethod::kTransferReply, 0, kOwnIncarnation),
                "");
  const Received received = ReceiveFrom(peer);
  INFO(received.status.message());
  REQUIRE(received.status.ok());
  CHECK(received.data[0] == 1);
  CHECK(received.data[3] == 4);
}

TEST_CASE("a server that does not prove to be the peer gets no frame taken", "[grpc][security]") {
  struct Case {
    const char* what;
    CallMetadata metadata;
    const char* reason;
  };
  const Case cases[] = {
      {"no proof", {}, "does not identify a Ringwork worker"},
      {"another job's token",
       RpcAuth("another-token-0123456789abcdefgh", kFingerprint, 1, kPeerIncarnation)
           .CallMetadataFor(RpcMethod::kTransferReply, 0, kOwnIncarnation),
       "cluster token is wrong"},
      {"a call's metadata, not an answer's",
       RpcAuth(kToken, kFingerprint, 1, kPeerIncarnation)
           .CallMetadataFor(RpcMethod::kTransfer, 0, kOwnIncarnation),
       "signature is for another method"},
      {"an answer to an earlier process of this rank",
       RpcAuth(kToken, kFingerprint, 1, kPeerIncarnation)
           .CallMetadataFor(RpcMethod::kTransferReply, 0, kOwnIncarnation - 1),
       "meant for rank 0 incarnation 54"},
      {"another process of the peer's rank",
       RpcAuth(kToken, kFingerprint, 1, kPeerIncarnation + 1)
           .CallMetadataFor(RpcMethod::kTransferReply, 0, kOwnIncarnation),
       "answered as rank 1 incarnation 78, not rank 1 incarnation 77"},
      {"another rank",
       RpcAuth(kToken, kFingerprint, 2, kPeerIncarnation)
           .CallMetadataFor(RpcMethod::kTransferReply, 0, kOwnIncarnation),
       "answered as rank 2"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FakePeer peer(c.metadata, "");
    const Received received = ReceiveFrom(peer);
    INFO(received.status.message());
    CHECK(absl::IsUnauthenticated(received.status));
    CHECK(received.status.message().find("answered the data stream without proving it is "
                                         "that worker") != absl::string_view::npos);
    CHECK(received.status.message().find(c.reason) != absl::string_view::npos);
    CHECK(received.data[0] == 0);  // The frame never reached the receive.
  }
}

TEST_CASE("an abort's cause in a call's status counts only from the proven peer",
          "[grpc][security]") {
  const std::string cause = "worker:2 (10.0.0.3:2222) ran out of memory";
  // The lower rank's data call, and the higher rank's control call (whose peer
  // never opened the data call: the peer counts as ended when the call ends).
  for (int own_rank : {0, 1}) {
    INFO("own rank " << own_rank);
    const int peer_rank = 1 - own_rank;
    FakePeer peer(RpcAuth(kToken, kFingerprint, peer_rank, kPeerIncarnation)
                      .CallMetadataFor(RpcMethod::kTransferReply, own_rank, kOwnIncarnation),
                  cause);
    const Received received = ReceiveFrom(peer, own_rank);
    INFO(received.status.message());
    CHECK(absl::IsFailedPrecondition(received.status));
    CHECK(received.status.message().find(cause) != absl::string_view::npos);
    FakePeer impostor({}, cause);
    const Received refused = ReceiveFrom(impostor, own_rank);
    INFO(refused.status.message());
    CHECK(absl::IsUnavailable(refused.status));
    CHECK(refused.status.message().find(cause) == absl::string_view::npos);
    CHECK(refused.status.message().find("closed its connection") != absl::string_view::npos);
  }
}

}  // namespace
}  // namespace ringwork
