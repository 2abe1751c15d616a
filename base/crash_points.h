// Test-only crash points: places where a test can have a worker die by SIGKILL, as
// if killed -9 at exactly that moment (during a checkpoint write, in the middle of
// an all-reduce, ...). Disarmed unless the environment asks, and then one flag
// check per pass.
//
//   RINGWORK_CRASH_AT="<point>[#<n>][@<task>][=<seconds>][,<point>...]"
//
// kills this process (or, with "=<seconds>", stops the passing thread that long:
// a slow step or checkpoint write) the n-th time (default: the first; each item of the list
// counts its own passes) it passes `point`, if it is `task` (the task logging knows, e.g.
// "worker:1"; any task when absent), and only in the first run of a job: RINGWORK_RESTART (set by
// `launch --max_restarts`) unset or 0. Points: startup, broadcast, allreduce (a ring's),
// allreduce_round (after the first round of a recursive-doubling all-reduce of 4+ ranks),
// checkpoint_write, let_in (an elastic member about to let joiners in), grow (an
// elastic member, once a worker joined, before it has the state),
// final_evaluate (the evaluation after fit, Model::EvaluateAfterFit), shutdown (a
// strategy's final barrier, after training and evaluation).
//
//   CrashPoint("checkpoint_write");
#ifndef RINGWORK_BASE_CRASH_POINTS_H_
#define RINGWORK_BASE_CRASH_POINTS_H_

namespace ringwork {

void CrashPoint(const char* point);

}  // namespace ringwork

#endif  // RINGWORK_BASE_CRASH_POINTS_H_
