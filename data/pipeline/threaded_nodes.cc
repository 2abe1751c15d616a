// Map on a pool of threads, in order, and Prefetch: the stages that run threads
// of their own. Both read their input on one reader thread (an input iterator is
// used by one thread), keep at most a bounded window of elements in flight, and
// hand them to the consumer in input order; the first error reaches it in order
// too. A consumer waits at most kStallDeadlineS for an element.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/cpu_cores.h"
#include "data/pipeline/pipeline.h"
#include "data/pipeline/pipeline_stats.h"
#include "observability/timeline.h"

namespace ringwork {
namespace {

// An input pipeline that makes nothing for this long is stuck (a source that
// blocks): the iterator fails instead of hanging the training step.
constexpr double kStallDeadlineS = 600;

// With ignore_errors, what a Map's function refuses (an element it cannot parse)
// is skipped and counted; anything else still ends the iterator.
bool SkipsError(const absl::Status& status, const IterateOptions& options) {
  if (!options.ignore_errors) return false;
  if (status.code() != absl::StatusCode::kInvalidArgument &&
      status.code() != absl::StatusCode::kDataLoss) {
    return false;
  }
  if (options.stats != nullptr) options.stats->AddSkipped(1);
  return true;
}

// Elements read on a thread into a ring of `capacity` slots, transformed by
// `workers` threads (0: none, a prefetch), consumed in order. The reader and the
// workers take runs of up to kRun slots at a time (a parse of a record is about a
// microsecond: one lock and wake-up per element would cost more than the work),
// and a side is woken only when it waits.
class WindowIterator : public ElementIterator {
 public:
  static constexpr int64_t kRun = 16;

  // `name`: the timeline's name for a Map's runs of work.
  WindowIterator(std::unique_ptr<ElementIterator> in, std::shared_ptr<const MapFn> fn, int workers,
                 int64_t capacity, PipelineStats::Stage* stage, const IterateOptions& options,
                 std::string name = "")
      : options_(options),
        in_(std::move(in)),
        fn_(std::move(fn)),
        name_(std::move(name)),
        slots_(static_cast<size_t>(std::max<int64_t>(capacity, 1))),
        stage_(stage) {
    reader_ = std::thread([this] { ReadLoop(); });
    for (int w = 0; w < workers; ++w) workers_.emplace_back([this] { WorkLoop(); });
  }

  ~WindowIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    space_.notify_all();
    work_.notify_all();
    reader_.join();
    for (std::thread& t : workers_) t.join();
  }

  absl::StatusOr<bool> Next(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (stage_ != nullptr) {
      int64_t ready = 0;
      for (int64_t q = consumed_; q < read_; ++q) ready += slot(q).done ? 1 : 0;
      stage_->fill_sum += ready;
      stage_->fill_samples += 1;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kStallDeadlineS);
    while (!(consumed_ < read_ && slot(consumed_).done)) {
      if (consumed_ == read_ && input_ended_) {
        if (!input_status_.ok()) return input_status_;
        return false;
      }
      consumer_waits_ = true;
      const bool timed_out = ready_.wait_until(lock, deadline) == std::cv_status::timeout;
      consumer_waits_ = false;
      if (timed_out) {
        return absl::DeadlineExceededError(
            absl::StrCat("the input pipeline made no element for ", kStallDeadlineS,
                         " s (a source that blocks, or a Map function that never returns)"));
      }
    }
    Slot& s = slot(consumed_);
    ++consumed_;
    absl::Status status = std::move(s.status);
    s.status = absl::OkStatus();
    s.done = false;
    // The caller's element goes into the slot: the reader refills its buffers.
    std::swap(*out, s.element);
    if (reader_waits_) space_.notify_one();
    if (!status.ok() && SkipsError(status, options_)) {
      lock.unlock();
      return Next(out);  // The next element instead of this one.
    }
    if (!status.ok()) return status;
    return true;
  }

 private:
  struct Slot {
    Element element;
    absl::Status status;
    bool done = false;
  };
  Slot& slot(int64_t seq) { return slots_[static_cast<size_t>(seq % slots_.size())]; }

