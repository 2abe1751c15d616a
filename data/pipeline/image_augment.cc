#include "data/pipeline/image_augment.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// Mirrors an h x w image of `pixel`-byte pixels in place.
void Flip(uint8_t* data, int64_t h, int64_t w, size_t pixel, bool across, bool down) {
  const size_t row = static_cast<size_t>(w) * pixel;
  std::vector<uint8_t> swap(std::max(row, pixel));
  if (across) {
    for (int64_t y = 0; y < h; ++y) {
      uint8_t* r = data + static_cast<size_t>(y) * row;
      for (int64_t x = 0; x < w / 2; ++x) {
        uint8_t* a = r + static_cast<size_t>(x) * pixel;
        uint8_t* b = r + static_cast<size_t>(w - 1 - x) * pixel;
        std::memcpy(swap.data(), a, pixel);
        std::memcpy(a, b, pixel);
        std::memcpy(b, swap.data(), pixel);
      }
    }
  }
  if (down) {
    for (int64_t y = 0; y < h / 2; ++y) {
      uint8_t* a = data + static_cast<size_t>(y) * row;
      uint8_t* b = data + static_cast<size_t>(h - 1 - y) * row;
      std::memcpy(swap.data(), a, row);
      std::memcpy(a, b, row);
      std::memcpy(b, swap.data(), row);
    }
  }
}

}  // namespace

absl::StatusOr<RandomMapFn> RandomFlipFn(int feature, const std::string& mode) {
  const bool horizontal = mode == "horizontal" || mode == "horizontal_and_vertical";
  const bool vertical = mode == "vertical" || mode == "horizontal_and_vertical";
  if (!horizontal && !vertical) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomFlip mode \"", mode,
                     "\": expected horizontal, vertical or horizontal_and_vertical"));
  }
  return RandomMapFn([feature, horizontal, vertical](Element* e, uint64_t draw) -> absl::Status {
    if (feature < 0 || static_cast<size_t>(feature) >= e->values.size()) {
      return absl::InvalidArgumentError(absl::StrCat("RandomFlip: no feature ", feature));
    }
    TypedTensor& image = e->values[static_cast<size_t>(feature)];
    const Shape& shape = image.shape();
    if (shape.size() != 3 || image.type() == ValueType::kString) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RandomFlip: an image is height x width x channels numbers; this feature is ",
          ShapeString(shape)));
    }
    const size_t pixel = static_cast<size_t>(shape[2]) * ValueTypeSize(image.type());
    Flip(static_cast<uint8_t*>(image.raw()), shape[0], shape[1], pixel, horizontal && (draw & 1),
         vertical && (draw & 2));
    return absl::OkStatus();
  });
}

}  // namespace ringwork
