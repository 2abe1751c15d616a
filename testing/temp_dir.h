// A fresh, empty directory for one test: under Bazel's TEST_TMPDIR (else /tmp),
// removed first if an earlier run left it.
//
//   const std::string dir = FreshTestDir("backup");   // ".../_tmp/.../backup", empty
#ifndef RINGWORK_TESTING_TEMP_DIR_H_
#define RINGWORK_TESTING_TEMP_DIR_H_

#include <string>

namespace ringwork {

std::string FreshTestDir(const std::string& name);

}  // namespace ringwork

#endif  // RINGWORK_TESTING_TEMP_DIR_H_
