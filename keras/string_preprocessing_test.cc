// Keras' string preprocessing in pipelines (data/pipeline/string_preprocessing.h):
// Fingerprint64 and Hashing's bins against TensorFlow.js' stringToHashBucketFast
// (TensorFlow's farmhash, ported by the TensorFlow team); StringLookup's and
// TextVectorization's vocabularies and ids as Keras' rules give them, by hand.
#include "data/pipeline/string_preprocessing.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "keras/node_reference_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Strings of every length branch of farmhash (0..16, 17..32, 33..64, longer), some
// with bytes above 127.
std::vector<std::string> Probes() {
  std::vector<std::string> out;
  for (int len = 0; len <= 150; len += (len < 70 ? 1 : 7)) {
    std::string s;
    for (int i = 0; i < len; ++i)
      s += static_cast<char>(len % 3 == 0 ? 'a' + (i * 7 + len) % 26 : 32 + (i * 31 + len) % 95);
    out.push_back(s);
  }
  out.push_back("caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac");
  // Bytes above 127 in every short branch (a sign-extended byte would differ), and
  // 128 and 129 bytes (one block exactly, and one more byte).
  for (int len : {1, 2, 3, 5, 7, 9, 20, 40, 128, 129}) {
    std::string s;
    for (int i = 0; i < len; ++i) s += static_cast<char>(0x80 + (i * 37 + len) % 128);
    out.push_back(s);
  }
  return out;
}

TEST_CASE("Fingerprint64 bins equal TF.js' stringToHashBucketFast", "[strings]") {
  RequireNodePackage("@tensorflow/tfjs");
  const std::string dir = FreshTestDir("fingerprint");
  const std::vector<std::string> probes = Probes();
  {
    std::ofstream out(dir + "/probes.txt", std::ios::binary);
    for (const std::string& s : probes) {
      for (unsigned char c : s) out << static_cast<int>(c) << ' ';
      out << '\n';
    }
  }
  const std::string script = R"(
const tf = require('@tensorflow/tfjs'); const fs = require('fs');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').slice(0, -1);
// Each probe as its bytes (a Uint8Array): TF.js hashes them as they are.
const values = lines.map(l => new Uint8Array(l.trim() === '' ? [] : l.trim().split(' ').map(Number)));
(async () => {
  for (const bins of [1000, 1073741824]) {
    const t = tf.tensor(values, [values.length], 'string');
    console.log(Array.from(await tf.string.stringToHashBucketFast(t, bins).data()).join(' '));
  }
})();
)";
  std::ofstream(dir + "/hash.js") << script;
  const SubprocessResult r =
      RunSubprocess({"/usr/bin/node", dir + "/hash.js", dir + "/probes.txt"}, NodeOptions());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.output);
  std::string line;
  int rows = 0;
  for (const uint64_t bins : {uint64_t{1000}, uint64_t{1} << 30}) {
    bool found = false;  // TF.js' banner lines first.
    while (!found && std::getline(lines, line)) found = !line.empty() && std::isdigit(line[0]);
    REQUIRE(found);
    std::istringstream values(line);
    for (const std::string& s : probes) {
      int64_t expected = -1;
      values >> expected;
      INFO("length " << s.size() << ", " << bins << " bins");
      CHECK(static_cast<int64_t>(Fingerprint64(s) % bins) == expected);
    }
    int64_t extra = 0;
    CHECK_FALSE(values >> extra);  // As many bins as probes.
  }
}

// Elements {"city": string, "n": int64} of `cities`.
Pipeline Cities(const std::vector<std::string>& cities) {
  std::vector<int64_t> n(cities.size());
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<int64_t>(i) * 21;
  TypedTensor numbers(ValueType::kInt64, {static_cast<int64_t>(n.size())});
  std::copy(n.begin(), n.end(), numbers.data<int64_t>());
  absl::StatusOr<Pipeline> p =
      TensorSlicesPipeline({{"city", TypedTensor::Strings(cities)}, {"n", numbers}});
  REQUIRE(p.ok());
  return *p;
}

std::vector<int64_t> Ids(const Pipeline& p, const std::string& feature) {
  std::vector<int64_t> out;
  auto it = p.Iterate();
  Element e;
  const int index = FeatureIndex(p.spec(), feature);
  while (true) {
    absl::StatusOr<bool> more = it->Next(&e);
    REQUIRE(more.ok());
    if (!*more) return out;
    const TypedTensor& v = e.values[index];
    out.insert(out.end(), v.data<int64_t>(), v.data<int64_t>() + v.size());
  }
}

