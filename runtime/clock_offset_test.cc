// Clock offsets from round trips: the middle of the round trip, the shortest round
// trip kept, replies without a clock ignored.
#include "runtime/clock_offset.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("the offset is read at the middle of the shortest round trip", "[clock]") {
  ClockOffset offset;
  CHECK_FALSE(offset.known());
  CHECK(offset.rtt_us() == -1);
  offset.AddSample(1000, 6400, 1600);  // rtt 600, offset 6400 - 1300 = 5100
  CHECK(offset.offset_us() == 5100);
  CHECK(offset.rtt_us() == 600);
  offset.AddSample(2000, 7060, 2100);  // rtt 100: better, offset 5010
  CHECK(offset.offset_us() == 5010);
  offset.AddSample(3000, 9999, 3900);  // rtt 900: worse, ignored
  CHECK(offset.offset_us() == 5010);
  CHECK(offset.rtt_us() == 100);
  CHECK(offset.samples() == 3);
}

TEST_CASE("replies without a clock and clocks going back are ignored", "[clock]") {
  ClockOffset offset;
  offset.AddSample(1000, 0, 1100);   // An older peer: no clock in its reply.
  offset.AddSample(1000, 500, 900);  // Received before sent: not a sample.
  CHECK_FALSE(offset.known());
  CHECK(offset.samples() == 0);
  offset.AddSample(1000, 400, 1100);  // A peer behind us: a negative offset.
  CHECK(offset.offset_us() == -650);
}

}  // namespace
}  // namespace ringwork