  void ReadLoop() {
    while (true) {
      int64_t first = 0, count = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        reader_waits_ = true;
        space_.wait(lock, [this] {
          return stop_ || read_ - consumed_ < static_cast<int64_t>(slots_.size());
        });
        reader_waits_ = false;
        if (stop_) return;
        first = read_;
        count = std::min<int64_t>(kRun, static_cast<int64_t>(slots_.size()) - (read_ - consumed_));
      }
      // Slots past read_ are the reader's alone until it publishes them.
      int64_t got = 0;
      absl::Status failed;
      bool ended = false;
      const auto start = std::chrono::steady_clock::now();
      for (; got < count; ++got) {
        Slot& s = slot(first + got);
        absl::StatusOr<bool> more = in_->Next(&s.element);
        if (!more.ok() || !*more) {
          ended = true;
          if (!more.ok()) failed = more.status();
          break;
        }
        s.done = fn_ == nullptr;  // A prefetch: ready as read.
      }
      if (stage_ != nullptr) {
        stage_->input_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
        if (fn_ == nullptr) stage_->elements += got;
      }
      std::lock_guard<std::mutex> lock(mu_);
      read_ += got;
      if (ended) {
        input_ended_ = true;
        input_status_ = failed;
      }
      if (fn_ != nullptr) work_.notify_all();
      if (consumer_waits_) ready_.notify_one();
      if (ended) return;
    }
  }

  void WorkLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [this] { return stop_ || claimed_ < read_; });
      if (stop_) return;
      const int64_t first = claimed_, count = std::min<int64_t>(kRun, read_ - claimed_);
      claimed_ += count;
      lock.unlock();
      // Claimed slots are this worker's alone until it marks them done.
      const auto start = std::chrono::steady_clock::now();
      TimelineSpan span("input", name_);
      span.Arg("elements", count);
      for (int64_t k = 0; k < count; ++k) {
        Slot& s = slot(first + k);
        s.status = (*fn_)(&s.element);
        if (!s.status.ok()) {
          s.status =
              absl::Status(s.status.code(), absl::StrCat(OriginOf(s.element), s.status.message()));
        }
      }
      span.End();
      if (stage_ != nullptr) {
        stage_->busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
        stage_->elements += count;
      }
      lock.lock();
      for (int64_t k = 0; k < count; ++k) slot(first + k).done = true;
      if (consumer_waits_) ready_.notify_one();
    }
  }

  const IterateOptions options_;
  std::unique_ptr<ElementIterator> in_;
  const std::shared_ptr<const MapFn> fn_;  // Null for a prefetch.
  const std::string name_;
  std::mutex mu_;
  std::condition_variable space_, work_, ready_;  // For the reader, the workers, the consumer.
  // Sequence numbers: read (by the reader), claimed (by a worker), consumed.
  int64_t read_ = 0, claimed_ = 0, consumed_ = 0;       // Guarded by mu_.
  std::vector<Slot> slots_;                             // done flags guarded by mu_.
  bool input_ended_ = false, stop_ = false;             // Guarded by mu_.
  bool reader_waits_ = false, consumer_waits_ = false;  // Guarded by mu_.
  absl::Status input_status_;                           // Guarded by mu_.
  PipelineStats::Stage* stage_;                         // Not owned; may be null.
  std::thread reader_;
  std::vector<std::thread> workers_;
};

// The function of each pass: a Map's own, or a random one's bound to its draws.
using MapFnOfPass = std::function<MapFn(int64_t pass)>;

