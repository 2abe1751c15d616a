// PNG and JPEG images decoded into height x width x channels uint8 pixels
// (Debian's libpng and libjpeg-turbo), converted to the channels asked for, and
// resized with bilinear interpolation (tf.image.resize's default, half-pixel
// centers, no antialiasing), as Keras' image_dataset_from_directory reads them.
//
//   RW_ASSIGN_OR_RETURN(Image img, DecodeImage(bytes, /*channels=*/1));
//   std::vector<float> small(28 * 28 * 1);
//   ResizeBilinear(img, 28, 28, small.data());       // [28, 28, 1], 0..255
//
// INVALID_ARGUMENT for bytes that are neither, or a file cut or corrupt (the
// decoder's message); the caller names the file.
#ifndef RINGWORK_DATA_IMAGE_DECODE_H_
#define RINGWORK_DATA_IMAGE_DECODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringwork {

struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // Row-major, channels last.
};

// `channels`: 1 (grayscale), 3 (RGB) or 4 (RGBA); the file's own are converted.
// 0: the file's own (1 for gray, 3 for color, 4 with alpha).
absl::StatusOr<Image> DecodeImage(absl::string_view bytes, int channels);

// `image` at `height` x `width` into `out` (height x width x channels floats, the
// pixel values 0..255 times `scale`); the same size copies.
void ResizeBilinear(const Image& image, int64_t height, int64_t width, float* out,
                    float scale = 1.0f);

}  // namespace ringwork

#endif  // RINGWORK_DATA_IMAGE_DECODE_H_
