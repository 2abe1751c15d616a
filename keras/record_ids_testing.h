// Test support: a layer that records which example ids each training step of a
// replica saw (an example's id is its feature 0), for exactly-once tests.
//
//   Record ids;
//   model.Add(std::make_unique<RecordIds>(&ids));  // first, before the real layers
//   ... fit ...  ids[global_step] == the ids this replica trained on then
#ifndef RINGWORK_KERAS_RECORD_IDS_TESTING_H_
#define RINGWORK_KERAS_RECORD_IDS_TESTING_H_

#include <algorithm>
#include <map>
#include <vector>

#include "keras/layer.h"

namespace ringwork {

// Global step -> the example ids this replica trained on then.
using Record = std::map<int64_t, std::vector<int64_t>>;

// Passes its input on; in training, records each example's id (its feature 0).
class RecordIds : public Layer {
 public:
  explicit RecordIds(Record* record) : record_(record) {}
  std::string type() const override { return "RecordIds"; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    output_shape_ = input;
    return input;
  }
  void set_training_step(int64_t step) override { step_ = step; }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    y->Resize(x.shape());
    std::copy(x.data(), x.data() + x.size(), y->data());
    if (training) {
      const int64_t batch = x.shape()[0], size = x.size() / std::max<int64_t>(1, batch);
      for (int64_t i = 0; i < batch; ++i) {
        (*record_)[step_].push_back(static_cast<int64_t>(x.data()[i * size]));
      }
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx != nullptr) {
      dx->Resize(x.shape());
      std::copy(dy.data(), dy.data() + dy.size(), dx->data());
    }
    return absl::OkStatus();
  }

 private:
  Record* record_;  // Not owned.
  int64_t step_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_RECORD_IDS_TESTING_H_
