#include "base/flags.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace ringwork {
namespace {

struct Args {
  std::vector<std::string> storage;
  std::vector<const char*> argv;
  explicit Args(std::initializer_list<std::string> args) : storage(args) {
    for (const auto& a : storage) argv.push_back(a.c_str());
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

TEST_CASE("flags parse every form and keep positionals", "[flags]") {
  FlagSet flags("test");
  std::string name = "x";
  int64_t count = 1;
  double ratio = 0.5;
  bool verbose = false, color = true;
  flags.String("name", &name, "a name");
  flags.Int("count", &count, "a count");
  flags.Double("ratio", &ratio, "a ratio");
  flags.Bool("verbose", &verbose, "verbosity");
  flags.Bool("color", &color, "color");
  Args args{"prog",      "sub",       "--name=abc", "--count",      "7",   "--ratio=2.5",
            "--verbose", "--nocolor", "--",         "--not-a-flag", "tail"};
  auto positional = flags.Parse(args.argc(), args.argv.data());
  REQUIRE(positional.ok());
  CHECK(name == "abc");
  CHECK(count == 7);
  CHECK(ratio == 2.5);
  CHECK(verbose);
  CHECK_FALSE(color);
  CHECK(*positional == std::vector<std::string>{"sub", "--not-a-flag", "tail"});
  CHECK(flags.IsSet("count"));
}

TEST_CASE("flags reject unknown flags and bad values by name", "[flags]") {
  FlagSet flags("test");
  int64_t count = 1;
  flags.Int("count", &count, "a count");
  {
    Args args{"prog", "--cuont=3"};
    auto result = flags.Parse(args.argc(), args.argv.data());
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(result.status().message()).find("unknown flag --cuont") != std::string::npos);
  }
  {
    Args args{"prog", "--count=many"};
    auto result = flags.Parse(args.argc(), args.argv.data());
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()) ==
          "flag --count: expected an integer, got \"many\" (see --help)");
  }
  {
    Args args{"prog", "--count"};
    auto result = flags.Parse(args.argc(), args.argv.data());
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()).find("needs a value") != std::string::npos);
  }
}

TEST_CASE("command line overrides the environment", "[flags]") {
  setenv("RINGWORK_TEST_TIMEOUT_S", "12.5", 1);
  {
    FlagSet flags("test");
    double timeout_s = 1;
    flags.Double("timeout_s", &timeout_s, "t", "RINGWORK_TEST_TIMEOUT_S");
    Args args{"prog"};
    REQUIRE(flags.Parse(args.argc(), args.argv.data()).ok());
    CHECK(timeout_s == 12.5);
  }
  {
    FlagSet flags("test");
    double timeout_s = 1;
    flags.Double("timeout_s", &timeout_s, "t", "RINGWORK_TEST_TIMEOUT_S");
    Args args{"prog", "--timeout_s=3"};
    REQUIRE(flags.Parse(args.argc(), args.argv.data()).ok());
    CHECK(timeout_s == 3);
  }
  setenv("RINGWORK_TEST_TIMEOUT_S", "soon", 1);
  {
    FlagSet flags("test");
    double timeout_s = 1;
    flags.Double("timeout_s", &timeout_s, "t", "RINGWORK_TEST_TIMEOUT_S");
    Args args{"prog"};
    auto result = flags.Parse(args.argc(), args.argv.data());
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()) ==
          "environment variable RINGWORK_TEST_TIMEOUT_S=soon: expected a number, got "
          "\"soon\" (see --help)");
  }
  unsetenv("RINGWORK_TEST_TIMEOUT_S");
}

TEST_CASE("help is reported, usage lists defaults and env", "[flags]") {
  FlagSet flags("my tool");
  double timeout_s = 300;
  flags.Double("startup_timeout_s", &timeout_s, "how long to wait", "RINGWORK_STARTUP_TIMEOUT_S");
  Args args{"prog", "--help"};
  REQUIRE(flags.Parse(args.argc(), args.argv.data()).ok());
  CHECK(flags.help_requested());
  const std::string usage = flags.Usage();
  CHECK(usage.find("--startup_timeout_s (default 300; env RINGWORK_STARTUP_TIMEOUT_S)") !=
        std::string::npos);
}

TEST_CASE("--helpmarkdown gives the flags as a Markdown table", "[flags]") {
  FlagSet flags("my tool\n  my tool --x=1");
  double timeout_s = 300;
  std::string mode = "a|b";
  flags.Double("startup_timeout_s", &timeout_s, "how long to wait", "RINGWORK_STARTUP_TIMEOUT_S");
  flags.String("mode", &mode, "one of a|b", "");
  Args args{"prog", "--helpmarkdown"};
  REQUIRE(flags.Parse(args.argc(), args.argv.data()).ok());
  CHECK(flags.help_requested());
  CHECK(flags.HelpText("tool") ==
        "## tool\n\n```text\nmy tool\n  my tool --x=1\n```\n\n"
        "| flag | default | environment variable | what |\n|---|---|---|---|\n"
        "| `--mode` | `\"a\\|b\"` |  | one of a\\|b |\n"
        "| `--startup_timeout_s` | `300` | `RINGWORK_STARTUP_TIMEOUT_S` | how long to wait |\n");
  Args plain{"prog", "--help"};
  FlagSet other("other");
  REQUIRE(other.Parse(plain.argc(), plain.argv.data()).ok());
  CHECK(other.HelpText("other") == other.Usage());
}

TEST_CASE("the environment alone fills only the flags a predicate allows", "[flags]") {
  setenv("RINGWORK_TEST_A", "7", 1);
  setenv("RINGWORK_TEST_B", "8", 1);
  int64_t a = 1, b = 2;
  FlagSet flags("embedded");
  flags.Int("a", &a, "a", "RINGWORK_TEST_A");
  flags.Int("b", &b, "b", "RINGWORK_TEST_B");
  REQUIRE(flags.ParseEnvironment([](const std::string& name) { return name == "a"; }).ok());
  CHECK(a == 7);
  CHECK(b == 2);
  CHECK(flags.IsSet("a"));
  CHECK_FALSE(flags.IsSet("b"));
  setenv("RINGWORK_TEST_B", "lots", 1);
  const absl::Status bad = flags.ParseEnvironment([](const std::string&) { return true; });
  CHECK(
      std::string(bad.message()) ==
      "environment variable RINGWORK_TEST_B=lots: expected an integer, got \"lots\" (see --help)");
  unsetenv("RINGWORK_TEST_A");
  unsetenv("RINGWORK_TEST_B");
}

TEST_CASE("SameValue compares two flag sets' targets exactly", "[flags]") {
  double x = 0.1, y = 0.1 + 1e-12;
  std::string s = "p", t = "p";
  FlagSet one("one"), two("two");
  one.Double("d", &x, "d");
  two.Double("d", &y, "d");
  one.String("s", &s, "s");
  two.String("s", &t, "s");
  CHECK_FALSE(one.SameValue("d", two));
  CHECK(one.SameValue("s", two));
  CHECK_FALSE(one.SameValue("missing", two));
  y = 0.1;
  CHECK(one.SameValue("d", two));
}

}  // namespace
}  // namespace ringwork
