#include "data/image_decode.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

absl::StatusOr<Image> DecodePng(absl::string_view bytes, int channels) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a PNG image libpng reads (", png.message, ")"));
  }
  if (channels == 0) {
    // The file's own: gray, color, either with alpha (gray with alpha as RGBA).
    channels = (png.format & PNG_FORMAT_FLAG_ALPHA)   ? 4
               : (png.format & PNG_FORMAT_FLAG_COLOR) ? 3
                                                      : 1;
  }
  png.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  Image image;
  image.height = png.height;
  image.width = png.width;
  image.channels = channels;
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    return absl::InvalidArgumentError(absl::StrCat("a corrupt PNG image (", message, ")"));
  }
  return image;
}

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr info) {
  JpegErrors* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// libjpeg's warnings (a truncated file, corrupt data it papers over with gray)
// are errors here: nothing is trained on a half-decoded image.
void JpegWarningIsError(j_common_ptr info, int level) {
  if (level < 0) JpegErrorExit(info);
}

absl::StatusOr<Image> DecodeJpeg(absl::string_view bytes, int channels) {
  // Everything with a destructor lives before setjmp: a longjmp back here skips none.
  Image image;
  std::vector<uint8_t> row;
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = JpegErrorExit;
  errors.manager.emit_message = JpegWarningIsError;
  errors.message[0] = '\0';
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    return absl::InvalidArgumentError(absl::StrCat("a corrupt JPEG image (", errors.message, ")"));
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (channels == 0) channels = info.num_components == 1 ? 1 : 3;
  info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  const int decoded = info.output_components;
  image.height = info.output_height;
  image.width = info.output_width;
  image.channels = channels;
  image.pixels.resize(static_cast<size_t>(image.height * image.width * channels));
  row.resize(static_cast<size_t>(image.width * decoded));
  while (info.output_scanline < info.output_height) {
    const int64_t y = info.output_scanline;
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&info, rows, 1);
    uint8_t* out = image.pixels.data() + y * image.width * channels;
    for (int64_t x = 0; x < image.width; ++x) {
      for (int c = 0; c < channels; ++c) {
        out[x * channels + c] = c < decoded ? row[static_cast<size_t>(x * decoded + c)] : 255;
      }
    }
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return image;
}

}  // namespace

absl::StatusOr<Image> DecodeImage(absl::string_view bytes, int channels) {
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    return absl::InvalidArgumentError(absl::StrCat(channels, " channels: expected 1, 3, 4 or 0"));
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.size() >= 8 &&
      png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8) == 0) {
    return DecodePng(bytes, channels);
  }
  if (bytes.size() >= 3 && byte(0) == 0xff && byte(1) == 0xd8 && byte(2) == 0xff) {
    return DecodeJpeg(bytes, channels);
  }
  return absl::InvalidArgumentError("neither a PNG nor a JPEG image");
}

void ResizeBilinear(const Image& image, int64_t height, int64_t width, float* out, float scale) {
  const int64_t c = image.channels;
  if (height == image.height && width == image.width) {
    for (size_t i = 0; i < image.pixels.size(); ++i) out[i] = image.pixels[i] * scale;
    return;
  }
  // Half-pixel centers: output pixel y samples input row (y + 0.5) * h_in / h - 0.5.
  const double sy = static_cast<double>(image.height) / height;
  const double sx = static_cast<double>(image.width) / width;
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::max(0.0, (y + 0.5) * sy - 0.5);
    const int64_t y0 = std::min<int64_t>(static_cast<int64_t>(fy), image.height - 1);
    const int64_t y1 = std::min<int64_t>(y0 + 1, image.height - 1);
    const double wy = fy - y0;
    for (int64_t x = 0; x < width; ++x) {
      const double fx = std::max(0.0, (x + 0.5) * sx - 0.5);
      const int64_t x0 = std::min<int64_t>(static_cast<int64_t>(fx), image.width - 1);
      const int64_t x1 = std::min<int64_t>(x0 + 1, image.width - 1);
      const double wx = fx - x0;
      for (int64_t k = 0; k < c; ++k) {
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(
              image.pixels[static_cast<size_t>((yy * image.width + xx) * c + k)]);
        };
        const double top = at(y0, x0) * (1 - wx) + at(y0, x1) * wx;
        const double bottom = at(y1, x0) * (1 - wx) + at(y1, x1) * wx;
        out[(y * width + x) * c + k] = static_cast<float>(top * (1 - wy) + bottom * wy) * scale;
      }
    }
  }
}

}  // namespace ringwork
