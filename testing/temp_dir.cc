#include "testing/temp_dir.h"

#include <cstdlib>
#include <filesystem>

namespace ringwork {

std::string FreshTestDir(const std::string& name) {
  namespace fs = std::filesystem;
  const char* base = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(base != nullptr ? base : "/tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace ringwork
