#include "data/fashion_mnist.h"

#include <sys/stat.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "data/idx_reader.h"

namespace ringwork {
namespace {

absl::StatusOr<Examples> LoadPair(const std::string& dir, const std::string& prefix) {
  Examples e;
  RW_ASSIGN_OR_RETURN(e.features,
                      ReadIdxImages(absl::StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz")));
  RW_ASSIGN_OR_RETURN(e.labels,
                      ReadIdxLabels(absl::StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz")));
  if (e.features.dim(0) != e.count()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/", prefix, ": ", e.features.dim(0),
                                                   " images but ", e.count(), " labels"));
  }
  return e;
}

}  // namespace

absl::StatusOr<TrainTest> LoadFashionMnist(const std::string& dir) {
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0) {
    return absl::NotFoundError(
        absl::StrCat("--data_dir=", dir,
                     " does not exist; install Debian's dataset-fashion-mnist "
                     "(scripts/setup.sh does) or point --data_dir at the IDX files"));
  }
  TrainTest data;
  RW_ASSIGN_OR_RETURN(data.train, LoadPair(dir, "train"));
  RW_ASSIGN_OR_RETURN(data.test, LoadPair(dir, "t10k"));
  return data;
}

TrainTest SyntheticImages(int64_t train_count, int64_t test_count, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t pixels = 28 * 28, classes = 10;
  std::vector<float> teacher(pixels * classes);
  for (float& w : teacher) w = normal(random);
  auto make = [&](int64_t count) {
    Examples e;
    e.features = Tensor({count, 28, 28, 1});
    e.labels.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      float* x = e.features.data() + i * pixels;
      for (int64_t p = 0; p < pixels; ++p) x[p] = uniform(random);
      int32_t best = 0;
      float best_score = -1e30f;
      for (int64_t c = 0; c < classes; ++c) {
        float score = 0;
        for (int64_t p = 0; p < pixels; ++p) score += x[p] * teacher[p * classes + c];
        if (score > best_score) {
          best_score = score;
          best = static_cast<int32_t>(c);
        }
      }
      e.labels[i] = best;
    }
    return e;
  };
  TrainTest data;
  data.train = make(train_count);
  data.test = make(test_count);
  return data;
}

}  // namespace ringwork
