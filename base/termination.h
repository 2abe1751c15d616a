// SIGTERM as a request to stop at the next step boundary, as a scheduler sends it
// before preempting a worker: the handler only sets a flag, which fit() shares with
// every worker at each step so that all of them save a backup and stop together.
//
//   ScopedTerminationHandler handler;   // while training
//   ... if (TerminationRequested()) { save; stop; } ...
#ifndef RINGWORK_BASE_TERMINATION_H_
#define RINGWORK_BASE_TERMINATION_H_

#include <signal.h>

namespace ringwork {

// True once SIGTERM arrived while a handler was installed.
bool TerminationRequested();
// Sets the flag as SIGTERM would (tests).
void RequestTerminationForTest();
// Clears the flag (tests that run several fits in one process).
void ClearTerminationRequestForTest();

// Installs the SIGTERM handler; the destructor restores the previous one.
class ScopedTerminationHandler {
 public:
  ScopedTerminationHandler();
  ~ScopedTerminationHandler();
  ScopedTerminationHandler(const ScopedTerminationHandler&) = delete;
  ScopedTerminationHandler& operator=(const ScopedTerminationHandler&) = delete;

 private:
  struct sigaction previous_;
};

}  // namespace ringwork

#endif  // RINGWORK_BASE_TERMINATION_H_
