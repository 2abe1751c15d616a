#include "data/pipeline/string_preprocessing.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

// FarmHash (farmhashna) by its published algorithm, little-endian loads.
constexpr uint64_t kK0 = 0xc3a5c85c97cb3127ULL, kK1 = 0xb492b66fbe98f273ULL,
                   kK2 = 0x9ae16a3b2f90404fULL;

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Rotate(uint64_t v, int shift) {
  return shift == 0 ? v : (v >> shift) | (v << (64 - shift));
}
uint64_t ShiftMix(uint64_t v) { return v ^ (v >> 47); }
uint64_t HashLen16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t HashLen0to16(const char* s, uint64_t len) {
  if (len >= 8) {
    const uint64_t mul = kK2 + len * 2, a = Load64(s) + kK2, b = Load64(s + len - 8);
    const uint64_t c = Rotate(b, 37) * mul + a, d = (Rotate(a, 25) + b) * mul;
    return HashLen16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = kK2 + len * 2;
    return HashLen16(len + (Load32(s) << 3), Load32(s + len - 4), mul);
  }
  if (len > 0) {
    const auto byte = [&](uint64_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i])); };
    const uint32_t y = byte(0) + (byte(len >> 1) << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (byte(len - 1) << 2);
    return ShiftMix(y * kK2 ^ z * kK0) * kK2;
  }
  return kK2;
}

uint64_t HashLen17to32(const char* s, uint64_t len) {
  const uint64_t mul = kK2 + len * 2, a = Load64(s) * kK1, b = Load64(s + 8);
  const uint64_t c = Load64(s + len - 8) * mul, d = Load64(s + len - 16) * kK2;
  return HashLen16(Rotate(a + b, 43) + Rotate(c, 30) + d, a + Rotate(b + kK2, 18) + c, mul);
}

uint64_t HashLen33to64(const char* s, uint64_t len) {
  const uint64_t mul = kK2 + len * 2, a = Load64(s) * kK2, b = Load64(s + 8);
  const uint64_t c = Load64(s + len - 8) * mul, d = Load64(s + len - 16) * kK2;
  const uint64_t y = Rotate(a + b, 43) + Rotate(c, 30) + d;
  const uint64_t z = HashLen16(y, a + Rotate(b + kK2, 18) + c, mul);
  const uint64_t e = Load64(s + 16) * mul, f = Load64(s + 24);
  const uint64_t g = (y + Load64(s + len - 32)) * mul, h = (z + Load64(s + len - 24)) * mul;
  return HashLen16(Rotate(e + f, 43) + Rotate(g, 30) + h, e + Rotate(f + a, 18) + g, mul);
}

std::pair<uint64_t, uint64_t> WeakHashLen32WithSeeds(const char* s, uint64_t a, uint64_t b) {
  const uint64_t w = Load64(s), x = Load64(s + 8), y = Load64(s + 16), z = Load64(s + 24);
  a += w;
  b = Rotate(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += Rotate(a, 44);
  return {a + z, b + c};
}

// Fails naming the feature unless `spec` has it with one of `types`.
absl::StatusOr<int> FeatureOf(const ElementSpec& spec, const std::string& feature,
                              std::vector<ValueType> types, const char* what) {
  const int index = FeatureIndex(spec, feature);
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the elements have no feature \"",
                                                   feature, "\" (", SpecString(spec), ")"));
  }
  if (std::find(types.begin(), types.end(), spec[index].type) == types.end()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": feature \"", feature, "\" is ",
                                                   ValueTypeName(spec[index].type), ", not strings",
                                                   types.size() > 1 ? " or integers" : ""));
  }
  return index;
}

// Keras' adapt order: counts descending, ties by token descending; at most `keep`.
std::vector<std::string> ByFrequency(const std::map<std::string, int64_t>& counts, int64_t keep) {
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [token, count] : counts) order.push_back({count, token});
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<std::string> tokens;
  for (const auto& entry : order) {
    if (keep >= 0 && static_cast<int64_t>(tokens.size()) >= keep) break;
    tokens.push_back(entry.second);
  }
  return tokens;
}

// Every string of `feature` in one pass over `data`, each through `add`.
absl::Status ForEachString(const Pipeline& data, const std::string& feature, const char* what,
                           const std::function<void(const std::string&)>& add) {
  RW_ASSIGN_OR_RETURN(const int index, FeatureOf(data.spec(), feature, {ValueType::kString}, what));
  std::unique_ptr<ElementIterator> it = data.Iterate();
  Element element;
  while (true) {
    RW_ASSIGN_OR_RETURN(const bool more, it->Next(&element));
    if (!more) return absl::OkStatus();
    for (const std::string& s : element.values[index].strings()) add(s);
  }
}

