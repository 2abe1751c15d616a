#include "runtime/config/host_port.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("host:port forms that parse", "[host_port]") {
  auto a = ParseHostPort("Worker-0.svc.Cluster.local:2222", "p");
  REQUIRE(a.ok());
  CHECK(a->host == "worker-0.svc.cluster.local");
  CHECK(a->port == 2222);
  CHECK(a->ToString() == "worker-0.svc.cluster.local:2222");

  auto v6 = ParseHostPort("[::1]:65535", "p");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->is_ipv6());
  CHECK(v6->is_loopback());
  CHECK(v6->ToString() == "[::1]:65535");

  auto v4 = ParseHostPort("127.0.0.1:1", "p");
  REQUIRE(v4.ok());
  CHECK(v4->is_loopback());

  CHECK_FALSE(ParseHostPort("h:0", "p").ok());
  CHECK(ParseHostPort("h:0", "p", /*allow_port_zero=*/true).ok());
}

TEST_CASE("host:port errors name the path and the value", "[host_port]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "x: \"\" is empty; expected \"host:port\""},
      {"h", "x: \"h\" has no port; expected \"host:port\""},
      {"h:", "x: \"h:\" has an empty port"},
      {":80", "x: \":80\" has an empty host"},
      {"h:http", "x: \"h:http\" has a port \"http\" that is not a number"},
      {"h:65536", "x: \"h:65536\" has port 65536, outside 1..65535"},
      {"h:-1", "x: \"h:-1\" has a port \"-1\" that is not a number"},
      {"::1:2222",
       "x: \"::1:2222\" looks like an IPv6 address without brackets; write "
       "\"[::1]:2222\""},
      {"[::1]", "x: \"[::1]\" has no port; expected \"[v6addr]:port\""},
      {"[::1:80", "x: \"[::1:80\" has '[' without ']'; write \"[v6addr]:port\""},
      {"[zz::1]:80", "x: \"[zz::1]:80\" has an invalid IPv6 address inside [...]"},
      // Found by the fuzzer: it printed back without brackets as another address.
      {"[FFFFFFFFFFFF1]:2222",
       "x: \"[FFFFFFFFFFFF1]:2222\" has brackets around something that is not an IPv6 "
       "address; brackets are for \"[v6addr]:port\" only"},
      {"grpc://h:80",
       "x: \"grpc://h:80\" has a URL scheme; write only \"host:port\" (the RPC layer "
       "is grpc)"},
      {"h h:80", "x: \"h h:80\" contains white space; expected \"host:port\""},
      {"h/x:80", "x: \"h/x:80\" has the character '/' in its host name"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto result = ParseHostPort(c.text, "x");
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(result.status().message()) == c.message);
  }
}

}  // namespace
}  // namespace ringwork
