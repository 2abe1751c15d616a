// Writes a whole file so that readers see the old one or the new one, never half:
// PATH.tmp first, then a rename over PATH.
//
//   RW_RETURN_IF_ERROR(WriteFileAtomically("/tmp/report.html", html, "--output"));
//   // error: "--output=/tmp/report.html: cannot write /tmp/report.html.tmp: ..."
#ifndef RINGWORK_BASE_ATOMIC_FILE_H_
#define RINGWORK_BASE_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ringwork {

// `what` names the file in errors (a flag such as "--output", or "timeline").
absl::Status WriteFileAtomically(const std::string& path, absl::string_view text,
                                 absl::string_view what);

}  // namespace ringwork

#endif  // RINGWORK_BASE_ATOMIC_FILE_H_
