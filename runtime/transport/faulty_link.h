// Fault injection for tests: wraps a real link and, after `frames_before_fault`
// sends, either fails every further send (as a broken connection does) or silently
// swallows them (as a hung peer does, so that only deadlines can end the wait).
#ifndef RINGWORK_RUNTIME_TRANSPORT_FAULTY_LINK_H_
#define RINGWORK_RUNTIME_TRANSPORT_FAULTY_LINK_H_

#include <memory>

#include "runtime/transport/link.h"

namespace ringwork {

class FaultyLink : public Link {
 public:
  enum class Fault { kFailSends, kSwallowSends };

  FaultyLink(std::unique_ptr<Link> inner, int frames_before_fault, Fault fault);

  void Attach(const LinkEnv& env) override;
  void PostSend(Request* request) override;
  void PostRecv(Request* request) override { inner_->PostRecv(request); }
  bool Poll() override { return inner_->Poll(); }
  void FailPending(const absl::Status& status, Deadline deadline) override;
  void OnAbort(const absl::Status& cause) override { inner_->OnAbort(cause); }
  size_t max_payload_bytes() const override { return inner_->max_payload_bytes(); }
  absl::string_view kind() const override { return "faulty"; }
  std::string DebugString() const override { return inner_->DebugString(); }

 private:
  std::unique_ptr<Link> inner_;
  int frames_left_;
  const Fault fault_;
  RequestQueue swallowed_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_FAULTY_LINK_H_
