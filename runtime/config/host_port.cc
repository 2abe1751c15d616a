#include "runtime/config/host_port.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ringwork {
namespace {

bool IsHostNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

bool IsIpv6Char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

absl::Status Bad(absl::string_view json_path, absl::string_view text, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: \"%s\" %s", json_path, absl::CHexEscape(text), problem));
}

}  // namespace

bool HostPort::is_loopback() const {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

std::string HostPort::ToString() const {
  if (is_ipv6()) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view json_path,
                                       bool allow_port_zero) {
  if (text.empty()) return Bad(json_path, text, "is empty; expected \"host:port\"");
  if (text.find("://") != absl::string_view::npos) {
    return Bad(json_path, text,
               "has a URL scheme; write only \"host:port\" (the RPC layer is grpc)");
  }
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      return Bad(json_path, text, "contains white space; expected \"host:port\"");
    }
  }
  HostPort result;
  absl::string_view port_text;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return Bad(json_path, text, "has '[' without ']'; write \"[v6addr]:port\"");
    }
    absl::string_view host = text.substr(1, close - 1);
    if (host.empty()) return Bad(json_path, text, "has an empty host");
    // Brackets hold IPv6 addresses only (which have colons): "[host]" would print
    // back without them as another address (the fuzzer found it).
    if (host.substr(0, host.find('%')).find(':') == absl::string_view::npos) {
      return Bad(json_path, text,
                 "has brackets around something that is not an IPv6 address; brackets are "
                 "for \"[v6addr]:port\" only");
    }
    const size_t zone = host.find('%');
    for (size_t i = 0; i < (zone == absl::string_view::npos ? host.size() : zone); ++i) {
      if (!IsIpv6Char(host[i])) {
        return Bad(json_path, text, "has an invalid IPv6 address inside [...]");
      }
    }
    result.host = std::string(host);
    absl::string_view rest = text.substr(close + 1);
    if (rest.empty()) {
      return Bad(json_path, text, "has no port; expected \"[v6addr]:port\"");
    }
    if (rest.front() != ':') {
      return Bad(json_path, text, "needs ':' between ']' and the port");
    }
    port_text = rest.substr(1);
  } else {
    const size_t first_colon = text.find(':');
    if (first_colon == absl::string_view::npos) {
      return Bad(json_path, text, "has no port; expected \"host:port\"");
    }
    if (text.find(':', first_colon + 1) != absl::string_view::npos) {
      const size_t last = text.rfind(':');
      return Bad(json_path, text,
                 absl::StrCat("looks like an IPv6 address without brackets; write \"[",
                              text.substr(0, last), "]", text.substr(last), "\""));
    }
    absl::string_view host = text.substr(0, first_colon);
    if (host.empty()) return Bad(json_path, text, "has an empty host");
    for (char c : host) {
      if (!IsHostNameChar(c)) {
        return Bad(json_path, text,
                   absl::StrFormat("has the character '%s' in its host name",
                                   absl::CHexEscape(absl::string_view(&c, 1))));
      }
    }
    result.host = absl::AsciiStrToLower(host);
    port_text = text.substr(first_colon + 1);
  }
  if (port_text.empty()) return Bad(json_path, text, "has an empty port");
  for (char c : port_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return Bad(
          json_path, text,
          absl::StrCat("has a port \"", absl::CHexEscape(port_text), "\" that is not a number"));
    }
  }
  int64_t port = 0;
  if (port_text.size() > 6 || !absl::SimpleAtoi(port_text, &port) || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    return Bad(json_path, text, absl::StrCat("has port ", port_text, ", outside 1..65535"));
  }
  result.port = static_cast<int>(port);
  return result;
}

}  // namespace ringwork
