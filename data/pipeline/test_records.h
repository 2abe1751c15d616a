// Test support: tf.train.Example records made with the protobuf wire writer and
// TFRecord files of them (for tests of readers and of training from files; an
// independent writer checks the format itself: data/testdata/write_tf_examples.py).
//
//   std::string record = SerializeExample({{"x", {1.f, 2.f}}}, {{"id", {7}}});
//   std::vector<std::string> files = WriteExampleFiles(dir, {45, 10, 5}, make);
//   absl::StatusOr<std::vector<Element>> elements = ReadAll(pipeline);
#ifndef RINGWORK_DATA_PIPELINE_TEST_RECORDS_H_
#define RINGWORK_DATA_PIPELINE_TEST_RECORDS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

using FloatFeatures = std::vector<std::pair<std::string, std::vector<float>>>;
using IntFeatures = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// One serialized Example with these float_list and int64_list features.
std::string SerializeExample(const FloatFeatures& floats, const IntFeatures& ints);

// Files dir/f0.tfrecord, dir/f1.tfrecord, ... holding sizes[f] records each, record
// i of the run (counted over the files in order) being make(i). Returns the paths.
std::vector<std::string> WriteExampleFiles(const std::string& dir,
                                           const std::vector<int64_t>& sizes,
                                           const std::function<std::string(int64_t)>& make);

// Every element of one pass of `pipeline`, or its first error.
absl::StatusOr<std::vector<Element>> ReadAll(const Pipeline& pipeline,
                                             const IterateOptions& options = {});

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_TEST_RECORDS_H_