// `in` with `feature` (at `index`) replaced by int64 values of `shape`, each
// element's from `convert`.
Pipeline Replaced(const Pipeline& in, int index, Shape shape, const char* name, int calls,
                  std::function<absl::Status(const Element&, TypedTensor*)> convert) {
  ElementSpec spec = in.spec();
  spec[index].type = ValueType::kInt64;
  spec[index].shape = std::move(shape);
  return in.Map(
      [index, convert = std::move(convert)](Element* e) -> absl::Status {
        TypedTensor ids;
        RW_RETURN_IF_ERROR(convert(*e, &ids));
        e->values[index] = std::move(ids);
        return absl::OkStatus();
      },
      calls, spec, name);
}

}  // namespace

uint64_t Fingerprint64(absl::string_view bytes) {
  const char* s = bytes.data();
  const uint64_t len = bytes.size();
  if (len <= 16) return HashLen0to16(s, len);
  if (len <= 32) return HashLen17to32(s, len);
  if (len <= 64) return HashLen33to64(s, len);
  // 64 bytes at a time into 56 bytes of state: v, w, x, y and z.
  const uint64_t seed = 81;
  uint64_t x = seed * kK2 + Load64(s), y = seed * kK1 + 113, z = ShiftMix(y * kK2 + 113) * kK2;
  std::pair<uint64_t, uint64_t> v = {0, 0}, w = {0, 0};
  const uint64_t end = ((len - 1) / 64) * 64, last64 = end + ((len - 1) & 63) - 63;
  const char* p = s;
  do {
    x = Rotate(x + y + v.first + Load64(p + 8), 37) * kK1;
    y = Rotate(y + v.second + Load64(p + 48), 42) * kK1;
    x ^= w.second;
    y += v.first + Load64(p + 40);
    z = Rotate(z + w.first, 33) * kK1;
    v = WeakHashLen32WithSeeds(p, v.second * kK1, x + w.first);
    w = WeakHashLen32WithSeeds(p + 32, z + w.second, y + Load64(p + 16));
    std::swap(z, x);
    p += 64;
  } while (p != s + end);
  const uint64_t mul = kK1 + ((z & 0xff) << 1);
  p = s + last64;  // The last 64 bytes.
  w.first += (len - 1) & 63;
  v.first += w.first;
  w.first += v.first;
  x = Rotate(x + y + v.first + Load64(p + 8), 37) * mul;
  y = Rotate(y + v.second + Load64(p + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + Load64(p + 40);
  z = Rotate(z + w.first, 33) * mul;
  v = WeakHashLen32WithSeeds(p, v.second * mul, x + w.first);
  w = WeakHashLen32WithSeeds(p + 32, z + w.second, y + Load64(p + 16));
  std::swap(z, x);
  return HashLen16(HashLen16(v.first, w.first, mul) + ShiftMix(y) * kK0 + z,
                   HashLen16(v.second, w.second, mul) + x, mul);
}

absl::StatusOr<Pipeline> Hashing(const Pipeline& in, const std::string& feature,
                                 HashingOptions options) {
  RW_ASSIGN_OR_RETURN(
      const int index,
      FeatureOf(in.spec(), feature, {ValueType::kString, ValueType::kInt64, ValueType::kInt32},
                "Hashing"));
  const uint64_t bins = static_cast<uint64_t>(options.num_bins) - (options.mask_value ? 1 : 0);
  if (options.num_bins < (options.mask_value ? 2 : 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Hashing \"", feature, "\": num_bins must be at least ",
                     options.mask_value ? 2 : 1, ", got ", options.num_bins));
  }
  const auto bin = [bins, mask = options.mask_value](const std::string& text) -> int64_t {
    if (mask && text == *mask) return 0;
    return static_cast<int64_t>(Fingerprint64(text) % bins) + (mask ? 1 : 0);
  };
  return Replaced(in, index, in.spec()[index].shape, "hashing", options.num_parallel_calls,
                  [index, bin](const Element& e, TypedTensor* out) {
                    const TypedTensor& v = e.values[index];
                    *out = TypedTensor(ValueType::kInt64, v.shape());
                    int64_t* ids = out->data<int64_t>();
                    for (int64_t i = 0; i < v.size(); ++i) {
                      ids[i] = bin(v.type() == ValueType::kString ? v.strings()[i]
                                   : v.type() == ValueType::kInt64
                                       ? std::to_string(v.data<int64_t>()[i])
                                       : std::to_string(v.data<int32_t>()[i]));
                    }
                    return absl::OkStatus();
                  });
}

absl::StatusOr<StringLookup> StringLookup::FromVocabulary(std::vector<std::string> vocabulary,
                                                          StringLookupOptions options) {
  StringLookup lookup;
  if (options.num_oov_indices < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "StringLookup: num_oov_indices must be 0 or more, got ", options.num_oov_indices));
  }
  lookup.first_token_ = options.num_oov_indices + (options.mask_token ? 1 : 0);
  // A vocabulary() given back: its mask token and "[UNK]"s in front are not tokens
  // (as Keras' set_vocabulary).
  size_t start = 0;
  if (options.mask_token && !vocabulary.empty() && vocabulary[0] == *options.mask_token) start = 1;
  for (int64_t i = 0;
       i < options.num_oov_indices && start < vocabulary.size() && vocabulary[start] == "[UNK]";
       ++i) {
    ++start;
  }
  vocabulary.erase(vocabulary.begin(), vocabulary.begin() + static_cast<int64_t>(start));
  for (std::string& token : vocabulary) {
    if (options.mask_token && token == *options.mask_token) {
      return absl::InvalidArgumentError(
          absl::StrCat("StringLookup: the vocabulary holds the mask token \"", token, "\""));
    }
    const int64_t at = lookup.first_token_ + static_cast<int64_t>(lookup.tokens_.size());
    if (!lookup.index_.emplace(token, at).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("StringLookup: the vocabulary holds \"", token, "\" twice"));
    }
    lookup.tokens_.push_back(std::move(token));
  }
  if (options.max_tokens >= 0 && lookup.vocabulary_size() > options.max_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("StringLookup: ", lookup.vocabulary_size(),
                                                   " indices are above max_tokens ",
                                                   options.max_tokens));
  }
  lookup.options_ = std::move(options);
  return lookup;
}

