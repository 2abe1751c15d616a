// Link::CheckFrame, which every received frame passes before its payload is
// used: a frame is accepted only from the link's peer, for the collective, step
// and segment this task waits for, with the expected size; a replayed or
// duplicated frame is refused.
#include "runtime/transport/link.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

class CheckingLink : public Link {
 public:
  using Link::CheckFrame;
  void PostSend(Request*) override {}
  void PostRecv(Request*) override {}
  bool Poll() override { return false; }
  void FailPending(const absl::Status&, Deadline) override {}
  void OnAbort(const absl::Status&) override {}
  size_t max_payload_bytes() const override { return 1 << 20; }
  absl::string_view kind() const override { return "test"; }
  std::string DebugString() const override { return "test"; }
};

TEST_CASE("a frame is accepted only as the one this task waits for", "[link]") {
  CheckingLink link;
  link.set_peer_name("worker:1 (10.0.0.2:2222)");
  CollectiveInfo info;
  info.count = 1000;
  Request expected;
  expected.PrepareRecv(/*from=*/1, FrameKey{12, 3, 1}, info, 4000, RecvSink());
  FrameHeader got;
  got.sender_rank = 1;
  got.key = FrameKey{12, 3, 1};
  got.info = info;
  got.payload_bytes = 4000;
  REQUIRE(link.CheckFrame(got, expected).ok());

  SECTION("from another rank than the link's peer") {
    got.sender_rank = 2;
    absl::Status st = link.CheckFrame(got, expected);
    CHECK(absl::IsPermissionDenied(st));
    CHECK(st.message().find("claims to come from rank 2") != absl::string_view::npos);
  }
  SECTION("a replay of an earlier collective") {
    got.key.seq = 11;
    CHECK(absl::IsFailedPrecondition(link.CheckFrame(got, expected)));
  }
  SECTION("a duplicate of the previous segment") {
    got.key.segment = 0;
    CHECK(absl::IsFailedPrecondition(link.CheckFrame(got, expected)));
  }
  SECTION("another step") {
    got.key.step = 4;
    CHECK(absl::IsFailedPrecondition(link.CheckFrame(got, expected)));
  }
  SECTION("another size or collective") {
    got.payload_bytes = 8000;
    CHECK(absl::IsFailedPrecondition(link.CheckFrame(got, expected)));
    got.payload_bytes = 4000;
    got.info.count = 2000;
    absl::Status st = link.CheckFrame(got, expected);
    CHECK(absl::IsFailedPrecondition(st));
    CHECK(st.message().find("worker:1 (10.0.0.2:2222)") != absl::string_view::npos);
  }
}

}  // namespace
}  // namespace ringwork
