// fit() over TFRecord files streamed through a pipeline: every example once per
// epoch under FILE (uneven files: no worker hangs, none is repeated or dropped)
// and DATA (with a shuffle, a parallel parse and a filter), a global batch the
// workers do not divide, and what a corrupt record does to every worker.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/pipeline/test_records.h"
#include "data/pipeline/tfrecord_source.h"
#include "keras/input_report.h"
#include "keras/record_ids_testing.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// Records {"x": [i, 1], "y": i % 10} in files of `sizes` records.
std::vector<std::string> Files(const std::string& name, const std::vector<int64_t>& sizes) {
  return WriteExampleFiles(FreshTestDir(name), sizes, [](int64_t i) {
    return SerializeExample({{"x", {static_cast<float>(i), 1.f}}}, {{"y", {i % 10}}});
  });
}

Pipeline Parsed(const std::vector<std::string>& files) {
  auto parser = ExampleParser::Create(
      {{.name = "x", .shape = {2}}, {.name = "y", .type = ValueType::kInt64, .shape = {}}});
  REQUIRE(parser.ok());
  return TFRecordPipeline(files).Map(ParseExamplesFn(*parser), 2, ParsedSpec(*parser));
}

struct Run {
  std::vector<Record> records;  // By rank.
  std::vector<std::vector<int64_t>> examples_per_epoch;
  std::vector<std::map<std::string, std::vector<double>>> history;  // By rank.
  std::vector<absl::Status> results;
};

// With `make`, each worker trains on what it makes (a dataset function); `data`
// is then only evaluated.
Run Train(int workers, const Pipeline& data, FitOptions fit, const DatasetFn* make = nullptr) {
  Run run;
  run.records.resize(static_cast<size_t>(workers));
  run.examples_per_epoch.resize(static_cast<size_t>(workers));
  run.history.resize(static_cast<size_t>(workers));
  LocalCluster::Options options;
  options.num_workers = workers;
  run.results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(std::make_unique<RecordIds>(&run.records[static_cast<size_t>(w.rank)]));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    // Each worker's own copy: the workers are threads, and writing the shared
    // options from each raced (a double free in the binding's strings).
    FitOptions own = fit;
    own.verbose = 0;
    own.binding = {.features = {"x"}, .targets = {"y"}};
    RW_ASSIGN_OR_RETURN(History history,
                        make != nullptr ? model.Fit(*make, own) : model.Fit(data, own));
    run.examples_per_epoch[static_cast<size_t>(w.rank)] = history.examples_per_epoch();
    run.history[static_cast<size_t>(w.rank)] = history.history();
    // Every worker evaluates its share; all get the same numbers.
    // Evaluate would stop at a bad record, or never end on a Repeat()ed pipeline.
    if (fit.ignore_errors || fit.steps_per_epoch > 0) return absl::OkStatus();
    RW_ASSIGN_OR_RETURN(EvaluateResult result, model.Evaluate(data, own.binding, 7));
    if (result.examples != history.examples_per_epoch().back()) {
      return absl::InternalError(absl::StrCat("evaluated ", result.examples, " examples"));
    }
    return absl::OkStatus();
  });
  return run;
}

// Per epoch, the sorted ids every rank trained on; `*steps`: the steps rank 0
// trained with examples (every epoch has as many here).
std::vector<std::vector<int64_t>> IdsByEpoch(const Run& run, int64_t epochs, int64_t* steps) {
  *steps = static_cast<int64_t>(run.records[0].size());
  const int64_t per_epoch = std::max<int64_t>(*steps / epochs, 1);
  std::vector<std::vector<int64_t>> by_epoch(static_cast<size_t>(epochs));
  for (const Record& r : run.records) {
    for (const auto& [step, ids] : r) {
      auto& epoch = by_epoch[static_cast<size_t>(std::min(step / per_epoch, epochs - 1))];
      epoch.insert(epoch.end(), ids.begin(), ids.end());
    }
  }
  for (auto& ids : by_epoch) std::sort(ids.begin(), ids.end());
  return by_epoch;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST_CASE("FILE: uneven files on 2 workers, every example once per epoch", "[pipeline_fit]") {
  const Pipeline data = Parsed(Files("fit_file", {45, 10, 5, 3}));
  Run run = Train(2, data, {.epochs = 2, .batch_size = 8});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  for (const auto& per_epoch : run.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{63, 63});
  }
  int64_t steps = 0;
  for (const auto& ids : IdsByEpoch(run, 2, &steps)) CHECK(ids == Iota(63));
  // Worker 0 reads files 0 and 2 (50 records: 13 steps of 4), worker 1 files 1 and
  // 3 (13: 4 steps); the epoch has worker 0's steps, worker 1 joins with empty ones.
  CHECK(steps == 2 * 13);
}