absl::StatusOr<StringLookup> StringLookup::Adapt(const Pipeline& data, const std::string& feature,
                                                 StringLookupOptions options) {
  std::map<std::string, int64_t> counts;
  RW_RETURN_IF_ERROR(ForEachString(data, feature, "StringLookup adapt", [&](const std::string& s) {
    // Keras' adapt counts neither the mask nor the OOV token.
    if ((!options.mask_token || s != *options.mask_token) && s != "[UNK]") ++counts[s];
  }));
  const int64_t reserved = options.num_oov_indices + (options.mask_token ? 1 : 0);
  return FromVocabulary(
      ByFrequency(counts, options.max_tokens < 0
                              ? -1
                              : std::max<int64_t>(0, options.max_tokens - reserved)),
      std::move(options));
}

std::vector<std::string> StringLookup::vocabulary() const {
  std::vector<std::string> out;
  if (options_.mask_token) out.push_back(*options_.mask_token);
  for (int64_t i = 0; i < options_.num_oov_indices; ++i) out.push_back("[UNK]");
  out.insert(out.end(), tokens_.begin(), tokens_.end());
  return out;
}

int64_t StringLookup::Lookup(absl::string_view token) const {
  const int64_t mask = options_.mask_token ? 1 : 0;
  if (mask && token == *options_.mask_token) return 0;
  const auto it = index_.find(std::string(token));
  if (it != index_.end()) return it->second;
  if (options_.num_oov_indices <= 1) return options_.num_oov_indices == 1 ? mask : -1;
  return mask + static_cast<int64_t>(Fingerprint64(token) %
                                     static_cast<uint64_t>(options_.num_oov_indices));
}

absl::StatusOr<Pipeline> StringLookup::Apply(const Pipeline& in, const std::string& feature,
                                             int num_parallel_calls) const {
  RW_ASSIGN_OR_RETURN(const int index,
                      FeatureOf(in.spec(), feature, {ValueType::kString}, "StringLookup"));
  return Replaced(in, index, in.spec()[index].shape, "string_lookup", num_parallel_calls,
                  [index, feature, lookup = std::make_shared<const StringLookup>(*this)](
                      const Element& e, TypedTensor* out) {
                    const TypedTensor& v = e.values[index];
                    *out = TypedTensor(ValueType::kInt64, v.shape());
                    for (int64_t i = 0; i < v.size(); ++i) {
                      const int64_t id = lookup->Lookup(v.strings()[i]);
                      if (id < 0) {
                        return absl::InvalidArgumentError(
                            absl::StrCat("StringLookup \"", feature, "\": \"", v.strings()[i],
                                         "\" is not in the vocabulary, and num_oov_indices is 0"));
                      }
                      out->data<int64_t>()[i] = id;
                    }
                    return absl::OkStatus();
                  });
}

