// Preprocessing layers: Keras' documented examples, CategoryEncoding against TF.js,
// Normalization's Adapt on 3 workers against the statistics of the whole data,
// Keras configs in and out, and the errors of bad input.
#include "keras/preprocessing.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/status_macros.h"
#include "keras/keras_import.h"
#include "keras/node_reference_testing.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"
#include "testing/subprocess.h"

namespace ringwork {
namespace {

// The layer alone on `x` ([batch, ...]).
absl::StatusOr<Tensor> Run(std::unique_ptr<Layer> layer, const Tensor& x) {
  Sequential model;
  model.Add(std::move(layer));
  CompileOptions compile;
  compile.loss = {"mse"};
  RW_RETURN_IF_ERROR(model.Compile(compile));
  RW_RETURN_IF_ERROR(model.Build(Shape(x.shape().begin() + 1, x.shape().end())));
  return model.Predict(x);
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.size());
}

Dataset FromRows(const std::vector<float>& values, int64_t width) {
  Examples e;
  const int64_t n = static_cast<int64_t>(values.size()) / width;
  e.features = Tensor({n, width}, values);
  e.labels.assign(static_cast<size_t>(n), 0);
  return Dataset::FromExamples(e);
}

TEST_CASE("Normalization as Keras' examples: adapted, or given mean and variance",
          "[preprocessing]") {
  std::unique_ptr<Layer> norm = Normalization();
  REQUIRE(Adapt(*norm, FromRows({0, 7, 4, 2, 9, 6, 0, 7, 4, 2, 9, 6}, 3)).ok());
  const Tensor y = *Run(std::move(norm), Tensor({1, 3}, {0, 7, 4}));
  CHECK(Values(y) == std::vector<float>{-1, -1, -1});
  const Tensor z = *Run(Normalization({.mean = {3}, .variance = {2}}), Tensor({3, 1}, {1, 2, 3}));
  CHECK(z[0] == Approx(-1.4142135f));
  CHECK(z[1] == Approx(-0.70710677f));
  CHECK(z[2] == 0);
  // A constant feature: variance 0 divides by Keras' epsilon, not by zero.
  std::unique_ptr<Layer> flat = Normalization();
  REQUIRE(Adapt(*flat, FromRows({5, 5, 5}, 1)).ok());
  CHECK(Values(*Run(std::move(flat), Tensor({1, 1}, {5}))) == std::vector<float>{0});
  CHECK_THAT(
      std::string(
          Run(Normalization({.mean = {1, 2}}), Tensor({1, 3}, {0, 0, 0})).status().message()),
      Catch::Contains("2 statistics for 3 features"));
}

TEST_CASE("Adapt on 3 workers: every worker the statistics of the whole data",
          "[preprocessing][distributed]") {
  std::vector<float> values;
  for (int i = 0; i < 301 * 2; ++i) {
    values.push_back(i % 2 == 0 ? 1000.f + static_cast<float>((i * 37) % 101) / 10.f
                                : static_cast<float>((i * 13) % 7) - 3.f);
  }
  double mean[2] = {0, 0}, variance[2] = {0, 0};
  for (int i = 0; i < 602; ++i) mean[i % 2] += values[i] / 301.0;
  for (int i = 0; i < 602; ++i) variance[i % 2] += std::pow(values[i] - mean[i % 2], 2) / 301.0;
  const Dataset data = FromRows(values, 2);
  const Tensor probe({1, 2}, {1003.f, 1.f});
  std::vector<std::vector<float>> outputs(3);
  LocalCluster::Options options;
  options.num_workers = 3;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    std::unique_ptr<Layer> norm = Normalization();
    RW_RETURN_IF_ERROR(Adapt(*norm, data));
    RW_ASSIGN_OR_RETURN(Tensor y, Run(std::move(norm), probe));
    outputs[w.rank] = Values(y);
    return absl::OkStatus();
  });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  CHECK(outputs[1] == outputs[0]);
  CHECK(outputs[2] == outputs[0]);
  for (int j = 0; j < 2; ++j) {
    INFO("feature " << j << ": mean " << mean[j] << ", variance " << variance[j]);
    // The layer keeps the mean in float32 (as Keras): 1005.01 to within 6e-5.
    const double expected =
        (probe[j] - static_cast<float>(mean[j])) / std::sqrt(static_cast<float>(variance[j]));
    CHECK(outputs[0][j] == Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("Discretization and IntegerLookup as Keras' examples", "[preprocessing]") {
  const Tensor buckets = *Run(Discretization({0.f, 1.f, 2.f}),
                              Tensor({2, 4}, {-1.5f, 1.f, 3.4f, .5f, 0.f, 3.f, 1.3f, 0.f}));
  CHECK(Values(buckets) == std::vector<float>{0, 2, 3, 1, 1, 3, 2, 1});
  const Tensor ids =
      *Run(IntegerLookup({12, 36, 1138, 42}), Tensor({2, 3}, {12, 1138, 42, 42, 1000, 36}));
  CHECK(Values(ids) == std::vector<float>{1, 3, 4, 4, 0, 2});
  CHECK_THAT(std::string(Run(IntegerLookup({1, 2}), Tensor({1, 1}, {1.5f})).status().message()),
             Catch::Contains("1.5 (example 0 of the batch) is not a whole number"));
  CHECK_THAT(std::string(Run(IntegerLookup({1, 1}), Tensor({1, 1}, {1})).status().message()),
             Catch::Contains("twice in the vocabulary"));
  CHECK_THAT(
      std::string(Run(Discretization({0.f}), Tensor({1, 1}, {std::nanf("")})).status().message()),
      Catch::Contains("NaN"));
  CHECK_FALSE(Run(Discretization({1.f, 0.f}), Tensor({1, 1}, {0})).ok());
}

// TF.js' CategoryEncoding on the same ids.
std::vector<float> TfjsCategoryEncoding(int64_t tokens, const std::string& mode,
                                        const std::vector<float>& ids, Shape shape) {
  RequireNodePackage("@tensorflow/tfjs");
  const nlohmann::json c = {{"num_tokens", tokens}, {"mode", mode}, {"ids", ids}, {"shape", shape}};
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/node", "keras/testdata/tfjs_category_encoding.js", c.dump()}, NodeOptions());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output.substr(r.output.find("{\"values\"")))["values"]
      .get<std::vector<float>>();
}

