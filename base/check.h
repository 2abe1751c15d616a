// Check macros for broken internal invariants (bugs), never for anything a user,
// a file or a peer can cause: those return absl::Status. A failed check prints
// both operands and aborts.
//
//   RW_CHECK(buffer != nullptr) << "for chunk " << i;
//   RW_CHECK_EQ(received, expected);   // "Check failed: received == expected (3 vs 4)"
#ifndef RINGWORK_BASE_CHECK_H_
#define RINGWORK_BASE_CHECK_H_

#include <sstream>
#include <string>

#include "base/logging.h"

namespace ringwork {
namespace logging_internal {

template <typename A, typename B>
std::string* MakeCheckOpString(const A& a, const B& b, const char* text) {
  std::ostringstream out;
  out << "Check failed: " << text << " (" << a << " vs " << b << ") ";
  return new std::string(out.str());
}

#define RW_DEFINE_CHECK_OP_(name, op)                                  \
  template <typename A, typename B>                                    \
  inline std::string* name(const A& a, const B& b, const char* text) { \
    if (a op b) return nullptr;                                        \
    return MakeCheckOpString(a, b, text);                              \
  }
RW_DEFINE_CHECK_OP_(CheckEq, ==)
RW_DEFINE_CHECK_OP_(CheckNe, !=)
RW_DEFINE_CHECK_OP_(CheckLt, <)
RW_DEFINE_CHECK_OP_(CheckLe, <=)
RW_DEFINE_CHECK_OP_(CheckGt, >)
RW_DEFINE_CHECK_OP_(CheckGe, >=)
#undef RW_DEFINE_CHECK_OP_

// Owns the failure text of a check op for the duration of the statement.
class CheckOpResult {
 public:
  explicit CheckOpResult(std::string* text) : text_(text) {}
  ~CheckOpResult() { delete text_; }
  CheckOpResult(const CheckOpResult&) = delete;
  CheckOpResult& operator=(const CheckOpResult&) = delete;
  explicit operator bool() const { return text_ != nullptr; }
  const std::string& text() const { return *text_; }

 private:
  std::string* text_;
};

}  // namespace logging_internal
}  // namespace ringwork

#define RW_CHECK(cond) \
  (cond) ? (void)0     \
         : ::ringwork::logging_internal::Voidify() & RW_LOG(FATAL) << "Check failed: " #cond " "

#define RW_CHECK_OP_(func, op, a, b)                                    \
  while (::ringwork::logging_internal::CheckOpResult rw_check_result_{  \
      ::ringwork::logging_internal::func((a), (b), #a " " #op " " #b)}) \
  RW_LOG(FATAL) << rw_check_result_.text()

#define RW_CHECK_EQ(a, b) RW_CHECK_OP_(CheckEq, ==, a, b)
#define RW_CHECK_NE(a, b) RW_CHECK_OP_(CheckNe, !=, a, b)
#define RW_CHECK_LT(a, b) RW_CHECK_OP_(CheckLt, <, a, b)
#define RW_CHECK_LE(a, b) RW_CHECK_OP_(CheckLe, <=, a, b)
#define RW_CHECK_GT(a, b) RW_CHECK_OP_(CheckGt, >, a, b)
#define RW_CHECK_GE(a, b) RW_CHECK_OP_(CheckGe, >=, a, b)

#define RW_CHECK_OK(expr)                                              \
  do {                                                                 \
    const ::absl::Status rw_check_status_ = (expr);                    \
    RW_CHECK(rw_check_status_.ok()) << #expr ": " << rw_check_status_; \
  } while (0)

#endif  // RINGWORK_BASE_CHECK_H_