TEST_CASE("Hashing: strings and integers (as their decimal text), a mask value", "[strings]") {
  const Pipeline data = Cities({"paris", "", "oslo", "paris"});
  absl::StatusOr<Pipeline> hashed = Hashing(data, "city", {.num_bins = 7});
  REQUIRE(hashed.ok());
  CHECK(hashed->spec()[0].type == ValueType::kInt64);
  CHECK(Ids(*hashed, "city") ==
        std::vector<int64_t>{static_cast<int64_t>(Fingerprint64("paris") % 7),
                             static_cast<int64_t>(Fingerprint64("") % 7),
                             static_cast<int64_t>(Fingerprint64("oslo") % 7),
                             static_cast<int64_t>(Fingerprint64("paris") % 7)});
  absl::StatusOr<Pipeline> masked = Hashing(data, "city", {.num_bins = 7, .mask_value = ""});
  REQUIRE(masked.ok());
  const std::vector<int64_t> bins = Ids(*masked, "city");
  CHECK(bins[1] == 0);
  CHECK(bins[0] == 1 + static_cast<int64_t>(Fingerprint64("paris") % 6));
  absl::StatusOr<Pipeline> numbers = Hashing(data, "n", {.num_bins = 100});
  REQUIRE(numbers.ok());
  CHECK(Ids(*numbers, "n")[2] == static_cast<int64_t>(Fingerprint64("42") % 100));
  CHECK_THAT(std::string(Hashing(data, "town", {.num_bins = 2}).status().message()),
             Contains("no feature \"town\""));
  CHECK_THAT(std::string(Hashing(data, "city", {.num_bins = 0}).status().message()),
             Contains("num_bins must be at least 1"));
}

TEST_CASE("StringLookup: Keras' adapt order, OOV and mask indices, max_tokens", "[strings]") {
  const Pipeline data = Cities({"b", "a", "c", "a", "b", "d", "a"});
  absl::StatusOr<StringLookup> lookup = StringLookup::Adapt(data, "city");
  REQUIRE(lookup.ok());
  // a x3, b x2, then c and d once each: ties in reverse order.
  CHECK(lookup->vocabulary() == std::vector<std::string>{"[UNK]", "a", "b", "d", "c"});
  absl::StatusOr<StringLookup> again = StringLookup::FromVocabulary(lookup->vocabulary());
  REQUIRE(again.ok());  // Keras' set_vocabulary(get_vocabulary()): the same ids.
  CHECK(again->vocabulary() == lookup->vocabulary());
  CHECK(again->Lookup("d") == 3);
  absl::StatusOr<StringLookup> unknown =
      StringLookup::Adapt(Cities({"[UNK]", "q", "[UNK]"}), "city");
  REQUIRE(unknown.ok());  // The OOV token is no token of the vocabulary.
  CHECK(unknown->vocabulary() == std::vector<std::string>{"[UNK]", "q"});
  absl::StatusOr<Pipeline> ids = lookup->Apply(Cities({"a", "zz", "c"}), "city");
  REQUIRE(ids.ok());
  CHECK(Ids(*ids, "city") == std::vector<int64_t>{1, 0, 4});

  absl::StatusOr<StringLookup> masked =
      StringLookup::Adapt(data, "city", {.max_tokens = 4, .mask_token = ""});
  REQUIRE(masked.ok());
  CHECK(masked->vocabulary() == std::vector<std::string>{"", "[UNK]", "a", "b"});
  CHECK(masked->Lookup("") == 0);
  CHECK(masked->Lookup("b") == 3);
  CHECK(masked->Lookup("d") == 1);

  absl::StatusOr<StringLookup> two = StringLookup::FromVocabulary({"x"}, {.num_oov_indices = 2});
  REQUIRE(two.ok());
  CHECK(two->Lookup("x") == 2);
  CHECK(two->Lookup("zz") == static_cast<int64_t>(Fingerprint64("zz") % 2));

  absl::StatusOr<StringLookup> strict = StringLookup::FromVocabulary({"a"}, {.num_oov_indices = 0});
  REQUIRE(strict.ok());
  absl::StatusOr<Pipeline> refused = strict->Apply(Cities({"a", "q"}), "city");
  REQUIRE(refused.ok());
  auto it = refused->Iterate();
  Element e;
  REQUIRE(it->Next(&e).ok());
  const absl::StatusOr<bool> second = it->Next(&e);
  CHECK_THAT(std::string(second.status().message()),
             Contains("\"q\" is not in the vocabulary, and num_oov_indices is 0"));
  CHECK_THAT(std::string(StringLookup::FromVocabulary({"a", "a"}).status().message()),
             Contains("holds \"a\" twice"));
  CHECK_THAT(std::string(StringLookup::Adapt(data, "n").status().message()),
             Contains("feature \"n\" is int64, not strings"));
}

