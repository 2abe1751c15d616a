// Fashion-MNIST from Debian's dataset-fashion-mnist package (60000 training and
// 10000 test images, 28x28 grey, 10 classes), and a synthetic stand-in of the
// same shape whose labels a model can learn.
//
//   RW_ASSIGN_OR_RETURN(TrainTest data, LoadFashionMnist(kFashionMnistDir));
//   // data.train: 60000 examples of [28, 28, 1] and their labels 0-9; data.test: 10000
//   TrainTest synthetic = SyntheticImages(/*train_count=*/4096, /*test_count=*/1024, /*seed=*/1);
#ifndef RINGWORK_DATA_FASHION_MNIST_H_
#define RINGWORK_DATA_FASHION_MNIST_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "data/examples.h"

namespace ringwork {

inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

struct TrainTest {
  Examples train;
  Examples test;
};

// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir`. A missing
// directory says which Debian package provides it.
absl::StatusOr<TrainTest> LoadFashionMnist(const std::string& dir);

// 28x28x1 images whose label is the argmax of a fixed random linear function of
// the pixels: learnable, deterministic in `seed`.
TrainTest SyntheticImages(int64_t train_count, int64_t test_count, uint64_t seed);

}  // namespace ringwork

#endif  // RINGWORK_DATA_FASHION_MNIST_H_