TEST_CASE("DATA: one file, a shuffle and an uneven split, every example once", "[pipeline_fit]") {
  const Pipeline data =
      Parsed(Files("fit_data", {100})).Shuffle(30, /*seed=*/5).Batch(10);  // Batched: global 10.
  Run run = Train(3, data, {.epochs = 2});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  for (const auto& per_epoch : run.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{100, 100});
  }
  int64_t steps = 0;
  const auto by_epoch = IdsByEpoch(run, 2, &steps);
  for (const auto& ids : by_epoch) CHECK(ids == Iota(100));
  CHECK(steps == 2 * 10);
  // Worker 0 takes 4 of each global batch of 10, the others 3.
  for (const auto& [step, ids] : run.records[0]) CHECK(ids.size() == 4);
  for (const auto& [step, ids] : run.records[2]) CHECK(ids.size() == 3);
}

TEST_CASE("DATA: a filter after the shard leaves steps of varying size", "[pipeline_fit]") {
  const Pipeline data =
      Parsed(Files("fit_filter", {60})).Filter([](const Element& e) -> absl::StatusOr<bool> {
        return static_cast<int64_t>(e.values[0].data<float>()[0]) % 3 != 0;
      });
  Run run = Train(2, data, {.epochs = 1, .batch_size = 6, .shard_policy = AutoShardPolicy::kData});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < 60; ++i) {
    if (i % 3 != 0) kept.push_back(i);
  }
  int64_t steps = 0;
  CHECK(IdsByEpoch(run, 1, &steps)[0] == kept);
  CHECK(run.examples_per_epoch[0] == std::vector<int64_t>{40});
}

TEST_CASE("a corrupt record stops every worker with exit 8, naming the file and record",
          "[pipeline_fit]") {
  std::vector<std::string> files = Files("fit_corrupt", {30, 30});
  std::stringstream bytes;
  bytes << std::ifstream(files[1], std::ios::binary).rdbuf();
  std::string corrupt = bytes.str();
  corrupt[corrupt.size() / 2] ^= 0x08;
  std::ofstream(files[1], std::ios::binary | std::ios::trunc) << corrupt;
  Run run = Train(2, Parsed(files), {.epochs = 1, .batch_size = 4});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    CHECK(ExitCodeFor(s) == kInvalidData);
    CHECK(std::string(s.message()).find(files[1] + ": record ") != std::string::npos);
  }
}

// Every rank's ids of global steps [first, last), together, sorted.
std::vector<int64_t> IdsOfSteps(const Run& run, int64_t first, int64_t last) {
  std::vector<int64_t> ids;
  for (const Record& r : run.records) {
    for (auto it = r.lower_bound(first); it != r.end() && it->first < last; ++it) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST_CASE("a dataset function: each worker shards and batches its own, every example once",
          "[pipeline_fit]") {
  const Pipeline data = Parsed(Files("fit_fn", {50}));
  std::vector<InputContext> seen(3);
  const DatasetFn make = [&](const InputContext& c) -> absl::StatusOr<Pipeline> {
    seen[static_cast<size_t>(c.input_pipeline_id)] = c;
    return data.Shard(c.num_input_pipelines, c.input_pipeline_id).Batch(c.PerReplicaBatch());
  };
  // Global batch 10 on 3 workers: 4, 3, 3; shards of 17, 17, 16 examples.
  Run run = Train(3, data, {.epochs = 2, .batch_size = 10}, &make);
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  CHECK(seen[1].num_input_pipelines == 3);
  CHECK(seen[1].global_batch == 10);
  CHECK(seen[0].PerReplicaBatch() == 4);
  CHECK(seen[2].PerReplicaBatch() == 3);
  for (const auto& per_epoch : run.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{50, 50});
  }
  // An epoch is 6 steps (workers 1 and 2: 17 and 16 examples by 3), worker 0's
  // last one empty.
  CHECK(IdsOfSteps(run, 0, 6) == Iota(50));
  CHECK(IdsOfSteps(run, 6, 12) == Iota(50));
  for (const auto& [step, ids] : run.records[0]) CHECK(ids.size() <= 4);
}

TEST_CASE("steps_per_epoch: epochs of K steps from one stream that goes on across them",
          "[pipeline_fit]") {
  // 60 records in one file (DATA), global batch 4: a pass is 15 steps.
  const Pipeline once = Parsed(Files("fit_steps", {60}));
  Run run = Train(2, once.Repeat(), {.epochs = 4, .batch_size = 4, .steps_per_epoch = 5});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  for (const auto& per_epoch : run.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{20, 20, 20, 20});
  }
  CHECK(IdsOfSteps(run, 0, 15) == Iota(60));   // The first pass, whole, across 3 epochs.
  CHECK(IdsOfSteps(run, 15, 20) == Iota(20));  // The second goes on in the same order.
  // Not repeated: 3 epochs of 10 steps need 30; the data has 15. As Keras, training
  // stops when the input runs out (a warning), after epoch 2's first 5 steps.
  Run short_run = Train(2, once, {.epochs = 3, .batch_size = 4, .steps_per_epoch = 10});
  for (const absl::Status& s : short_run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  for (const auto& per_epoch : short_run.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{40, 20});
  }
  CHECK(IdsOfSteps(short_run, 0, 100) == Iota(60));
}

