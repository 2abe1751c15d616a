// Image files in a folder of class folders as a pipeline, as Keras'
// image_dataset_from_directory reads them: one sub-folder per class (sorted by
// name: class i is the i-th), PNG and JPEG files decoded (libpng, libjpeg-turbo)
// into `color_mode` channels and resized to (height, width) bilinearly, the
// label as an int, one-hot floats (categorical) or a float (binary), a
// validation_split taken as `subset` after a seeded shuffle of the file list.
//
//   RW_ASSIGN_OR_RETURN(ImageFolder folder,
//       ImageFolderPipeline("photos/", {.height = 64, .width = 64}));
//   // folder.pipeline: {"image": float32 [64, 64, 3], "label": int64}
//
// The source gives each file's path and label; a Map reads and decodes it, so a
// worker decodes only its own (FILE: its files; DATA: its block). A file that
// cannot be decoded is an error naming it; with ignore_errors it is skipped.
#ifndef RINGWORK_DATA_PIPELINE_IMAGE_FOLDER_H_
#define RINGWORK_DATA_PIPELINE_IMAGE_FOLDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

struct ImageFolderOptions {
  int64_t height = 256, width = 256;  // Keras' image_size; 0, 0: the first image's.
  std::string color_mode = "rgb";     // rgb, grayscale, rgba; "": the first image's.
  std::string label_mode = "int";     // int, categorical, binary or none.
  double validation_split = 0;        // The fraction of the files held out.
  std::string subset;                 // With a split: training or validation.
  uint64_t seed = 0;                  // Orders the files before the split, and shuffles.
  bool shuffle = true;                // Each pass in a new seeded order (of paths: cheap).
  float rescale = 1.0f;               // Pixels are 0..255 times this.
  // Set: the class folders must be these names, and class i is class_names[i]
  // (a validation folder labelled as its training folder).
  std::vector<std::string> class_names;
};

struct ImageFolder {
  Pipeline pipeline;
  std::vector<std::string> class_names;
  int64_t files = 0;
};

// INVALID_ARGUMENT for options that cannot be met; NOT_FOUND for a folder
// without class folders or image files.
absl::StatusOr<ImageFolder> ImageFolderPipeline(const std::string& dir,
                                                const ImageFolderOptions& options = {},
                                                int num_parallel_calls = kAutotune);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_IMAGE_FOLDER_H_
