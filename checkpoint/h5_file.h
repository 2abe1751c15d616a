// HDF5 files of float32 datasets in groups, through Debian's libhdf5: the
// weights of Keras 3's .weights.h5 and of a .keras archive's model.weights.h5.
// Whole files as bytes, so that they go into an archive or a file alike.
//
//   RW_ASSIGN_OR_RETURN(std::string image,
//                       H5FileImage({"vars", "layers/flatten/vars"},
//                                   {{"layers/dense/vars/0", {784, 10}, kernel}}));
//   RW_ASSIGN_OR_RETURN(std::vector<NamedTensor> read, ReadH5Datasets(image, "model.weights.h5"));
//   // read[0].name == "layers/dense/vars/0"
//
// Groups are made as needed; `groups` names empty ones to make as well. Reading
// visits every dataset, each named by its path; a dataset that is not a float,
// or whose storage is not as large as its shape (compressed, chunked or
// crafted), or a file that is not HDF5, is DATA_LOSS (exit 5) naming `where` and
// the dataset. libhdf5 here is not thread-safe: call from one thread at a time.
#ifndef RINGWORK_CHECKPOINT_H5_FILE_H_
#define RINGWORK_CHECKPOINT_H5_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/weights_file.h"

namespace ringwork {

absl::StatusOr<std::string> H5FileImage(const std::vector<std::string>& groups,
                                        const std::vector<NamedTensor>& datasets);
absl::StatusOr<std::vector<NamedTensor>> ReadH5Datasets(const std::string& image,
                                                        const std::string& where);

}  // namespace ringwork

#endif  // RINGWORK_CHECKPOINT_H5_FILE_H_