absl::StatusOr<TextVectorization> TextVectorization::FromVocabulary(
    std::vector<std::string> vocabulary, TextVectorizationOptions options) {
  const std::vector<std::string> standardize = {"lower_and_strip_punctuation", "lower",
                                                "strip_punctuation", "none"};
  const std::vector<std::string> split = {"whitespace", "character", "none"};
  if (std::find(standardize.begin(), standardize.end(), options.standardize) == standardize.end() ||
      std::find(split.begin(), split.end(), options.split) == split.end() ||
      options.output_sequence_length < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TextVectorization: standardize \"", options.standardize, "\", split \"", options.split,
        "\" or output_sequence_length ", options.output_sequence_length,
        " is not supported (lower_and_strip_punctuation, lower, strip_punctuation, none; "
        "whitespace, character, none; 0 or more)"));
  }
  RW_ASSIGN_OR_RETURN(
      StringLookup lookup,
      StringLookup::FromVocabulary(
          std::move(vocabulary),
          {.max_tokens = options.max_tokens, .num_oov_indices = 1, .mask_token = ""}));
  return TextVectorization(std::move(options), std::move(lookup));
}

absl::StatusOr<TextVectorization> TextVectorization::Adapt(const Pipeline& data,
                                                           const std::string& feature,
                                                           TextVectorizationOptions options) {
  // Tokens need the options' standardize and split: a vocabulary-less instance makes them.
  RW_ASSIGN_OR_RETURN(TextVectorization splitter, FromVocabulary({}, options));
  std::map<std::string, int64_t> counts;
  RW_RETURN_IF_ERROR(
      ForEachString(data, feature, "TextVectorization adapt", [&](const std::string& s) {
        for (const std::string& t : splitter.Tokens(s)) {
          if (!t.empty() && t != "[UNK]") ++counts[t];
        }
      }));
  const int64_t keep = options.max_tokens < 0 ? -1 : std::max<int64_t>(0, options.max_tokens - 2);
  return FromVocabulary(ByFrequency(counts, keep), std::move(options));
}

std::vector<std::string> TextVectorization::Tokens(absl::string_view text) const {
  std::string s(text);
  const std::string& standardize = options_.standardize;
  if (standardize == "lower" || standardize == "lower_and_strip_punctuation") {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (standardize == "strip_punctuation" || standardize == "lower_and_strip_punctuation") {
    s.erase(std::remove_if(s.begin(), s.end(),
                           [](char c) { return std::ispunct(static_cast<unsigned char>(c)); }),
            s.end());
  }
  std::vector<std::string> tokens;
  if (options_.split == "none") {
    tokens.push_back(s);
  } else if (options_.split == "character") {  // UTF-8 characters, as Keras' unicode_split.
    for (char c : s) {
      const bool continues = (static_cast<unsigned char>(c) & 0xC0) == 0x80;
      if (continues && !tokens.empty()) {
        tokens.back() += c;
      } else {
        tokens.push_back(std::string(1, c));
      }
    }
  } else {
    std::string token;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!token.empty()) tokens.push_back(std::move(token));
        token.clear();
      } else {
        token += c;
      }
    }
    if (!token.empty()) tokens.push_back(std::move(token));
  }
  return tokens;
}

std::vector<int64_t> TextVectorization::Vectorize(absl::string_view text) const {
  std::vector<int64_t> ids;
  for (const std::string& token : Tokens(text)) ids.push_back(lookup_.Lookup(token));
  if (options_.output_sequence_length > 0) {
    ids.resize(static_cast<size_t>(options_.output_sequence_length), 0);  // Pad or cut.
  }
  return ids;
}

absl::StatusOr<Pipeline> TextVectorization::Apply(const Pipeline& in, const std::string& feature,
                                                  int num_parallel_calls) const {
  RW_ASSIGN_OR_RETURN(const int index,
                      FeatureOf(in.spec(), feature, {ValueType::kString}, "TextVectorization"));
  const Shape& shape = in.spec()[index].shape;
  if (!shape.empty() && shape != Shape{1}) {  // [1]: one string, as Keras squeezes it.
    return absl::InvalidArgumentError(absl::StrCat("TextVectorization \"", feature,
                                                   "\": one string per element, not ",
                                                   ShapeString(in.spec()[index].shape)));
  }
  const int64_t length = options_.output_sequence_length;
  return Replaced(in, index, {length > 0 ? length : -1}, "text_vectorization", num_parallel_calls,
                  [index, text = std::make_shared<const TextVectorization>(*this)](
                      const Element& e, TypedTensor* out) {
                    const std::vector<int64_t> ids = text->Vectorize(e.values[index].strings()[0]);
                    *out = TypedTensor(ValueType::kInt64, {static_cast<int64_t>(ids.size())});
                    std::copy(ids.begin(), ids.end(), out->data<int64_t>());
                    return absl::OkStatus();
                  });
}

}  // namespace ringwork
