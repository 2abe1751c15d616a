// A set of labelled examples held in memory: features [count, ...] (float32, NHWC
// for images) and an int32 class label per example. Immutable once built and
// shared by the datasets made from it.
#ifndef RINGWORK_DATA_EXAMPLES_H_
#define RINGWORK_DATA_EXAMPLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringwork {

struct Examples {
  Tensor features;              // [count, ...]
  std::vector<int32_t> labels;  // [count]
  // The source file of each example (for sharding by file); empty: one source.
  std::vector<int32_t> file_index;
  std::vector<std::string> files;  // The sources, for messages.

  int64_t count() const { return static_cast<int64_t>(labels.size()); }
  // One example's shape, without the leading count.
  Shape example_shape() const {
    return Shape(features.shape().begin() + 1, features.shape().end());
  }
  int64_t example_size() const { return count() == 0 ? 0 : features.size() / count(); }
};

}  // namespace ringwork

#endif  // RINGWORK_DATA_EXAMPLES_H_
