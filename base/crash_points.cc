#include "base/crash_points.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/logging.h"

namespace ringwork {
namespace {

struct Plan {
  std::string point;
  int64_t nth = 1;
  std::string task;    // Empty: any.
  double pause_s = 0;  // > 0: stop this long instead of dying.
};

// One plan per comma-separated item; none outside a job's first run.
std::vector<Plan> ParsePlans() {
  std::vector<Plan> plans;
  const char* spec = std::getenv("RINGWORK_CRASH_AT");
  if (spec == nullptr || *spec == '\0') return plans;
  const char* restart = std::getenv("RINGWORK_RESTART");
  if (restart != nullptr && std::string(restart) != "0") return plans;
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    Plan plan;
    std::string text(item);
    const size_t equals = text.find('=');
    if (equals != std::string::npos) {
      if (!absl::SimpleAtod(text.substr(equals + 1), &plan.pause_s) || plan.pause_s < 0) {
        plan.pause_s = 0;
      }
      text.resize(equals);
    }
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
    plans.push_back(std::move(plan));
  }
  return plans;
}

constexpr size_t kMaxPlans = 8;

// Parsed on first use, and again in a forked child (whose environment may differ).
std::mutex g_mu;
std::atomic<bool> g_parsed{false};
std::vector<Plan> g_plans;
std::atomic<int64_t> g_passes[kMaxPlans];  // Per plan: passes through its point.

void ForgetPlanInChild() {
  g_parsed.store(false);
  for (std::atomic<int64_t>& passes : g_passes) passes.store(0);
}

const std::vector<Plan>& CurrentPlans() {
  if (!g_parsed.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_parsed.load()) {
      static const bool registered = pthread_atfork(nullptr, nullptr, ForgetPlanInChild) == 0;
      (void)registered;
      g_plans = ParsePlans();
      if (g_plans.size() > kMaxPlans) g_plans.resize(kMaxPlans);
      g_parsed.store(true, std::memory_order_release);
    }
  }
  return g_plans;
}

}  // namespace

void CrashPoint(const char* point) {
  const std::vector<Plan>& plans = CurrentPlans();
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    if (plan.point != point) continue;
    if (!plan.task.empty() && plan.task != LogTask()) continue;
    if (g_passes[i].fetch_add(1) + 1 != plan.nth) continue;
    if (plan.pause_s > 0) {
      RW_LOG(WARNING) << "crash point " << point << " #" << plan.nth << ": pausing this thread for "
                      << plan.pause_s << " s (RINGWORK_CRASH_AT)";
      std::this_thread::sleep_for(std::chrono::duration<double>(plan.pause_s));
      RW_LOG(WARNING) << "crash point " << point << " #" << plan.nth << ": going on";
      continue;
    }
    RW_LOG(WARNING) << "crash point " << point << " #" << plan.nth
                    << ": killing this process (RINGWORK_CRASH_AT)";
    ::kill(::getpid(), SIGKILL);
  }
}

}  // namespace ringwork
