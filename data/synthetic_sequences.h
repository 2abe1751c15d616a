// A seeded sequence-classification data set whose label depends on the order of
// its tokens, with a known best achievable accuracy: an order-blind model (a bag
// of embeddings) cannot reach it.
//
//   SequenceSet set = SyntheticSequences({.train = 20000, .test = 5000});
//   // features [n, steps]: token ids in [1, vocabulary); labels in [0, 4)
//   set.data.train, set.data.test, set.bayes_accuracy
//
// Each sequence is `steps` filler tokens drawn uniformly from [5, vocabulary),
// with the four marker tokens 1, 2, 3 and 4 each at a distinct random position.
// Its class is 2 x [1 comes before 2] + [3 comes before 4]; with probability
// `noise` the label is replaced by one of the other three classes at random. So
// the best any model can do is predict the class from the order (accuracy
// 1 - noise in expectation); `bayes_accuracy` is that rule's accuracy on the test
// labels drawn. Every sequence holds each marker once, so a model that ignores
// order sees the same markers in every class: its accuracy stays near 1/4.
#ifndef RINGWORK_DATA_SYNTHETIC_SEQUENCES_H_
#define RINGWORK_DATA_SYNTHETIC_SEQUENCES_H_

#include <cstdint>

#include "data/fashion_mnist.h"

namespace ringwork {

struct SyntheticSequencesOptions {
  int64_t train = 20000;
  int64_t test = 5000;
  int64_t steps = 20;
  int64_t vocabulary = 50;  // Ids in [0, vocabulary); 0 is never drawn (padding).
  double noise = 0.1;
  uint64_t seed = 11;
};

struct SequenceSet {
  TrainTest data;
  double bayes_accuracy = 0;
  static constexpr int64_t kClasses = 4;
};

// Refuses (InvalidArgument) fewer than 4 steps or a vocabulary of 6 or fewer.
absl::StatusOr<SequenceSet> SyntheticSequences(const SyntheticSequencesOptions& options);

}  // namespace ringwork

#endif  // RINGWORK_DATA_SYNTHETIC_SEQUENCES_H_
