// tf.train.Example records parsed by a feature spec, as tf.io.parse_single_example
// takes one: each feature by name, its type, its shape and a default for records
// that lack it; a variable-length feature (ids) keeps however many values it has.
//
//   RW_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create({
//       {.name = "image", .type = ValueType::kFloat32, .shape = {28, 28, 1}},
//       {.name = "label", .type = ValueType::kInt64, .shape = {}},
//       {.name = "tags", .type = ValueType::kInt64, .var_len = true}}));
//   std::vector<TypedTensor> values;                  // one per spec, in order
//   RW_RETURN_IF_ERROR(parser.Parse(record, &values));
//
// An Example holds float_list (float32), int64_list (int64) or bytes_list
// (string) features; an int64 feature may be asked for as int32 or uint8 (values
// out of range are refused). Packed float lists are copied as they are (the wire
// and the machine are both little-endian IEEE floats). Errors are INVALID_ARGUMENT
// naming the feature: missing without a default, another type, another number of
// values than the shape holds, a malformed record.
#ifndef RINGWORK_DATA_TF_EXAMPLE_H_
#define RINGWORK_DATA_TF_EXAMPLE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/typed_tensor.h"

namespace ringwork {

struct FeatureSpec {
  std::string name;
  ValueType type = ValueType::kFloat32;
  Shape shape;           // One example's values ({}: a scalar). Ignored with var_len.
  bool var_len = false;  // Any number of values, as a 1-D tensor.
  // For a record without the feature (fixed length only): one value fills the
  // shape, or one per value. Unset: such a record is an error.
  std::optional<std::vector<double>> default_value;
  std::optional<std::string> default_string;  // The same, for strings.
};

// What one Example holds, feature by feature (map order): its name, the type of
// its list (float32, int64 or string) and how many values it has. For tools that
// make a spec from a file's first record.
struct ExampleFeature {
  std::string name;
  ValueType type = ValueType::kFloat32;
  int64_t count = 0;
};
absl::StatusOr<std::vector<ExampleFeature>> DescribeExample(absl::string_view record);

class ExampleParser {
 public:
  // INVALID_ARGUMENT for a spec that cannot be met: no features, a name twice, a
  // default of the wrong size or type.
  static absl::StatusOr<ExampleParser> Create(std::vector<FeatureSpec> specs);
  const std::vector<FeatureSpec>& specs() const { return specs_; }

  // Parses the serialized Example `record` into `values` (resized to one per spec).
  absl::Status Parse(absl::string_view record, std::vector<TypedTensor>* values) const;

 private:
  explicit ExampleParser(std::vector<FeatureSpec> specs) : specs_(std::move(specs)) {}
  // Fills values[i] from Feature message `feature` (its list of values).
  absl::Status ParseFeature(size_t i, absl::string_view feature, TypedTensor* value) const;
  absl::Status FillDefault(size_t i, TypedTensor* value) const;

  std::vector<FeatureSpec> specs_;
};

}  // namespace ringwork

#endif  // RINGWORK_DATA_TF_EXAMPLE_H_
