// Text from strings to a trained model on 2 workers: TextVectorization in the
// pipeline (the same vocabulary on every worker), Embedding with mask_zero, a
// Bidirectional LSTM over the padded ids, Fit over real gRPC/shared memory:
// replicas stay bit-identical and the model learns a rule that needs the words.
#include <catch2/catch.hpp>
#include <cstring>

#include "base/status_macros.h"
#include "data/pipeline/string_preprocessing.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

// Reviews of 2 to 9 words; positive when "great" comes before "awful" or
// "awful" is absent and "great" present. The order matters.
Pipeline Reviews(int64_t count) {
  const std::vector<std::string> filler = {"the", "film",   "was",  "plot",  "and",
                                           "a",   "acting", "long", "music", "very"};
  std::vector<std::string> texts;
  TypedTensor labels(ValueType::kInt64, {count});
  uint64_t state = 12345;
  const auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int64_t i = 0; i < count; ++i) {
    const int64_t words = 2 + static_cast<int64_t>(next(8));
    std::vector<std::string> w;
    for (int64_t k = 0; k < words; ++k) w.push_back(filler[next(filler.size())]);
    const int64_t kind = static_cast<int64_t>(next(4));  // great only, awful only, both orders
    const size_t a = next(w.size()), b = next(w.size());
    const size_t first = std::min(a, b), second = std::max(a, b) + 1;
    if (kind == 0) w.insert(w.begin() + static_cast<int64_t>(a), "Great!");
    if (kind == 1) w.insert(w.begin() + static_cast<int64_t>(a), "awful.");
    if (kind >= 2) {
      w.insert(w.begin() + static_cast<int64_t>(first), kind == 2 ? "great," : "Awful");
      w.insert(w.begin() + static_cast<int64_t>(second), kind == 2 ? "awful" : "GREAT");
    }
    std::string text;
    for (const std::string& word : w) text += (text.empty() ? "" : " ") + word;
    texts.push_back(text);
    labels.data<int64_t>()[i] = kind == 0 || kind == 2;
  }
  absl::StatusOr<Pipeline> p =
      TensorSlicesPipeline({{"review", TypedTensor::Strings(texts)}, {"label", labels}});
  REQUIRE(p.ok());
  return *p;
}

TEST_CASE("strings to a trained Bidirectional LSTM on 2 workers, replicas bit-identical",
          "[strings][distributed]") {
  const Pipeline train = Reviews(800);
  std::vector<std::vector<float>> weights(2);
  std::vector<double> accuracy(2);
  LocalCluster::Options options;
  options.num_workers = 2;
  const std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        RW_ASSIGN_OR_RETURN(
            TextVectorization text,
            TextVectorization::Adapt(train, "review", {.output_sequence_length = 12}));
        RW_ASSIGN_OR_RETURN(Pipeline ids, text.Apply(train, "review"));
        auto scope = w.strategy->scope();
        Sequential model;
        model.Add(
            Embedding(static_cast<int64_t>(text.vocabulary().size()), 8, {.mask_zero = true}));
        model.Add(Bidirectional(LSTM(8)));
        model.Add(Dense(2));
        CompileOptions compile;
        compile.loss = {"sparse_categorical_crossentropy", true};
        compile.optimizer = {.name = "adam", .learning_rate = 0.02f};
        compile.intra_op_threads = 1;
        RW_RETURN_IF_ERROR(model.Compile(compile));
        FitOptions fit;
        fit.epochs = 6;
        fit.batch_size = 32;
        fit.verbose = 0;
        fit.binding = {.features = {"review"}, .targets = {"label"}};
        RW_RETURN_IF_ERROR(model.Fit(ids, fit).status());
        RW_ASSIGN_OR_RETURN(EvaluateResult result, model.Evaluate(ids, fit.binding, 64));
        accuracy[static_cast<size_t>(w.rank)] = result.metrics.at("accuracy");
        for (const Variable* v : model.weights()) {
          weights[static_cast<size_t>(w.rank)].insert(weights[static_cast<size_t>(w.rank)].end(),
                                                      v->value.data(), v->value.data() + v->size());
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  REQUIRE(weights[0].size() == weights[1].size());
  CHECK(std::memcmp(weights[0].data(), weights[1].data(), weights[0].size() * 4) == 0);
  CHECK(accuracy[0] == accuracy[1]);
  INFO("accuracy " << accuracy[0]);
  CHECK(accuracy[0] > 0.95);  // The rule needs the two words and their order.
}

}  // namespace
}  // namespace ringwork
