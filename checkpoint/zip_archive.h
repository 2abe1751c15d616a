// Zip archives of whole members, through Debian's libzip: NumPy's .npz and
// Keras 3's .keras (config.json, metadata.json, model.weights.h5).
//
//   RW_RETURN_IF_ERROR(WriteZipArchive({{"config.json", json}, {"model.weights.h5", h5}},
//                                      "model.keras"));
//   RW_ASSIGN_OR_RETURN(std::string json, ReadZipMember("model.keras", "config.json"));
//
// Members are stored uncompressed, as Python's zipfile writes by default; the
// write is atomic (PATH.tmp, then a rename; the temporary file never outlives a
// failure). Reading: NOT_FOUND for a missing file or member, DATA_LOSS (exit 5)
// for a file that is not a zip archive or a member that cannot be read whole.
#ifndef RINGWORK_CHECKPOINT_ZIP_ARCHIVE_H_
#define RINGWORK_CHECKPOINT_ZIP_ARCHIVE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

// (name, bytes), in the archive's order.
using ZipMembers = std::vector<std::pair<std::string, std::string>>;

absl::Status WriteZipArchive(const ZipMembers& members, const std::string& path);
absl::StatusOr<std::string> ReadZipMember(const std::string& path, const std::string& name);

}  // namespace ringwork

#endif  // RINGWORK_CHECKPOINT_ZIP_ARCHIVE_H_
