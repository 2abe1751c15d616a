#include "runtime/auth/refusal_log.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"

namespace ringwork {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string RefusalLog::Printable(const std::string& text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  std::string escaped;
  for (size_t i = 0; i < std::min(text.size(), max_bytes); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      escaped += static_cast<char>(c);
    } else {
      escaped += absl::StrFormat("\\x%02x", c);
    }
  }
  if (cut) escaped += "...";
  return escaped;
}

bool RefusalLog::Refused(const std::string& peer, const std::string& what,
                         const absl::Status& why) {
  std::string host = Printable(peer, 80);
  const size_t colon = host.rfind(':');
  if (colon != std::string::npos && host.find(':') != colon) host.resize(colon);  // "ipv4:h:port"
  const std::string reason = Printable(std::string(why.message()), options_.max_reason_bytes);
  const std::string key = absl::StrCat(host, " ", what, " ", reason);
  int64_t suppressed = 0;
  bool log_line = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (seen_.count(key) != 0) return false;
    const double now = NowSeconds();
    if (period_start_s_ < 0 || now - period_start_s_ >= options_.period_s) {
      period_start_s_ = now;
      lines_in_period_ = 0;
    }
    size_t& reasons = reasons_per_host_[absl::StrCat(host, " ", what)];
    if (seen_.size() >= options_.max_entries || reasons >= options_.max_reasons_per_host ||
        lines_in_period_ >= options_.burst) {
      ++suppressed_;  // Not remembered: it may be logged in a later period.
      // Say how many went unlogged, once a period.
      if (lines_in_period_ < options_.burst && now - last_summary_s_ >= options_.period_s) {
        last_summary_s_ = now;
        ++lines_in_period_;
        suppressed = suppressed_;
        suppressed_ = 0;
      }
    } else {
      ++lines_in_period_;
      ++reasons;
      seen_.insert(key);
      suppressed = suppressed_;
      suppressed_ = 0;
      log_line = true;
    }
  }
  if (!log_line) {
    if (suppressed > 0) {
      RW_LOG(WARNING) << suppressed << " refused calls not logged (too many; the last from " << host
                      << ")";
    }
    return false;
  }
  RW_LOG(WARNING) << "refused " << what << " from " << host << ": " << reason
                  << " (logged once per host"
                  << (suppressed > 0 ? absl::StrCat("; ", suppressed, " refusals not logged")
                                     : std::string())
                  << ")";
  return true;
}

size_t RefusalLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_.size();
}

}  // namespace ringwork
