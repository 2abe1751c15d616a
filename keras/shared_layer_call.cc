#include "keras/shared_layer_call.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/keras_layer_config.h"
#include "keras/layers.h"

namespace ringwork {

SharedLayerCall::SharedLayerCall(Layer* owner, int call) : owner_(owner) {
  set_name(absl::StrCat(owner->name(), "@", call));
}

void SharedLayerCall::set_replica(int64_t replica) {
  replica_ = replica;
  if (copy_ != nullptr) copy_->set_replica(replica);
}

std::string SharedLayerCall::final_activation() const {
  const auto* logits = dynamic_cast<const LogitsOutput*>(copy_.get());
  return logits != nullptr ? logits->final_activation() : "";
}

bool SharedLayerCall::OutputLogits(bool logits) {
  auto* output = dynamic_cast<LogitsOutput*>(copy_.get());
  return output != nullptr && output->OutputLogits(logits);
}

void SharedLayerCall::set_training_step(int64_t step) {
  if (copy_ != nullptr) copy_->set_training_step(step);
}

std::string SharedLayerCall::config() const {
  const std::string own = owner_->config();
  return absl::StrCat("shares the weights of ", owner_->name(), own.empty() ? "" : "; ", own);
}

absl::StatusOr<Shape> SharedLayerCall::Build(const Shape& input, const BuildContext& ctx) {
  // From the built owner: some layers settle their config in Build.
  absl::StatusOr<std::unique_ptr<Layer>> copy =
      LayerFromKerasConfig(owner_->type(), owner_->keras_config(), "its Keras config", name_);
  if (!copy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(owner_->type(), " cannot be shared: ", copy.status().message()));
  }
  copy_ = std::move(*copy);
  copy_->set_replica(replica_);
  // Trainable while it is checked: a frozen BatchNormalization learns no batch
  // statistics until it is unfrozen.
  copy_->set_trainable(true);
  RW_ASSIGN_OR_RETURN(const Shape out, copy_->Build(input, ctx));
  if (copy_->batch_sums_size() > 0 || copy_->sums_over_replicas()) {
    return absl::InvalidArgumentError(
        absl::StrCat(type(),
                     " learns statistics of its batches, which every call would "
                     "update: it cannot be shared (call a layer of its own)"));
  }
  if (copy_->config() != owner_->config()) {
    return absl::InvalidArgumentError(
        absl::StrCat(type(), " cannot be shared: its Keras config leaves out settings it has (",
                     owner_->config(), "; rebuilt from the config: ", copy_->config(),
                     "); call a layer of its own"));
  }
  copy_->set_trainable(owner_->trainable());
  const std::vector<Variable*> mine = copy_->weights(), theirs = owner_->weights();
  for (size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
    if (i >= mine.size() || i >= theirs.size() ||
        mine[i]->value.shape() != theirs[i]->value.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the shared layer ", owner_->name(), "'s weights were made for its first call's input",
          i < theirs.size()
              ? absl::StrCat(" (", theirs[i]->name, " ", ShapeString(theirs[i]->value.shape()), ")")
              : "",
          "; this call's input would need ",
          i < mine.size() ? ShapeString(mine[i]->value.shape()) : "other weights"));
    }
  }
  grads_.clear();
  grads_.reserve(mine.size());  // Slots stay where the variables point.
  for (Variable* v : mine) {
    grads_.emplace_back(static_cast<size_t>(v->size()), 0.f);
    v->grad = grads_.back().data();
  }
  output_shape_ = out;
  return out;
}

const Layer& SharedLayerCall::WithOwnerValues() const {
  if (copy_->trainable() != owner_->trainable()) copy_->set_trainable(owner_->trainable());
  const std::vector<Variable*> mine = copy_->weights(), theirs = owner_->weights();
  for (size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(mine[i]->value.data(), theirs[i]->value.data(), sizeof(float) * mine[i]->size());
  }
  return *copy_;
}

absl::Status SharedLayerCall::Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) {
  WithOwnerValues();
  return copy_->Forward(k, x, y, training);
}

absl::Status SharedLayerCall::Backward(KernelContext& k, const Tensor& x, const Tensor& y,
                                       const Tensor& dy, Tensor* dx) {
  return copy_->Backward(k, x, y, dy, dx);
}

void SharedLayerCall::AddGradientsToOwner() {
  const std::vector<Variable*> mine = copy_->variables(), theirs = owner_->variables();
  for (size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i) {
    Variable& to = *theirs[i];
    const float* add = mine[i]->grad;
    if (!to.sparse_gradient) {
      for (int64_t e = 0; e < to.size(); ++e) to.grad[e] += add[e];
    } else {  // A table: only the rows this call wrote are not zero.
      const int64_t width = to.size() / std::max<int64_t>(to.value.dim(0), 1);
      for (int64_t row : mine[i]->touched_rows) {
        for (int64_t e = row * width; e < (row + 1) * width; ++e) to.grad[e] += add[e];
      }
      std::vector<int64_t> rows;
      std::set_union(to.touched_rows.begin(), to.touched_rows.end(), mine[i]->touched_rows.begin(),
                     mine[i]->touched_rows.end(), std::back_inserter(rows));
      to.touched_rows = std::move(rows);
    }
  }
}

}  // namespace ringwork