TEST_CASE("CategoryEncoding's one_hot, multi_hot and count equal TF.js'", "[preprocessing][tfjs]") {
  const std::vector<float> ids = {0, 1, 1, 3, 2, 2, 0, 1};
  for (const auto& [ours, theirs] : {std::pair{"multi_hot", "multiHot"}, {"count", "count"}}) {
    INFO(ours);
    const Tensor y = *Run(CategoryEncoding(4, ours), Tensor({2, 4}, ids));
    CHECK(y.shape() == Shape{2, 4});
    CHECK(Values(y) == TfjsCategoryEncoding(4, theirs, ids, {2, 4}));
  }
  const Tensor one_hot = *Run(CategoryEncoding(4, "one_hot"), Tensor({3, 1}, {3, 0, 2}));
  CHECK(one_hot.shape() == Shape{3, 4});
  CHECK(Values(one_hot) == TfjsCategoryEncoding(4, "oneHot", {3, 0, 2}, {3, 1}));
  CHECK_THAT(std::string(Run(CategoryEncoding(4), Tensor({1, 2}, {1, 4})).status().message()),
             Catch::Contains("id 4 (example 0) is outside [0, 4)"));
}

TEST_CASE("preprocessing layers in Keras configs and .keras archives", "[preprocessing][keras]") {
  const std::string json = R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 2]}},
      {"class_name": "IntegerLookup", "config": {"vocabulary": [7, 9], "num_oov_indices": 1,
        "mask_token": null, "oov_token": -1, "output_mode": "int", "invert": false,
        "vocabulary_dtype": "int64", "max_tokens": null, "pad_to_max_tokens": false,
        "vocabulary_size": 3, "oov_method": "farmhash",
        "sparse": false, "idf_weights": null}},
      {"class_name": "CategoryEncoding", "config": {"num_tokens": 3, "output_mode": "count",
        "sparse": false}},
      {"class_name": "Normalization", "config": {"axis": -1, "mean": [1, 0, 0],
        "variance": [4, 1, 1], "invert": false}}]}})";
  absl::StatusOr<Model> model = ModelFromKerasJson(json);
  INFO(model.status().message());
  REQUIRE(model.ok());
  CompileOptions compile;
  compile.loss = {"mse"};
  REQUIRE(model->Compile(compile).ok());
  REQUIRE(model->Build({2}).ok());
  // [9, 5] -> ids [2, 0] -> counts [1, 0, 1] -> normalized [0, 0, 1].
  const Tensor x({1, 2}, {9, 5});
  CHECK(Values(*model->Predict(x)) == std::vector<float>{0, 0, 1});

  const std::string path =
      (std::filesystem::temp_directory_path() / "preprocessing_test.keras").string();
  REQUIRE(SaveModel(*model, path).ok());
  absl::StatusOr<Model> loaded = LoadModel(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(Values(*loaded->Predict(x)) == std::vector<float>{0, 0, 1});
  std::filesystem::remove(path);
  // TF.js has no Normalization or IntegerLookup: its export says so.
  CHECK_THAT(std::string(SaveModel(*model, path + "_tfjs").message()),
             Catch::Contains("which TF.js lacks"));
  // An adapted Discretization as Keras writes it: num_bins beside the boundaries.
  const std::string bins = R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 1]}},
      {"class_name": "Discretization", "config": {"bin_boundaries": [0.5], "num_bins": 2,
        "epsilon": 0.01, "output_mode": "int", "sparse": false}}]}})";
  CHECK(ModelFromKerasJson(bins).ok());
}

}  // namespace
}  // namespace ringwork
