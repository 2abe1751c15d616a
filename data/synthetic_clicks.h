// A seeded click log with a known best achievable AUC, for models with embeddings
// (Wide & Deep): each example is a user id, an item id and a few numeric features;
// a click is drawn from a logistic model over hidden user and item factors and the
// numeric features, so the AUC of the true click probabilities on the test set
// (`bayes_auc`) bounds what any model can reach there.
//
//   ClickLog log = SyntheticClicks({.train = 60000, .test = 10000});
//   // features [n, 5]: user id, num_users + item id (one id space), x1, x2, x3
//   log.data.train, log.data.test, log.bayes_auc, log.num_ids
#ifndef RINGWORK_DATA_SYNTHETIC_CLICKS_H_
#define RINGWORK_DATA_SYNTHETIC_CLICKS_H_

#include <cstdint>
#include <vector>

#include "data/fashion_mnist.h"

namespace ringwork {

struct SyntheticClicksOptions {
  int64_t train = 60000;
  int64_t test = 10000;
  int64_t users = 1000;
  int64_t items = 500;
  int64_t factors = 4;  // Of the hidden user and item vectors.
  uint64_t seed = 7;
};

struct ClickLog {
  TrainTest data;
  double bayes_auc = 0;  // Of the true probabilities on the test set.
  int64_t num_ids = 0;   // users + items: ids are in [0, num_ids).
  static constexpr int64_t kIdColumns = 2;
  static constexpr int64_t kNumericColumns = 3;
};

ClickLog SyntheticClicks(const SyntheticClicksOptions& options);

// The exact area under the ROC curve of `scores` for binary `labels` (ties count
// half); 0 without positives or negatives.
double ExactAuc(const std::vector<double>& scores, const std::vector<int32_t>& labels);

}  // namespace ringwork

#endif  // RINGWORK_DATA_SYNTHETIC_CLICKS_H_
