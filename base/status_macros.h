// Early-return helpers for absl::Status / absl::StatusOr, and WithContext.
//
//   auto load = [&](const std::string& dir) -> absl::StatusOr<int64_t> {
//     RW_ASSIGN_OR_RETURN(TrainTest data, LoadFashionMnist(dir));  // an error returns
//     RW_RETURN_IF_ERROR(model.Build({28, 28, 1}));                 // likewise
//     return data.train.count();
//   };
#ifndef RINGWORK_BASE_STATUS_MACROS_H_
#define RINGWORK_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace ringwork {

// `status` with `prefix` before its message, same code and payloads; OK stays OK.
//   return WithContext(status, "epoch 2, step 17: ");
inline absl::Status WithContext(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  absl::Status annotated(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    annotated.SetPayload(url, payload);
  });
  return annotated;
}

}  // namespace ringwork

#define RW_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status rw_status_ = (expr);      \
    if (!rw_status_.ok()) return rw_status_; \
  } while (0)

#define RW_STATUS_CONCAT_INNER_(a, b) a##b
#define RW_STATUS_CONCAT_(a, b) RW_STATUS_CONCAT_INNER_(a, b)

#define RW_ASSIGN_OR_RETURN(lhs, expr) \
  RW_ASSIGN_OR_RETURN_IMPL_(RW_STATUS_CONCAT_(rw_statusor_, __LINE__), lhs, expr)

#define RW_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // RINGWORK_BASE_STATUS_MACROS_H_
