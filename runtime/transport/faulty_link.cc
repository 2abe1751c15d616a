#include "runtime/transport/faulty_link.h"

#include "absl/strings/str_cat.h"

namespace ringwork {

FaultyLink::FaultyLink(std::unique_ptr<Link> inner, int frames_before_fault, Fault fault)
    : inner_(std::move(inner)), frames_left_(frames_before_fault), fault_(fault) {}

void FaultyLink::Attach(const LinkEnv& env) {
  Link::Attach(env);
  inner_->Attach(env);
  set_peer_name(inner_->peer_name());
}

void FaultyLink::PostSend(Request* request) {
  if (frames_left_ > 0) {
    --frames_left_;
    inner_->PostSend(request);
    return;
  }
  if (fault_ == Fault::kFailSends) {
    CompleteRequest(request, absl::UnavailableError(absl::StrCat(
                                 "injected fault: the link to ", peer_name_,
                                 " broke while sending frame ", request->key.ToString())));
  } else {
    swallowed_.push_back(request);
  }
}

void FaultyLink::FailPending(const absl::Status& status, Deadline deadline) {
  while (Request* request = swallowed_.pop_front()) CompleteRequest(request, status);
  inner_->FailPending(status, deadline);
}

}  // namespace ringwork
