#include "data/synthetic_clicks.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace ringwork {

ClickLog SyntheticClicks(const SyntheticClicksOptions& o) {
  std::mt19937_64 random(o.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // Hidden factors and biases; popular users and items by a skewed draw.
  std::vector<double> user(o.users * o.factors), item(o.items * o.factors), user_bias(o.users),
      item_bias(o.items);
  for (double& v : user) v = normal(random) / std::sqrt(static_cast<double>(o.factors));
  for (double& v : item) v = normal(random);
  for (double& v : user_bias) v = 0.5 * normal(random);
  for (double& v : item_bias) v = 0.5 * normal(random);
  const double weights[ClickLog::kNumericColumns] = {0.8, -0.5, 0.3};
  auto make = [&](int64_t count, std::vector<double>* probabilities) {
    Examples e;
    const int64_t width = ClickLog::kIdColumns + ClickLog::kNumericColumns;
    e.features = Tensor({count, width});
    e.labels.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t u =
          static_cast<int64_t>(std::pow(uniform(random), 2.0) * static_cast<double>(o.users));
      const int64_t v =
          static_cast<int64_t>(std::pow(uniform(random), 2.0) * static_cast<double>(o.items));
      double logit = -1.0 + user_bias[u] + item_bias[v];
      for (int64_t f = 0; f < o.factors; ++f)
        logit += user[u * o.factors + f] * item[v * o.factors + f];
      float* row = e.features.data() + i * width;
      row[0] = static_cast<float>(u);
      row[1] = static_cast<float>(o.users + v);
      for (int64_t k = 0; k < ClickLog::kNumericColumns; ++k) {
        const float x = static_cast<float>(normal(random));
        row[ClickLog::kIdColumns + k] = x;
        logit += weights[k] * x;
      }
      const double p = 1.0 / (1.0 + std::exp(-logit));
      e.labels[i] = uniform(random) < p ? 1 : 0;
      if (probabilities != nullptr) probabilities->push_back(p);
    }
    return e;
  };
  ClickLog log;
  log.num_ids = o.users + o.items;
  log.data.train = make(o.train, nullptr);
  std::vector<double> truth;
  log.data.test = make(o.test, &truth);
  log.bayes_auc = ExactAuc(truth, log.data.test.labels);
  return log;
}

double ExactAuc(const std::vector<double>& scores, const std::vector<int32_t>& labels) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney: the positives' mean rank among all (ties share their mean rank).
  double positive_rank_sum = 0, positives = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double rank = (static_cast<double>(i) + static_cast<double>(j - 1)) / 2 + 1;
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] != 0) {
        positive_rank_sum += rank;
        positives += 1;
      }
    }
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return 0;
  return (positive_rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

}  // namespace ringwork
