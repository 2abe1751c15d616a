// The unit an input pipeline moves: an element, a structure of named features
// (tf.data's dict of tensors), each a TypedTensor, in the order its spec gives.
//
//   ElementSpec spec = {{"image", ValueType::kUInt8, {28, 28, 1}},
//                       {"label", ValueType::kInt64, {}}};
//   Element e;  e.values.resize(spec.size());
//   int label = FeatureIndex(spec, "label");        // 1; -1 when absent
//
// An element remembers where it came from (a file and a record or line) so that
// an error about it, however far down the pipeline, can name them.
#ifndef RINGWORK_DATA_PIPELINE_ELEMENT_H_
#define RINGWORK_DATA_PIPELINE_ELEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/typed_tensor.h"

namespace ringwork {

// One feature of a spec: its name, type and shape; a dimension of -1 varies from
// element to element (a variable-length list).
struct FeatureInfo {
  std::string name;
  ValueType type = ValueType::kFloat32;
  Shape shape;
};
using ElementSpec = std::vector<FeatureInfo>;

// The index of feature `name` in `spec`, or -1.
int FeatureIndex(const ElementSpec& spec, const std::string& name);
// "image: uint8 [28, 28, 1], label: int64 []".
std::string SpecString(const ElementSpec& spec);

struct Element {
  std::vector<TypedTensor> values;
  // Where it came from: a source file (not owned; the pipeline keeps it) and
  // the record (from 0) or line (from 1) in it; -1: the whole file (an image).
  const std::string* file = nullptr;
  int64_t record = -1;
  bool record_is_line = false;
  // Its place in the stream of the source it came from (this pass).
  int64_t index = -1;
  // The source's pass it came from, where a Repeat stamps it (-1: the iterator's).
  int64_t pass = -1;
  // The training step a distributed reader (DATA) assigned it to; -1: none.
  int64_t step = -1;
};

// "F, record R: " (or "F, line L: ", "F: "), or "" when the origin is unknown.
std::string OriginOf(const Element& element);

// A well-mixed 64-bit draw for element `key` of pass `pass` under `seed`
// (SplitMix64 over the three): a random augmentation's, reproducible anywhere.
uint64_t ElementDraw(uint64_t seed, int64_t pass, uint64_t key);
// What names an element whatever the sharding: its file and record when it has
// them, else its place in its source.
uint64_t ElementKey(const Element& element);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_ELEMENT_H_