TEST_CASE("TextVectorization: standardize, split, Keras' vocabulary, padded ids", "[strings]") {
  const Pipeline data = Cities({"The cat sat.", "the dog, the CAT!"});
  absl::StatusOr<TextVectorization> text =
      TextVectorization::Adapt(data, "city", {.output_sequence_length = 5});
  REQUIRE(text.ok());
  CHECK(text->vocabulary() == std::vector<std::string>{"", "[UNK]", "the", "cat", "sat", "dog"});
  absl::StatusOr<TextVectorization> again =
      TextVectorization::FromVocabulary(text->vocabulary(), {.output_sequence_length = 5});
  REQUIRE(again.ok());
  CHECK(again->Vectorize("the bird sat") == text->Vectorize("the bird sat"));
  CHECK(text->Tokens("Hello,   World!\thello") ==
        std::vector<std::string>{"hello", "world", "hello"});
  CHECK(text->Vectorize("the bird sat") == std::vector<int64_t>{2, 1, 4, 0, 0});
  CHECK(text->Vectorize("the the the cat cat dog") == std::vector<int64_t>{2, 2, 2, 3, 3});
  absl::StatusOr<Pipeline> ids = text->Apply(Cities({"A dog.", "sat"}), "city");
  REQUIRE(ids.ok());
  CHECK(ids->spec()[0].shape == Shape{5});
  CHECK(Ids(*ids, "city") == std::vector<int64_t>{1, 5, 0, 0, 0, 4, 0, 0, 0, 0});
  // On 3 threads: the same ids, in order.
  std::vector<std::string> many;
  for (int i = 0; i < 60; ++i)
    many.push_back(i % 3 == 0 ? "the cat" : i % 3 == 1 ? "dog" : "sat on the dog");
  absl::StatusOr<Pipeline> serial = text->Apply(Cities(many), "city");
  absl::StatusOr<Pipeline> parallel = text->Apply(Cities(many), "city", 3);
  REQUIRE((serial.ok() && parallel.ok()));
  CHECK(Ids(*parallel, "city") == Ids(*serial, "city"));
  // One string as [1] (Keras squeezes it): as [].
  TypedTensor column(ValueType::kString, {2, 1});
  column.strings() = {"the cat", "a dog"};
  absl::StatusOr<Pipeline> shaped = TensorSlicesPipeline({{"city", column}});
  REQUIRE(shaped.ok());
  absl::StatusOr<Pipeline> squeezed = text->Apply(*shaped, "city");
  REQUIRE(squeezed.ok());
  CHECK(Ids(*squeezed, "city") == std::vector<int64_t>{2, 3, 0, 0, 0, 1, 5, 0, 0, 0});

  absl::StatusOr<TextVectorization> ragged =
      TextVectorization::FromVocabulary({"x", "y"}, {.standardize = "none", .split = "character"});
  REQUIRE(ragged.ok());
  CHECK(ragged->Vectorize("xyz") == std::vector<int64_t>{2, 3, 1});
  CHECK(ragged->Tokens("x\xc3\xa9y") == std::vector<std::string>{"x", "\xc3\xa9", "y"});
  absl::StatusOr<Pipeline> variable = ragged->Apply(Cities({"xy"}), "city");
  REQUIRE(variable.ok());
  CHECK(variable->spec()[0].shape == Shape{-1});
  CHECK_THAT(
      std::string(TextVectorization::FromVocabulary({}, {.split = "comma"}).status().message()),
      Contains("is not supported"));
}

}  // namespace
}  // namespace ringwork
