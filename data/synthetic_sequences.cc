#include "data/synthetic_sequences.h"

#include <algorithm>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::StatusOr<SequenceSet> SyntheticSequences(const SyntheticSequencesOptions& o) {
  if (o.steps < 4 || o.vocabulary <= 6 || o.train < 1 || o.test < 1 ||
      !(o.noise >= 0 && o.noise < 0.75)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synthetic_sequences: ", o.steps, " steps, a vocabulary of ", o.vocabulary, ", noise ",
        o.noise, ", ", o.train, " and ", o.test,
        " examples: needs 4 or more steps (4 markers), a vocabulary above 6, noise in [0, "
        "0.75) and examples"));
  }
  std::mt19937_64 random(o.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::uniform_int_distribution<int64_t> filler(5, o.vocabulary - 1), other(1, 3);
  std::vector<int64_t> positions(static_cast<size_t>(o.steps));
  int64_t bayes_right = 0;
  auto make = [&](int64_t count, bool count_bayes) {
    Examples e;
    e.features = Tensor({count, o.steps});
    e.labels.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      float* row = e.features.data() + i * o.steps;
      for (int64_t t = 0; t < o.steps; ++t) row[t] = static_cast<float>(filler(random));
      for (int64_t t = 0; t < o.steps; ++t) positions[t] = t;
      // The markers' places: the first four of a random permutation.
      for (int64_t k = 0; k < 4; ++k) {
        std::uniform_int_distribution<int64_t> pick(k, o.steps - 1);
        std::swap(positions[k], positions[pick(random)]);
        row[positions[k]] = static_cast<float>(k + 1);
      }
      const int32_t truth =
          static_cast<int32_t>(2 * (positions[0] < positions[1]) + (positions[2] < positions[3]));
      int32_t label = truth;
      if (uniform(random) < o.noise) label = (truth + static_cast<int32_t>(other(random))) % 4;
      e.labels[i] = label;
      if (count_bayes) bayes_right += label == truth;
    }
    return e;
  };
  SequenceSet set;
  set.data.train = make(o.train, false);
  set.data.test = make(o.test, true);
  set.bayes_accuracy = static_cast<double>(bayes_right) / static_cast<double>(o.test);
  return set;
}

}  // namespace ringwork
