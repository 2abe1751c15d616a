#include "strategy/gradient_reducer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/transport/in_memory_link.h"
#include "testing/rank_threads.h"

namespace ringwork {
namespace {

std::vector<std::unique_ptr<Variable>> MakeVariables(const std::vector<int64_t>& sizes) {
  std::vector<std::unique_ptr<Variable>> vars;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto v = std::make_unique<Variable>();
    v->name = "v" + std::to_string(i);
    v->value = Tensor({sizes[i]});
    vars.push_back(std::move(v));
  }
  return vars;
}

// The variables as GradientReducer takes them.
std::vector<Variable*> Pointers(const std::vector<std::unique_ptr<Variable>>& vars) {
  std::vector<Variable*> raw;
  for (const auto& v : vars) raw.push_back(v.get());
  return raw;
}

TEST_CASE("packs follow the backward order and respect the size", "[reducer]") {
  InMemoryNetwork network(1);
  Communicator comm(network.transport(0), CollectiveOptions());
  auto vars = MakeVariables({100, 10, 5000, 20, 30});
  std::vector<Variable*> raw = Pointers(vars);
  GradientReducer reducer(&comm, raw, {/*bytes_per_pack=*/400, true});
  // Backward order v4 v3 v2 v1 v0, packs closed before they outgrow 100 floats
  // (v1 and v0 together would be 110).
  CHECK(reducer.num_packs() == 4);
  CHECK(reducer.DebugString() == "4 packs: 200 B [v4, v3]; 19 KiB [v2]; 40 B [v1]; 400 B [v0]");
  CHECK(vars[4]->grad + 30 == vars[3]->grad);  // Contiguous in the arena.
}

TEST_CASE("gradients are averaged over the replicas, with and without overlap", "[reducer]") {
  for (bool overlap : {true, false}) {
    const int p = 3;
    InMemoryNetwork network(p);
    std::vector<std::vector<std::unique_ptr<Variable>>> vars(p);
    auto results = RunOnRanks(p, [&](int rank) {
      Communicator comm(network.transport(rank), CollectiveOptions());
      vars[rank] = MakeVariables({7, 300, 11, 4096, 3});
      std::vector<Variable*> raw = Pointers(vars[rank]);
      GradientReducer reducer(&comm, raw, {/*bytes_per_pack=*/1024, overlap});
      const auto start = std::chrono::steady_clock::now();
      for (int step = 0; step < 20; ++step) {
        reducer.BeginStep();
        // Backward: last variable first, each gradient rank * 100 + step + index.
        for (int i = static_cast<int>(raw.size()) - 1; i >= 0; --i) {
          for (int64_t j = 0; j < raw[i]->size(); ++j)
            raw[i]->grad[j] = rank * 100.f + step + j % 3;
          reducer.Ready(raw[i]);
        }
        absl::Status st = reducer.FinishStep();
        if (!st.ok()) return st;
        for (Variable* v : raw) {
          for (int64_t j = 0; j < v->size(); ++j) {
            if (v->grad[j] != 100.f + step + j % 3) {  // mean of 0, 100, 200 is 100
              return absl::InternalError(v->name + " not averaged");
            }
          }
        }
      }
      // Where the time went: packs reduced, the caller blocked no longer than it ran.
      const double wall_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const GradientReducer::Timing timing = reducer.TakeTiming();
      if (!(timing.communication_s > 0 && timing.exposed_s >= 0 && timing.exposed_s <= wall_s &&
            timing.communication_s <= wall_s)) {
        return absl::InternalError(absl::StrCat("timing ", timing.communication_s, " s, exposed ",
                                                timing.exposed_s, " s, in ", wall_s, " s"));
      }
      if (!overlap && timing.exposed_s != timing.communication_s) {
        return absl::InternalError("without overlap every reduction is exposed");
      }
      const GradientReducer::Timing again = reducer.TakeTiming();
      if (again.communication_s != 0 || again.exposed_s != 0)
        return absl::InternalError("not reset");
      return absl::OkStatus();
    });
    for (int r = 0; r < p; ++r) {
      INFO("overlap " << overlap << " rank " << r << ": " << results[r].message());
      CHECK(results[r].ok());
    }
  }
}

TEST_CASE("without overlap anywhere a step is one all-reduce; one overlapping worker keeps packs",
          "[reducer]") {
  // Workers may differ (a host with fewer cores per worker does not overlap): the
  // first step agrees, and every worker then runs the same collectives.
  for (const int overlapping_rank : {-1, 0, 2}) {
    const int p = 3;
    InMemoryNetwork network(p);
    auto results = RunOnRanks(p, [&](int rank) -> absl::Status {
      Communicator comm(network.transport(rank), CollectiveOptions());
      auto vars = MakeVariables({7, 300, 11, 4096, 3});
      std::vector<Variable*> raw = Pointers(vars);
      GradientReducer reducer(&comm, raw, {/*bytes_per_pack=*/1024, rank == overlapping_rank});
      const bool in_one = overlapping_rank < 0;
      for (int step = 0; step < 3; ++step) {
        const uint64_t before = comm.collectives_started();
        reducer.BeginStep(rank == 1 ? 0.5f : 1.f);
        for (int i = static_cast<int>(raw.size()) - 1; i >= 0; --i) {
          for (int64_t j = 0; j < raw[i]->size(); ++j)
            raw[i]->grad[j] = rank * 100.f + step + j % 3;
          reducer.Ready(raw[i]);
        }
        RW_RETURN_IF_ERROR(reducer.FinishStep());
        // The first step also agrees (one all-reduce).
        const uint64_t expected = (in_one ? 1 : reducer.num_packs()) + (step == 0 ? 1 : 0);
        if (comm.collectives_started() - before != expected) {
          return absl::InternalError(absl::StrCat("step ", step, ": ",
                                                  comm.collectives_started() - before,
                                                  " collectives, expected ", expected));
        }
        if (reducer.reduces_in_one() != in_one) return absl::InternalError("packing not agreed");
        for (Variable* v : raw) {
          for (int64_t j = 0; j < v->size(); ++j) {
            // (0 + 0.5 * 100 + 200) / 3 + step + j % 3, rank 1 weighted by a half.
            const float want = (0.5f * (100.f + step + j % 3) + 2 * (step + j % 3) + 200.f) / 3;
            if (std::fabs(v->grad[j] - want) > 1e-4f) {
              return absl::InternalError(
                  absl::StrCat(v->name, "[", j, "] = ", v->grad[j], ", expected ", want));
            }
          }
        }
      }
      return absl::OkStatus();
    });
    for (int r = 0; r < p; ++r) {
      INFO("overlapping rank " << overlapping_rank << ", rank " << r << ": "
                               << results[r].message());
      CHECK(results[r].ok());
    }
  }
}

TEST_CASE("no agreement where every worker decides alike: no dense gradients, one pack",
          "[reducer]") {
  struct Case {
    std::vector<int64_t> sizes;
    GradientCompression compression;
    int collectives_per_step;
  };
  // 1024-byte packs: {7, 30} is one.
  for (const Case& c :
       {Case{{}, GradientCompression::kNone, 0}, Case{{7, 30}, GradientCompression::kNone, 1},
        Case{{7, 30}, GradientCompression::kBFloat16, 1}}) {
    INFO(c.sizes.size() << " variables, compression " << GradientCompressionName(c.compression));
    const int p = 3;
    InMemoryNetwork network(p);
    auto results = RunOnRanks(p, [&](int rank) -> absl::Status {
      Communicator comm(network.transport(rank), CollectiveOptions());
      auto vars = MakeVariables(c.sizes);
      std::vector<Variable*> raw = Pointers(vars);
      GradientReducer::Options options;
      options.bytes_per_pack = 1024;
      options.overlap = rank == 0;  // Workers differ, yet ask nothing.
      options.compression = c.compression;
      GradientReducer reducer(&comm, raw, options);
      for (int step = 0; step < 2; ++step) {
        const uint64_t before = comm.collectives_started();
        reducer.BeginStep();
        for (int i = static_cast<int>(raw.size()) - 1; i >= 0; --i) {
          for (int64_t j = 0; j < raw[i]->size(); ++j) raw[i]->grad[j] = rank + 1.f;
          reducer.Ready(raw[i]);
        }
        RW_RETURN_IF_ERROR(reducer.FinishStep());
        if (comm.collectives_started() - before != static_cast<uint64_t>(c.collectives_per_step)) {
          return absl::InternalError(
              absl::StrCat("step ", step, ": ", comm.collectives_started() - before,
                           " collectives, expected ", c.collectives_per_step));
        }
        for (Variable* v : raw) {
          for (int64_t j = 0; j < v->size(); ++j) {
            if (v->grad[j] != 2.f)
              return absl::InternalError(absl::StrCat(v->name, " = ", v->grad[j]));
          }
        }
      }
      if (reducer.reduces_in_one()) return absl::InternalError("these reduce pack by pack");
      return absl::OkStatus();
    });
    for (int r = 0; r < p; ++r) {
      INFO("rank " << r << ": " << results[r].message());
      CHECK(results[r].ok());
    }
  }
}

TEST_CASE("compressed gradients too go in one all-reduce when no worker overlaps", "[reducer]") {
  // 1024-byte packs: five. All in one, the staging buffer holds all of them.
  for (const int overlapping_rank : {-1, 1}) {
    INFO("overlapping rank " << overlapping_rank);
    const int p = 3;
    InMemoryNetwork network(p);
    auto results = RunOnRanks(p, [&](int rank) -> absl::Status {
      Communicator comm(network.transport(rank), CollectiveOptions());
      auto vars = MakeVariables({7, 300, 11, 4096, 3});
      std::vector<Variable*> raw = Pointers(vars);
      GradientReducer::Options options;
      options.bytes_per_pack = 1024;
      options.overlap = rank == overlapping_rank;
      options.compression = GradientCompression::kBFloat16;
      GradientReducer reducer(&comm, raw, options);
      const bool in_one = overlapping_rank < 0;
      for (int step = 0; step < 2; ++step) {
        const uint64_t before = comm.collectives_started();
        reducer.BeginStep();
        for (int i = static_cast<int>(raw.size()) - 1; i >= 0; --i) {
          // Mean 2 + step/4 + (j % 3)/8: exact in bfloat16 at every hop.
          for (int64_t j = 0; j < raw[i]->size(); ++j)
            raw[i]->grad[j] = rank + 1.f + step * 0.25f + (j % 3) * 0.125f;
          reducer.Ready(raw[i]);
        }
        RW_RETURN_IF_ERROR(reducer.FinishStep());
        const uint64_t expected = (in_one ? 1 : reducer.num_packs()) + (step == 0 ? 1 : 0);
        if (comm.collectives_started() - before != expected) {
          return absl::InternalError(absl::StrCat("step ", step, ": ",
                                                  comm.collectives_started() - before,
                                                  " collectives, expected ", expected));
        }
        for (Variable* v : raw) {
          for (int64_t j = 0; j < v->size(); ++j) {
            const float want = 2.f + step * 0.25f + (j % 3) * 0.125f;
            if (v->grad[j] != want) {
              return absl::InternalError(
                  absl::StrCat(v->name, "[", j, "] = ", v->grad[j], ", expected ", want));
            }
          }
        }
      }
      if (reducer.reduces_in_one() != in_one) return absl::InternalError("packing not agreed");
      // The staging buffer: the whole arena (4417 gradients) in one, else the largest pack (4096).
      const int64_t wire = (reducer.arena_bytes() - 4417 * 4) / 2;
      if (wire != (in_one ? 4417 : 4096))
        return absl::InternalError(absl::StrCat("staging buffer of ", wire));
      return absl::OkStatus();
    });
    for (int r = 0; r < p; ++r) {
      INFO("rank " << r << ": " << results[r].message());
      CHECK(results[r].ok());
    }
  }
}

TEST_CASE("bfloat16 compression: sums in float32 per hop, the same result on every replica",
          "[reducer]") {
  CHECK(*ParseGradientCompression("bf16") == GradientCompression::kBFloat16);
  CHECK(*ParseGradientCompression("none") == GradientCompression::kNone);
  CHECK(ParseGradientCompression("fp16").status().message() ==
        "gradient compression \"fp16\": expected none or bf16");
  for (const int p : {3, 4}) {
    for (const AllReduceAlgorithm algorithm :
         {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kRecursiveDoubling}) {
      INFO(p << " ranks, " << AllReduceAlgorithmName(algorithm));
      InMemoryNetwork network(p);
      std::vector<std::vector<float>> got(p);
      auto results = RunOnRanks(p, [&](int rank) {
        CollectiveOptions collective_options;
        collective_options.allreduce_algorithm = algorithm;
        Communicator comm(network.transport(rank), collective_options);
        auto vars = MakeVariables({5000, 37});
        std::vector<Variable*> raw{vars[0].get(), vars[1].get()};
        GradientReducer::Options options;
        options.bytes_per_pack = 4096;  // Two packs: [v1], [v0].
        options.compression = GradientCompression::kBFloat16;
        GradientReducer reducer(&comm, raw, options);
        reducer.BeginStep();
        for (int i = 1; i >= 0; --i) {
          for (int64_t j = 0; j < raw[i]->size(); ++j) {
            raw[i]->grad[j] =
                (rank + 1) * 0.37f + static_cast<float>(j) * 1e-3f - (i == 1 ? 2.f : 0.f);
          }
          reducer.Ready(raw[i]);
        }
        RW_RETURN_IF_ERROR(reducer.FinishStep());
        if (comm.last_allreduce_algorithm() != algorithm)
          return absl::InternalError("another algorithm ran");
        for (Variable* v : raw) got[rank].insert(got[rank].end(), v->grad, v->grad + v->size());
        return absl::OkStatus();
      });
      for (int r = 0; r < p; ++r) REQUIRE(results[r].ok());
      for (int r = 1; r < p; ++r) CHECK(got[r] == got[0]);  // Bit for bit.
      const float mean_of_ranks = 0.37f * static_cast<float>(p + 1) / 2;
      for (size_t k = 0; k < got[0].size(); ++k) {
        const int i = k < 5000 ? 0 : 1;
        const float j = static_cast<float>(k < 5000 ? k : k - 5000);
        const float exact = mean_of_ranks + j * 1e-3f - (i == 1 ? 2.f : 0.f);
        // Each value and each hop's sum rounds to 8 significant bits: a few units of 2^-8.
        INFO("element " << k << ": " << got[0][k] << " vs " << exact);
        CHECK(std::fabs(got[0][k] - exact) <= 4 * std::ldexp(std::fabs(exact) + 0.5f, -8));
        // It travelled as bfloat16: what arrives is a bfloat16 value.
        CHECK(BFloat16::FromFloat(got[0][k]).ToFloat() == got[0][k]);
      }
    }
  }
}

TEST_CASE("a failure during the reduction is returned by FinishStep", "[reducer]") {
  InMemoryNetwork network(2);
  auto results = RunOnRanks(2, [&](int rank) {
    CollectiveOptions options;
    options.timeout_s = 10;
    Communicator comm(network.transport(rank), options);
    auto vars = MakeVariables({1000});
    GradientReducer reducer(&comm, {vars[0].get()}, {0, true});
    if (rank == 1) {
      network.Kill(1);
      return absl::OkStatus();
    }
    reducer.BeginStep();
    reducer.Ready(vars[0].get());
    return reducer.FinishStep();
  });
  INFO(results[0].message());
  CHECK(absl::IsAborted(results[0]));  // The killed rank's cause, passed on.
  CHECK(results[0].message().find("rank 1 killed") == 0);
}

}  // namespace
}  // namespace ringwork
