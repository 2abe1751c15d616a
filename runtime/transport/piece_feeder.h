// Feeds a frame that arrived as scattered pieces (gRPC slices, the two halves of a
// wrapped ring buffer) to a RecvSink in whole elements: sinks reduce element-wise,
// but a piece boundary may fall inside an element. Such an element is assembled in
// a small carry buffer; everything else is passed through without copying.
//
//   PieceFeeder feeder(sink, /*element_bytes=*/4);
//   for (const Piece& piece : pieces) feeder.Feed(piece.data, piece.size);
//   feeder.fed_bytes();   // payload bytes handed to the sink so far
#ifndef RINGWORK_RUNTIME_TRANSPORT_PIECE_FEEDER_H_
#define RINGWORK_RUNTIME_TRANSPORT_PIECE_FEEDER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/transport/request.h"

namespace ringwork {

class PieceFeeder {
 public:
  PieceFeeder(RecvSink sink, size_t element_bytes) : sink_(sink), element_(element_bytes) {}

  void Feed(const uint8_t* data, size_t size) {
    if (carry_size_ > 0) {
      const size_t take = std::min(element_ - carry_size_, size);
      std::memcpy(carry_ + carry_size_, data, take);
      carry_size_ += take;
      data += take;
      size -= take;
      if (carry_size_ < element_) return;
      sink_.consume(sink_.context, offset_, carry_, element_);
      offset_ += element_;
      carry_size_ = 0;
    }
    const size_t aligned = size - size % element_;
    if (aligned > 0) {
      sink_.consume(sink_.context, offset_, data, aligned);
      offset_ += aligned;
    }
    if (aligned < size) {
      std::memcpy(carry_, data + aligned, size - aligned);
      carry_size_ = size - aligned;
    }
  }
  size_t fed_bytes() const { return offset_; }
  bool has_partial_element() const { return carry_size_ > 0; }

 private:
  RecvSink sink_;
  size_t element_;
  size_t offset_ = 0;
  uint8_t carry_[16];
  size_t carry_size_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_PIECE_FEEDER_H_
