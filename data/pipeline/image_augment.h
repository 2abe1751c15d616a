// Random image augmentation as pipeline functions, Keras' preprocessing layers
// applied in the input pipeline (on the workers' CPU threads, off the step).
//
//   Pipeline augmented = folder.pipeline.MapRandom(
//       RandomFlipFn(/*feature=*/0, "horizontal"), /*seed=*/7, kAutotune);
//
// Each element's draw comes from MapRandom: (seed, pass, place in the source),
// so the same image is flipped alike whatever the workers, and anew each epoch.
#ifndef RINGWORK_DATA_PIPELINE_IMAGE_AUGMENT_H_
#define RINGWORK_DATA_PIPELINE_IMAGE_AUGMENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

// Keras' RandomFlip: feature `feature` (height x width x channels, float32 or
// uint8) mirrored left-right ("horizontal"), top-bottom ("vertical") or either
// independently ("horizontal_and_vertical"), each with probability 1/2.
// INVALID_ARGUMENT for another mode.
absl::StatusOr<RandomMapFn> RandomFlipFn(int feature, const std::string& mode);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_IMAGE_AUGMENT_H_