class MapNode : public PipelineNode {
 public:
  MapNode(std::shared_ptr<const PipelineNode> input, MapFnOfPass fn, int parallel, ElementSpec spec,
          std::string name)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        parallel_(parallel),
        name_(std::move(name)),
        spec_(spec.empty() ? input_->spec() : std::move(spec)) {}
  const ElementSpec& spec() const override { return spec_; }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return name_; }
  Kind kind() const override { return Kind::kElementwise; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<MapNode>(std::move(input), fn_, parallel_, spec_, name_);
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    int threads = parallel_;
    if (threads == kAutotune) {
      threads = options.autotune_threads > 0 ? options.autotune_threads : AvailableCores();
    }
    PipelineStats::Stage* stage =
        options.stats == nullptr
            ? nullptr
            : options.stats->AddStage(absl::StrCat(name_, " x", std::max(threads, 1)),
                                      threads > 1 ? 4 * 16 * threads : 0, std::max(threads, 1));
    std::unique_ptr<ElementIterator> in = input_->MakeIterator(options);
    auto fn = std::make_shared<const MapFn>(fn_(options.pass));
    if (threads <= 1) {
      class It : public ElementIterator {
       public:
        It(std::unique_ptr<ElementIterator> in, std::shared_ptr<const MapFn> fn,
           PipelineStats::Stage* stage, const IterateOptions& options)
            : in_(std::move(in)), fn_(std::move(fn)), stage_(stage), options_(options) {}
        absl::StatusOr<bool> Next(Element* out) override {
          while (true) {
            absl::StatusOr<bool> more = in_->Next(out);
            if (!more.ok() || !*more) return more;
            const auto start = std::chrono::steady_clock::now();
            absl::Status status = (*fn_)(out);
            if (stage_ != nullptr) {
              stage_->busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
              stage_->elements += 1;
            }
            if (status.ok()) return true;
            if (!SkipsError(status, options_)) {
              return absl::Status(status.code(), absl::StrCat(OriginOf(*out), status.message()));
            }
          }
        }

       private:
        std::unique_ptr<ElementIterator> in_;
        const std::shared_ptr<const MapFn> fn_;
        PipelineStats::Stage* stage_;
        const IterateOptions options_;
      };
      return std::make_unique<It>(std::move(in), std::move(fn), stage, options);
    }
    return std::make_unique<WindowIterator>(std::move(in), std::move(fn), threads,
                                            4 * WindowIterator::kRun * threads, stage, options,
                                            absl::StrCat(name_, " x", threads));
  }

 private:
  std::shared_ptr<const PipelineNode> input_;
  MapFnOfPass fn_;
  const int parallel_;
  const std::string name_;
  ElementSpec spec_;
};

class PrefetchNode : public PipelineNode {
 public:
  PrefetchNode(std::shared_ptr<const PipelineNode> input, int64_t buffer)
      : input_(std::move(input)), buffer_(std::max<int64_t>(buffer, 1)) {}
  const ElementSpec& spec() const override { return input_->spec(); }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "prefetch"; }
  Kind kind() const override { return Kind::kElementwise; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<PrefetchNode>(std::move(input), buffer_);
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    PipelineStats::Stage* stage =
        options.stats == nullptr ? nullptr : options.stats->AddStage("prefetch", buffer_);
    return std::make_unique<WindowIterator>(input_->MakeIterator(options), nullptr, 0, buffer_,
                                            stage, options);
  }

 private:
  std::shared_ptr<const PipelineNode> input_;
  const int64_t buffer_;
};

}  // namespace

Pipeline Pipeline::Map(MapFn fn, int num_parallel_calls, ElementSpec out_spec,
                       std::string name) const {
  MapFnOfPass same = [fn = std::move(fn)](int64_t) { return fn; };
  return Pipeline(std::make_shared<MapNode>(node_, std::move(same), num_parallel_calls,
                                            std::move(out_spec), std::move(name)));
}

Pipeline Pipeline::MapRandom(RandomMapFn fn, uint64_t seed, int num_parallel_calls,
                             ElementSpec out_spec, std::string name) const {
  MapFnOfPass of_pass = [fn = std::move(fn), seed](int64_t pass) -> MapFn {
    return [fn, seed, pass](Element* e) {
      return fn(e, ElementDraw(seed, e->pass >= 0 ? e->pass : pass, ElementKey(*e)));
    };
  };
  return Pipeline(std::make_shared<MapNode>(node_, std::move(of_pass), num_parallel_calls,
                                            std::move(out_spec), std::move(name)));
}

Pipeline Pipeline::Prefetch(int64_t buffer) const {
  return Pipeline(std::make_shared<PrefetchNode>(node_, buffer));
}

}  // namespace ringwork
