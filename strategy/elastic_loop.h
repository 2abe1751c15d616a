// Elastic training for custom training loops, as Horovod's `hvd.elastic.run`
// with a state object: the loop's state (variables, optimizer slots, counters)
// is committed after each step; when a peer fails the survivors regroup, go on
// from the furthest step any of them committed (taking that worker's state) and
// run the loop body again in the new ring; workers that start again while the
// job runs join it at a commit and take the state too.
//
//   Variable w{"w", Tensor({784, 10})};
//   Tensor m_w(w.value.shape());
//   const int64_t total_steps = 1000;
//   ElasticState state(strategy.get());
//   state.Track(&w);                       // a variable's value
//   state.Track("adam/w/m", &m_w);         // any other tensor
//   int64_t& step = state.Counter("step");
//   RW_RETURN_IF_ERROR(RunElastic(&state, [&]() -> absl::Status {
//     // Made for the ring as it is now (called again after every change):
//     std::unique_ptr<GradientReducer> reducer = strategy->MakeGradientReducer({&w});
//     while (step < total_steps) {
//       // Forward and backward into w.grad, then:
//       RW_RETURN_IF_ERROR(reducer->FinishStep());
//       // The update, with the reduced gradient.
//       ++step;                               // Counters first, then Commit.
//       RW_RETURN_IF_ERROR(state.Commit());
//     }
//     return absl::OkStatus();
//   }));
//
// The body must return every collective's error as it is (RW_RETURN_IF_ERROR):
// RunElastic survives those of a failed ring (elastic strategy: --min_workers)
// and returns any other. Objects made over the ring (the gradient reducer, the
// data shard) belong inside the body: they are made again for the new ring.
// A counter that advances with the step must be incremented before Commit.
// Everything is tracked before RunElastic starts (a tensor or counter added later
// is refused when the ring changes: a joiner could not have it).
//
// Threads: the training thread only.
#ifndef RINGWORK_STRATEGY_ELASTIC_LOOP_H_
#define RINGWORK_STRATEGY_ELASTIC_LOOP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "strategy/elastic_run.h"
#include "strategy/multi_worker_mirrored_strategy.h"
#include "strategy/variable.h"

namespace ringwork {

class ElasticState : public ElasticReplica {
 public:
  explicit ElasticState(MultiWorkerMirroredStrategy* strategy /* not owned */)
      : strategy_(strategy) {}

  // What the survivors and joiners take from the worker they go on from.
  void Track(Variable* variable) { Track(variable->name, &variable->value); }
  void Track(const std::string& name, Tensor* tensor);
  // A named counter (0 at first), kept at a stable address.
  int64_t& Counter(const std::string& name) { return counters_[name]; }

  // Steps committed (what a regroup goes on from).
  int64_t commits() const { return commits_; }
  // After a step's update (and its counters): one step more. In an elastic ring
  // the members also agree on whether workers wait to join (one 8-byte
  // all-reduce); if so it returns RingChangedError(), which the body returns, and
  // RunElastic lets them in.
  absl::Status Commit();

  // ElasticReplica: the ring's objects live in the body, gone when it returned.
  void LeaveRing() override {}
  void EnterRing() override {}
  absl::Status AdoptStateOf(int root) override;

  // What a joiner and the ring must share: the tracked names and sizes.
  int64_t ShapeHash() const;
  MultiWorkerMirroredStrategy* strategy() const { return strategy_; }
  void set_commits(int64_t commits) { commits_ = commits; }

 private:
  MultiWorkerMirroredStrategy* strategy_;
  std::vector<std::pair<std::string, Tensor*>> tensors_;
  std::map<std::string, int64_t> counters_;
  int64_t commits_ = 0;
};

// Commit's signal that the ring is about to change (workers let in): ABORTED
// with a payload that IsRingChange recognizes.
absl::Status RingChangedError();
bool IsRingChange(const absl::Status& status);

// Runs `body` until it returns OK or an error no regroup survives; after a
// survived failure or a grow, runs it again from `state`'s committed step, with
// the state taken from the worker that went furthest. A worker that started
// while its job ran (strategy->joining()) first joins it. With a non-elastic
// strategy it runs `body` once. At the start every member of a ring of several
// agrees on the elastic settings (exit 7 if they differ, --min_workers included).
absl::Status RunElastic(ElasticState* state, const std::function<absl::Status()>& body);

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_ELASTIC_LOOP_H_
