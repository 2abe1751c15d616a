#include "runtime/transport/frame.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("frame headers round-trip", "[frame]") {
  FrameHeader h;
  h.sender_rank = 3;
  h.key = FrameKey{1234567890123ull, 7, 42};
  h.info = CollectiveInfo{CollectiveKind::kBroadcast, DataType::kBFloat16, ReduceOp::kMax, 99, 2};
  h.payload_bytes = 198;
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(h, bytes);
  auto got = DecodeFrameHeader(bytes, sizeof(bytes), 1 << 20);
  REQUIRE(got.ok());
  CHECK(got->sender_rank == 3);
  CHECK(got->key == h.key);
  CHECK(got->info == h.info);
  CHECK(got->payload_bytes == 198);
  CHECK(got->info.ToString() == "broadcast(bfloat16 x 99, root 2)");
}

TEST_CASE("bad frame headers are refused before anything is sized from them", "[frame]") {
  FrameHeader h;
  h.info.count = 4;
  h.payload_bytes = 16;
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(h, bytes);
  CHECK(DecodeFrameHeader(bytes, 10, 1 << 20).status().message() ==
        "frame of 10 bytes is shorter than its 64-byte header");
  uint8_t bad[kFrameHeaderBytes];
  std::copy(bytes, bytes + kFrameHeaderBytes, bad);
  bad[0] ^= 1;
  CHECK(std::string(DecodeFrameHeader(bad, sizeof(bad), 1 << 20).status().message())
            .find("bad magic") != std::string::npos);
  std::copy(bytes, bytes + kFrameHeaderBytes, bad);
  bad[4] = 9;  // version
  CHECK(std::string(DecodeFrameHeader(bad, sizeof(bad), 1 << 20).status().message())
            .find("frame version 9") != std::string::npos);
  std::copy(bytes, bytes + kFrameHeaderBytes, bad);
  bad[29] = 77;  // dtype
  CHECK_FALSE(DecodeFrameHeader(bad, sizeof(bad), 1 << 20).ok());
  CHECK(DecodeFrameHeader(bytes, sizeof(bytes), 8).status().message() ==
        "frame announces 16 payload bytes; the limit is 8");
  h.payload_bytes = 6;
  EncodeFrameHeader(h, bytes);
  CHECK(DecodeFrameHeader(bytes, sizeof(bytes), 1 << 20).status().message() ==
        "frame payload of 6 bytes is not a whole number of float32 elements");
}

TEST_CASE("collective descriptions", "[frame]") {
  CollectiveInfo a{CollectiveKind::kAllReduce, DataType::kFloat32, ReduceOp::kSum, 10, -1};
  CHECK(a.ToString() == "allreduce(float32 x 10, sum)");
  CollectiveInfo b = a;
  b.op = ReduceOp::kMax;
  CHECK(a != b);
  CollectiveInfo g{CollectiveKind::kAllGather, DataType::kInt64, ReduceOp::kSum, 3, -1};
  CollectiveInfo g2 = g;
  g2.op = ReduceOp::kMin;
  CHECK(g == g2);  // The op does not matter for gathers.
  CHECK(g.ToString() == "allgather(int64 x 3)");
}

}  // namespace
}  // namespace ringwork
