#include "runtime/transport/piece_feeder.h"

#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

namespace ringwork {
namespace {

struct Recorder {
  std::vector<uint8_t> bytes;
  std::vector<size_t> piece_sizes;
  size_t expected_offset = 0;
  bool offsets_ok = true;
};

void Record(void* context, size_t offset, const void* src, size_t size) {
  Recorder* r = static_cast<Recorder*>(context);
  if (offset != r->expected_offset) r->offsets_ok = false;
  r->expected_offset += size;
  const uint8_t* p = static_cast<const uint8_t*>(src);
  r->bytes.insert(r->bytes.end(), p, p + size);
  r->piece_sizes.push_back(size);
}

TEST_CASE("pieces split anywhere reach the sink in whole elements, in order", "[feeder]") {
  std::vector<uint8_t> payload(97 * 8);
  std::iota(payload.begin(), payload.end(), 0);
  for (size_t element : {2, 4, 8}) {
    for (size_t cut : {1, 3, 5, 7, 13, 64, 1000}) {
      Recorder recorder;
      PieceFeeder feeder(RecvSink{&Record, &recorder}, element);
      const size_t total = payload.size() - payload.size() % element;
      for (size_t at = 0; at < total; at += cut) {
        feeder.Feed(payload.data() + at, std::min(cut, total - at));
      }
      INFO("element " << element << " cut " << cut);
      CHECK(recorder.offsets_ok);
      CHECK(feeder.fed_bytes() == total);
      CHECK_FALSE(feeder.has_partial_element());
      CHECK(std::equal(recorder.bytes.begin(), recorder.bytes.end(), payload.begin()));
      for (size_t s : recorder.piece_sizes) CHECK(s % element == 0);
    }
  }
}

}  // namespace
}  // namespace ringwork
