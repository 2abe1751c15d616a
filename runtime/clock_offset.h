// How far a peer's steady clock is from ours, estimated from request/reply round
// trips as NTP does: the peer read its clock at about the middle of the round trip,
// so offset = peer_clock - (sent + received) / 2, off by at most half the round trip.
// The sample with the shortest round trip is kept (it bounds the error best).
//
//   ClockOffset offset;
//   offset.AddSample(/*sent_us=*/100, /*peer_us=*/5150, /*received_us=*/200);
//   offset.offset_us();   // 5000: our clock + 5000 = the peer's clock
#ifndef RINGWORK_RUNTIME_CLOCK_OFFSET_H_
#define RINGWORK_RUNTIME_CLOCK_OFFSET_H_

#include <cstdint>

namespace ringwork {

class ClockOffset {
 public:
  void AddSample(int64_t sent_us, int64_t peer_us, int64_t received_us) {
    if (peer_us <= 0 || received_us < sent_us) return;  // A peer that sent no clock.
    const int64_t rtt = received_us - sent_us;
    ++samples_;
    if (rtt_us_ >= 0 && rtt >= rtt_us_) return;
    rtt_us_ = rtt;
    offset_us_ = peer_us - (sent_us + received_us) / 2;
  }
  bool known() const { return rtt_us_ >= 0; }
  int64_t offset_us() const { return offset_us_; }  // 0 until known.
  int64_t rtt_us() const { return rtt_us_; }        // -1 until known.
  int64_t samples() const { return samples_; }

 private:
  int64_t offset_us_ = 0;
  int64_t rtt_us_ = -1;
  int64_t samples_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CLOCK_OFFSET_H_
