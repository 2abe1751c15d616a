// The geometry of a sliding window (convolution, pooling) along one dimension,
// with Keras' "valid" and "same" padding: "same" gives ceil(in / stride) outputs
// and splits the padding as TensorFlow does (the extra element goes after).
#ifndef RINGWORK_KERNELS_WINDOW_H_
#define RINGWORK_KERNELS_WINDOW_H_

#include <algorithm>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace ringwork {

enum class Padding { kValid, kSame };

inline absl::string_view PaddingName(Padding padding) {
  return padding == Padding::kSame ? "same" : "valid";
}

struct Window1D {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

// out == 0 when the window does not fit ("valid" with window > input).
inline Window1D ComputeWindow(int64_t in, int64_t window, int64_t stride, Padding padding) {
  Window1D w;
  if (padding == Padding::kValid) {
    w.out = in >= window ? (in - window) / stride + 1 : 0;
    return w;
  }
  w.out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((w.out - 1) * stride + window - in, 0);
  w.pad_before = total / 2;
  w.pad_after = total - w.pad_before;
  return w;
}

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_WINDOW_H_
