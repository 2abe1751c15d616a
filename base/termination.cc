#include "base/termination.h"

#include <atomic>
#include <cstring>

namespace ringwork {
namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void OnSigterm(int) { g_requested.store(true); }

}  // namespace

bool TerminationRequested() { return g_requested.load(); }

void RequestTerminationForTest() { g_requested.store(true); }

void ClearTerminationRequestForTest() { g_requested.store(false); }

ScopedTerminationHandler::ScopedTerminationHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &previous_);
}

ScopedTerminationHandler::~ScopedTerminationHandler() { sigaction(SIGTERM, &previous_, nullptr); }

}  // namespace ringwork
