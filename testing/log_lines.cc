#include "testing/log_lines.h"

#include <chrono>
#include <ctime>
#include <regex>

namespace ringwork {

double LogLineTime(const std::string& output, const std::string& what, const std::string& task) {
  const std::string prefix = task.empty() ? "" : "\\[" + task + "\\] ";
  std::smatch m;
  const std::regex line(prefix + "[IWE] ([0-9]{2}):([0-9]{2}):([0-9.]+) [^\n]*" + what);
  if (!std::regex_search(output, m, line)) return -1;
  return std::stod(m[1]) * 3600 + std::stod(m[2]) * 60 + std::stod(m[3]);
}

double LogClockNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&seconds, &local);
  const double fraction =
      std::chrono::duration<double>(now.time_since_epoch()).count() - static_cast<double>(seconds);
  return local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec + fraction;
}

std::vector<std::string> WeightsFingerprints(const std::string& output) {
  std::vector<std::string> found;
  const std::regex pattern("weights fingerprint ([0-9a-f]{16})");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    found.push_back((*it)[1]);
  }
  return found;
}

}  // namespace ringwork