TEST_CASE("ignore_errors: a corrupt record is skipped, counted over every worker, reported",
          "[pipeline_fit]") {
  std::vector<std::string> files = Files("fit_skip", {30, 30});
  std::stringstream bytes;
  bytes << std::ifstream(files[1], std::ios::binary).rdbuf();
  std::string corrupt = bytes.str();
  corrupt[48 * 15 + 12 + 5] ^= 0x08;  // In record 15's data (48-byte records): its CRC fails.
  std::ofstream(files[1], std::ios::binary | std::ios::trunc) << corrupt;
  Run run = Train(2, Parsed(files), {.epochs = 2, .batch_size = 4, .ignore_errors = true});
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    REQUIRE(s.ok());
  }
  for (int rank = 0; rank < 2; ++rank) {
    const auto& h = run.history[static_cast<size_t>(rank)];
    INFO("rank " << rank);
    REQUIRE(h.count(kInputSkipped));
    CHECK(h.at(kInputSkipped) == std::vector<double>{1, 1});  // Over both workers.
    CHECK(run.examples_per_epoch[static_cast<size_t>(rank)] == std::vector<int64_t>{59, 59});
    // This worker's stages, from the source: the parse on 2 threads, with its buffer.
    REQUIRE(h.count("input_pipeline/1_map_x2/busy"));
    CHECK(h.at("input_pipeline/1_map_x2/busy")[0] >= 0);
    CHECK(h.at("input_pipeline/1_map_x2/busy")[0] <= 1);
    CHECK(h.count("input_pipeline/1_map_x2/buffer_fill"));
    CHECK(h.count("input_pipeline/1_map_x2/upstream"));
  }
  // DATA (one file): every worker reads the bad record; it is counted once.
  Run data = Train(2, Parsed({files[1]}),
                   {.epochs = 2,
                    .batch_size = 4,
                    .ignore_errors = true,
                    .shard_policy = AutoShardPolicy::kData});
  for (const absl::Status& s : data.results) REQUIRE(s.ok());
  for (const auto& h : data.history) CHECK(h.at(kInputSkipped) == std::vector<double>{1, 1});
  for (const auto& per_epoch : data.examples_per_epoch) {
    CHECK(per_epoch == std::vector<int64_t>{29, 29});
  }
}

TEST_CASE("the input warning names the stage that held training up, and what helps",
          "[pipeline_fit]") {
  using Stage = PipelineStats::StageSnapshot;
  const std::vector<Stage> decode_bound = {{.name = "decode x2", .threads = 2, .busy_s = 1.9},
                                           {.name = "prefetch", .input_s = 1.9}};
  CHECK(InputReport::Diagnose(decode_bound, 1.0, 0.15, 2).empty());  // Under 1/5: quiet.
  const std::string all_cores = InputReport::Diagnose(decode_bound, 1.0, 0.4, 2);
  CHECK(all_cores.find("waited 40% of their time") != std::string::npos);
  CHECK(all_cores.find("\"decode x2\" was busy 95% of its 2 threads' time") != std::string::npos);
  CHECK(all_cores.find("fewer workers per host") != std::string::npos);
  const std::vector<Stage> one_thread = {{.name = "parse x1", .threads = 1, .busy_s = 0.9}};
  CHECK(InputReport::Diagnose(one_thread, 1.0, 0.5, 4).find("num_parallel_calls") !=
        std::string::npos);
  const std::vector<Stage> reading = {
      {.name = "parse x2", .threads = 2, .busy_s = 0.2, .input_s = 0.8}};
  CHECK(InputReport::Diagnose(reading, 1.0, 0.5, 2).find("Reading the source took 80%") !=
        std::string::npos);
  // One thread on one core: the training thread decodes, and that is the wait.
  const std::vector<Stage> inline_map = {{.name = "decode x1", .threads = 1, .busy_s = 0.55}};
  const std::string on_training = InputReport::Diagnose(inline_map, 1.0, 0.6, 1);
  CHECK(on_training.find("\"decode x1\" was busy 55%") != std::string::npos);
  CHECK(on_training.find("it runs on the training thread") != std::string::npos);
  const std::vector<Stage> starved = {{.name = "parse x2", .threads = 2, .busy_s = 0.2}};
  CHECK(InputReport::Diagnose(starved, 1.0, 0.5, 2).find("--intra_op_threads") !=
        std::string::npos);
}

