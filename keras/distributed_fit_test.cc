// fit() on in-process clusters of real workers: every replica ends with the same
// weights, bit for bit, and reports the same history.
#include <catch2/catch.hpp>

#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

uint64_t Fingerprint(const Sequential& model) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const Variable* v : model.variables()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(v->value.data());
    for (size_t i = 0; i < v->value.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

TEST_CASE("replicas stay bit-identical and agree on every number", "[distributed]") {
  TrainTest data = SyntheticImages(3072, 512, 5);
  Dataset train = Dataset::FromExamples(data.train);
  Dataset test = Dataset::FromExamples(data.test);
  for (int inter_op : {1, 2}) {
    INFO("inter_op_threads " << inter_op);
    LocalCluster::Options options;
    options.num_workers = 3;
    options.strategy.inter_op_threads = inter_op;
    options.strategy.communication.bytes_per_pack = 64 << 10;  // Several packs.
    std::vector<uint64_t> fingerprints(3);
    std::vector<double> losses(3), accuracies(3);
    auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      auto scope = w.strategy->scope();
      Sequential model;
      model.Add(Flatten());
      model.Add(Dense(64, {.activation = "relu"}));
      model.Add(Dropout(0.1));
      model.Add(Dense(10));
      CompileOptions compile;
      compile.loss = {"sparse_categorical_crossentropy", true};
      compile.intra_op_threads = 1;
      RW_RETURN_IF_ERROR(model.Compile(compile));
      FitOptions fit;
      fit.epochs = 2;
      fit.batch_size = 96;
      fit.verbose = 0;
      absl::StatusOr<History> history = model.Fit(train, fit);
      if (!history.ok()) return history.status();
      absl::StatusOr<EvaluateResult> result = model.Evaluate(test);
      if (!result.ok()) return result.status();
      fingerprints[w.rank] = Fingerprint(model);
      losses[w.rank] = (*history)["loss"].back();
      accuracies[w.rank] = result->metrics["accuracy"];
      return absl::OkStatus();
    });
    for (int r = 0; r < 3; ++r) {
      INFO("worker " << r << ": " << results[r].message());
      REQUIRE(results[r].ok());
      CHECK(fingerprints[r] == fingerprints[0]);
      CHECK(losses[r] == losses[0]);
      CHECK(accuracies[r] == accuracies[0]);
    }
    CHECK(accuracies[0] > 0.3);
  }
}

}  // namespace
}  // namespace ringwork
