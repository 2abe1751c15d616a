#include "data/dataset.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::string_view AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kData:
      return "data";
    case AutoShardPolicy::kFile:
      return "file";
    case AutoShardPolicy::kOff:
      return "off";
    case AutoShardPolicy::kAuto:
      return "auto";
  }
  return "?";
}

bool ParseAutoShardPolicy(absl::string_view text, AutoShardPolicy* out) {
  for (AutoShardPolicy p : {AutoShardPolicy::kData, AutoShardPolicy::kFile, AutoShardPolicy::kOff,
                            AutoShardPolicy::kAuto}) {
    if (text == AutoShardPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

Dataset::Dataset() : examples_(std::make_shared<const Examples>()) {}

Dataset Dataset::FromExamples(Examples examples) {
  return Dataset(std::make_shared<const Examples>(std::move(examples)));
}

Dataset Dataset::Shuffle(uint64_t seed) const {
  Dataset d = *this;
  d.shuffle_ = true;
  d.seed_ = seed;
  return d;
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  Dataset d = *this;
  d.batch_size_ = std::max<int64_t>(1, batch_size);
  d.drop_remainder_ = drop_remainder;
  return d;
}

Dataset Dataset::Prefetch(int64_t buffer_batches) const {
  Dataset d = *this;
  d.prefetch_ = std::max<int64_t>(0, buffer_batches);
  return d;
}

Dataset Dataset::Repeat(int64_t count) const {
  Dataset d = *this;
  d.repeat_ = count;
  return d;
}

absl::StatusOr<Dataset> Dataset::Shard(int64_t num_shards, int64_t index,
                                       AutoShardPolicy policy) const {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", index, " of ", num_shards, " does not exist"));
  }
  if (policy == AutoShardPolicy::kFile) {
    const int64_t files = static_cast<int64_t>(examples_->files.size());
    if (files < num_shards) {
      return absl::InvalidArgumentError(absl::StrCat(
          "auto-shard policy FILE needs at least as many input files as workers: ", files, " file",
          files == 1 ? "" : "s", " for ", num_shards,
          " workers; use the DATA policy or split the input into more files"));
    }
  }
  Dataset d = *this;
  d.num_shards_ = num_shards;
  d.shard_index_ = index;
  d.policy_ = policy;
  return d;
}

std::vector<int64_t> Dataset::Order(int64_t epoch) const {
  const Examples& e = *examples_;
  std::vector<int64_t> order;
  if (policy_ == AutoShardPolicy::kFile && num_shards_ > 1) {
    for (int64_t i = 0; i < e.count(); ++i) {
      if (e.file_index[i] % num_shards_ == shard_index_) order.push_back(i);
    }
  } else {
    order.resize(static_cast<size_t>(e.count()));
    std::iota(order.begin(), order.end(), 0);
  }
  if (shuffle_) {
    // The same permutation on every worker: seeded by (seed, epoch) only.
    std::mt19937_64 random(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), random);
  }
  if (policy_ == AutoShardPolicy::kData && num_shards_ > 1) {
    std::vector<int64_t> mine;
    for (size_t i = static_cast<size_t>(shard_index_); i < order.size(); i += num_shards_) {
      mine.push_back(order[i]);
    }
    order.swap(mine);
  }
  return order;
}

int64_t Dataset::examples_per_pass() const {
  if (num_shards_ == 1 || policy_ == AutoShardPolicy::kOff) return examples_->count();
  if (policy_ == AutoShardPolicy::kData) {
    const int64_t n = examples_->count();
    return n / num_shards_ + (shard_index_ < n % num_shards_ ? 1 : 0);
  }
  return static_cast<int64_t>(Order(0).size());
}

int64_t Dataset::cardinality() const {
  if (repeat_ < 0) return kInfiniteCardinality;
  return examples_per_pass() * repeat_;
}

int64_t Dataset::batches_per_epoch() const {
  const int64_t n = examples_per_pass();
  return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

void GatherBatch(const Examples& examples, const std::vector<int64_t>& indices, size_t begin,
                 size_t end, struct Batch* batch) {
  const int64_t count = static_cast<int64_t>(end - begin);
  Shape shape = examples.example_shape();
  shape.insert(shape.begin(), count);
  batch->features.Resize(shape);
  batch->labels.resize(static_cast<size_t>(count));
  const int64_t size = examples.example_size();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t from = indices[begin + static_cast<size_t>(i)];
    std::memcpy(batch->features.data() + i * size, examples.features.data() + from * size,
                sizeof(float) * static_cast<size_t>(size));
    batch->labels[static_cast<size_t>(i)] = examples.labels[static_cast<size_t>(from)];
  }
}

namespace {

// Cuts the order into batches on the caller's thread.
class PlainIterator : public Dataset::Iterator {
 public:
  PlainIterator(const Dataset& dataset, std::vector<int64_t> order, int64_t batches)
      : dataset_(dataset), order_(std::move(order)), batches_(batches) {}
  bool Next(struct Batch* batch) override {
    if (produced_ >= batches_) return false;
    const size_t begin = static_cast<size_t>(produced_ * dataset_.batch_size());
    const size_t end = std::min(order_.size(), begin + static_cast<size_t>(dataset_.batch_size()));
    GatherBatch(dataset_.examples(), order_, begin, end, batch);
    ++produced_;
    return true;
  }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  Dataset dataset_;
  std::vector<int64_t> order_;
  int64_t batches_;
  int64_t produced_ = 0;
};

// Runs one epoch's iterator after another.
class RepeatIterator : public Dataset::Iterator {
 public:
  RepeatIterator(const Dataset& single, int64_t first_epoch, int64_t epochs, int64_t max_batches)
      : single_(single), epoch_(first_epoch), left_(epochs), max_batches_(max_batches) {}
  bool Next(struct Batch* batch) override {
    while (max_batches_ < 0 || produced_ < max_batches_) {
      if (current_ == nullptr) {
        if (left_ == 0) return false;
        if (left_ > 0) --left_;
        current_ = single_.Iterate(epoch_++);
      }
      if (current_->Next(batch)) {
        ++produced_;
        return true;
      }
      if (!current_->status().ok()) {
        status_ = current_->status();
        return false;
      }
      current_.reset();
    }
    return false;
  }
  absl::Status status() const override { return status_; }

 private:
  Dataset single_;
  int64_t epoch_;
  int64_t left_;  // Epochs still to start; negative: forever.
  int64_t max_batches_;
  int64_t produced_ = 0;
  std::unique_ptr<Dataset::Iterator> current_;
  absl::Status status_;
};

// Assembles up to `buffer` batches ahead on a thread of its own.
class PrefetchIterator : public Dataset::Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Dataset::Iterator> source, int64_t buffer)
      : source_(std::move(source)), buffer_(static_cast<size_t>(buffer)) {
    thread_ = std::thread([this] { Produce(); });
  }
  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  bool Next(struct Batch* batch) override {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(Dataset::kBatchDeadlineS);
    while (queue_.empty() && !done_) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && queue_.empty() && !done_) {
        status_ = absl::DeadlineExceededError(absl::StrCat(
            "the input pipeline produced no batch in ", Dataset::kBatchDeadlineS, " s"));
        return false;
      }
    }
    if (queue_.empty()) return false;
    *batch = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return true;
  }
  absl::Status status() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  void Produce() {
    while (true) {
      struct Batch batch;
      if (!source_->Next(&batch)) break;
      std::unique_lock<std::mutex> lock(mu_);
      // Waits for room; wakes at least every second to notice a stop.
      while (queue_.size() >= buffer_ && !stop_) cv_.wait_for(lock, std::chrono::seconds(1));
      if (stop_) return;
      queue_.push_back(std::move(batch));
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<Dataset::Iterator> source_;
  const size_t buffer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<struct Batch> queue_;  // Guarded by mu_.
  bool done_ = false;               // Guarded by mu_.
  bool stop_ = false;               // Guarded by mu_.
  absl::Status status_;             // Guarded by mu_.
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Dataset::Iterator> Dataset::Iterate(int64_t epoch, int64_t max_batches) const {
  if (repeat_ != 1) {
    Dataset single = *this;
    single.repeat_ = 1;
    single.prefetch_ = 0;
    std::unique_ptr<Iterator> repeated =
        std::make_unique<RepeatIterator>(single, epoch, repeat_, max_batches);
    if (prefetch_ <= 0) return repeated;
    return std::make_unique<PrefetchIterator>(std::move(repeated), prefetch_);
  }
  std::vector<int64_t> order = Order(epoch);
  const int64_t n = static_cast<int64_t>(order.size());
  int64_t batches = drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  if (max_batches >= 0) batches = std::min(batches, max_batches);
  std::unique_ptr<Iterator> plain =
      std::make_unique<PlainIterator>(*this, std::move(order), batches);
  if (prefetch_ <= 0) return plain;
  return std::make_unique<PrefetchIterator>(std::move(plain), prefetch_);
}

}  // namespace ringwork
