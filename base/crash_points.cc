#include "base/crash_points.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/numbers.h"
#include "base/logging.h"

namespace ringwork {
namespace {

struct Plan {
  bool armed = false;
  std::string point;
  int64_t nth = 1;
  std::string task;  // Empty: any.
};

Plan ParsePlan() {
  Plan plan;
  const char* spec = std::getenv("RINGWORK_CRASH_AT");
  if (spec == nullptr || *spec == '\0') return plan;
  const char* restart = std::getenv("RINGWORK_RESTART");
  if (restart != nullptr && std::string(restart) != "0") return plan;
  std::string text = spec;
  const size_t at = text.find('@');
  if (at != std::string::npos) {
    plan.task = text.substr(at + 1);
    text.resize(at);
  }
  const size_t hash = text.find('#');
  if (hash != std::string::npos) {
    if (!absl::SimpleAtoi(text.substr(hash + 1), &plan.nth) || plan.nth < 1) plan.nth = 1;
    text.resize(hash);
  }
  plan.point = text;
  plan.armed = true;
  return plan;
}

// Parsed on first use, and again in a forked child (whose environment may differ).
std::mutex g_mu;
std::atomic<bool> g_parsed{false};
Plan g_plan;
std::atomic<int64_t> g_passes{0};

void ForgetPlanInChild() {
  g_parsed.store(false);
  g_passes.store(0);
}

const Plan& CurrentPlan() {
  if (!g_parsed.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_parsed.load()) {
      static const bool registered = pthread_atfork(nullptr, nullptr, ForgetPlanInChild) == 0;
      (void)registered;
      g_plan = ParsePlan();
      g_parsed.store(true, std::memory_order_release);
    }
  }
  return g_plan;
}

}  // namespace

void CrashPoint(const char* point) {
  const Plan& plan = CurrentPlan();
  if (!plan.armed || plan.point != point) return;
  if (!plan.task.empty() && plan.task != LogTask()) return;
  if (g_passes.fetch_add(1) + 1 != plan.nth) return;
  RW_LOG(WARNING) << "crash point " << point << " #" << plan.nth
                  << ": killing this process (RINGWORK_CRASH_AT)";
  ::kill(::getpid(), SIGKILL);
}

}  // namespace ringwork
