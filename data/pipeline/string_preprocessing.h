// Keras' string preprocessing as pipeline stages: strings (a CSV column, a
// TFRecord's bytes feature) become int64 ids a model's Embedding or
// CategoryEncoding reads. Strings stay in the pipeline; the model sees numbers.
//
//   RW_ASSIGN_OR_RETURN(StringLookup cities, StringLookup::Adapt(train, "city"));
//   RW_ASSIGN_OR_RETURN(TextVectorization text,
//                       TextVectorization::Adapt(train, "review", {.max_tokens = 20000,
//                                                .output_sequence_length = 200}));
//   RW_ASSIGN_OR_RETURN(Pipeline p, cities.Apply(train, "city"));    // string -> int64 []
//   RW_ASSIGN_OR_RETURN(p, text.Apply(p, "review"));                 // string -> int64 [200]
//   RW_ASSIGN_OR_RETURN(p, Hashing(p, "user", {.num_bins = 1024}));  // string -> int64 []
//
// Adapt reads the whole pipeline it is given, once: give every worker the same,
// unsharded data, and each makes the same vocabulary (a function of the data alone).
#ifndef RINGWORK_DATA_PIPELINE_STRING_PREPROCESSING_H_
#define RINGWORK_DATA_PIPELINE_STRING_PREPROCESSING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

// FarmHash's Fingerprint64, TensorFlow's string hash (tf.strings.to_hash_bucket_fast).
uint64_t Fingerprint64(absl::string_view bytes);

// Keras' Hashing: bin = Fingerprint64(value) % num_bins; int features are hashed
// as their decimal text, as Keras does. With mask_value, that value is bin 0 and
// the others 1 + Fingerprint64 % (num_bins - 1).
struct HashingOptions {
  int64_t num_bins = 0;
  std::optional<std::string> mask_value;
  int num_parallel_calls = 1;  // As Pipeline::Map's (kAutotune: the worker's cores).
};
absl::StatusOr<Pipeline> Hashing(const Pipeline& in, const std::string& feature,
                                 HashingOptions options);

// Keras' StringLookup (output_mode "int"): with mask_token, index 0 is the mask;
// then num_oov_indices indices for tokens out of the vocabulary (Fingerprint64
// picks one when there are several); then the vocabulary. max_tokens counts all
// of these (-1: no limit).
struct StringLookupOptions {
  int64_t max_tokens = -1;
  int64_t num_oov_indices = 1;
  std::optional<std::string> mask_token;
};
class StringLookup {
 public:
  static absl::StatusOr<StringLookup> FromVocabulary(std::vector<std::string> vocabulary,
                                                     StringLookupOptions options = {});
  // The vocabulary of `feature`'s strings as Keras' adapt orders it: the most
  // frequent first, ties in reverse byte order, cut at max_tokens.
  static absl::StatusOr<StringLookup> Adapt(const Pipeline& data, const std::string& feature,
                                            StringLookupOptions options = {});
  // Keras' get_vocabulary(): the mask token, "[UNK]" per OOV index, the tokens
  // (FromVocabulary takes it back: those leading entries are dropped).
  std::vector<std::string> vocabulary() const;
  int64_t vocabulary_size() const { return first_token_ + static_cast<int64_t>(tokens_.size()); }
  int64_t Lookup(absl::string_view token) const;
  // `feature` (strings of any shape) as int64 ids of the same shape, on
  // `num_parallel_calls` threads (as Pipeline::Map's), in order.
  absl::StatusOr<Pipeline> Apply(const Pipeline& in, const std::string& feature,
                                 int num_parallel_calls = 1) const;

 private:
  StringLookupOptions options_;
  int64_t first_token_ = 0;  // Mask and OOV indices come first.
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> index_;
};

// Keras' TextVectorization (output_mode "int"): each string standardized
// ("lower_and_strip_punctuation": ASCII lowercase, ASCII punctuation removed;
// "lower", "strip_punctuation", "none"), split ("whitespace", "character",
// "none"), and each token looked up: 0 is padding, 1 "[UNK]", then the
// vocabulary. output_sequence_length > 0 pads or cuts to that many ids; 0 keeps
// each string's own length (a [-1] feature: batch it with PaddedBatch).
struct TextVectorizationOptions {
  int64_t max_tokens = -1;
  int64_t output_sequence_length = 0;
  std::string standardize = "lower_and_strip_punctuation";
  std::string split = "whitespace";
};
class TextVectorization {
 public:
  static absl::StatusOr<TextVectorization> FromVocabulary(std::vector<std::string> vocabulary,
                                                          TextVectorizationOptions options = {});
  static absl::StatusOr<TextVectorization> Adapt(const Pipeline& data, const std::string& feature,
                                                 TextVectorizationOptions options = {});
  std::vector<std::string> vocabulary() const { return lookup_.vocabulary(); }
  // The tokens of `text`, standardized and split.
  std::vector<std::string> Tokens(absl::string_view text) const;
  std::vector<int64_t> Vectorize(absl::string_view text) const;
  // `feature` (one string per element: shape [] or [1]) as int64 ids
  // [output_sequence_length] (or [-1]), on `num_parallel_calls` threads, in order.
  absl::StatusOr<Pipeline> Apply(const Pipeline& in, const std::string& feature,
                                 int num_parallel_calls = 1) const;

 private:
  TextVectorization(TextVectorizationOptions options, StringLookup lookup)
      : options_(std::move(options)), lookup_(std::move(lookup)) {}
  TextVectorizationOptions options_;
  StringLookup lookup_;
};

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_STRING_PREPROCESSING_H_