TEST_CASE("Predict over a pipeline: every element in order, as Predict over the tensor",
          "[pipeline_fit]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        model.Add(Dense(4));
        CompileOptions compile;
        compile.loss = {"sparse_categorical_crossentropy", true};
        compile.intra_op_threads = 1;
        RW_RETURN_IF_ERROR(model.Compile(compile));
        TypedTensor x(ValueType::kFloat32, {23, 3}), y(ValueType::kInt64, {23});
        Tensor tensor({23, 3});
        for (int64_t i = 0; i < 69; ++i) {
          x.data<float>()[i] = tensor.data()[i] = std::sin(0.3f * i);
        }
        RW_ASSIGN_OR_RETURN(Pipeline data, TensorSlicesPipeline({{"x", x}, {"y", y}}));
        RW_ASSIGN_OR_RETURN(Tensor from_tensor, model.Predict(tensor, 5));
        RW_ASSIGN_OR_RETURN(Tensor from_pipeline, model.Predict(data, {.features = {"x"}}, 5));
        if (from_pipeline.shape() != Shape{23, 4} ||
            !std::equal(from_tensor.data(), from_tensor.data() + from_tensor.size(),
                        from_pipeline.data())) {
          return absl::InternalError("the pipeline's predictions differ");
        }
        if (model.Predict(data).ok()) return absl::InternalError("an unnamed input accepted");
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) {
    INFO(s.message());
    CHECK(s.ok());
  }
}

// Elements {"x": [i % 7, 1], "y": i % 3, "w": 0.5 + (i % 4)} in memory.
Pipeline Weighted(int64_t n) {
  TypedTensor x(ValueType::kFloat32, {n, 2}), y(ValueType::kInt64, {n}),
      w(ValueType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[2 * i] = static_cast<float>(i % 7) / 7;
    x.data<float>()[2 * i + 1] = 1;
    y.data<int64_t>()[i] = i % 3;
    w.data<float>()[i] = 0.5f + static_cast<float>(i % 4);
  }
  return *TensorSlicesPipeline({{"x", x}, {"y", y}, {"w", w}});
}

// The loss of each epoch of a run on `workers`, with sample and class weights.
std::vector<double> WeightedLosses(int workers) {
  std::vector<std::vector<double>> losses(static_cast<size_t>(workers));
  LocalCluster::Options options;
  options.num_workers = workers;
  const Pipeline data = Weighted(53);  // Global batch 10: the last is short.
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        model.Add(Dense(3));
        CompileOptions compile;
        compile.loss = {"sparse_categorical_crossentropy", true};
        compile.optimizer = {.name = "sgd", .learning_rate = 0.5f};
        compile.intra_op_threads = 1;
        RW_RETURN_IF_ERROR(model.Compile(compile));
        FitOptions fit;
        fit.epochs = 3;
        fit.batch_size = 10;
        fit.verbose = 0;
        fit.binding = {.features = {"x"}, .targets = {"y"}, .sample_weight = "w"};
        fit.class_weight = {{1, 3.f}};
        RW_ASSIGN_OR_RETURN(History history, model.Fit(data, fit));
        losses[static_cast<size_t>(w.rank)] = history["loss"];
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  for (const auto& l : losses) CHECK(l == losses[0]);  // Every worker reports the same.
  return losses[0];
}

TEST_CASE("sample and class weights: one global weighted mean on any number of workers",
          "[pipeline_fit]") {
  const std::vector<double> one = WeightedLosses(1);
  const std::vector<double> three = WeightedLosses(3);
  REQUIRE(one.size() == 3);
  for (size_t e = 0; e < one.size(); ++e) CHECK(three[e] == Approx(one[e]).epsilon(1e-5));
  CHECK(one.back() < one.front());
}

}  // namespace
}  // namespace ringwork
