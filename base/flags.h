// A small command-line flag parser with environment-variable fallbacks, so that
// every binary reports bad usage the same way (exit code 2) and every timeout knob
// can be set either way:
//
//   FlagSet flags("allreduce_bench: nccl-tests-style all-reduce benchmark");
//   int64_t iters = 20;
//   double timeout_s = 60;
//   flags.Int("iters", &iters, "timed iterations per size");
//   flags.Double("timeout_s", &timeout_s, "per-collective deadline",
//                "RINGWORK_COLLECTIVE_TIMEOUT_S");
//   absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
//   if (flags.help_requested()) { std::cout << flags.HelpText(); return 0; }
//   if (!args.ok()) ExitWithStatus(args.status());
//
// Accepted forms: --name=value, --name value, --bool, --nobool, --bool=false.
// "--" ends the flags; everything after it, and every argument that does not start
// with "--", is returned as a positional argument. A flag given on the command line
// overrides its environment variable.
#ifndef RINGWORK_BASE_FLAGS_H_
#define RINGWORK_BASE_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

class FlagSet {
 public:
  explicit FlagSet(std::string description);

  // Each registers a flag whose current value (the default) is in *target. `env`,
  // when given, names an environment variable read before the command line.
  void String(const std::string& name, std::string* target, const std::string& help,
              const std::string& env = "");
  void Int(const std::string& name, int64_t* target, const std::string& help,
           const std::string& env = "");
  void Double(const std::string& name, double* target, const std::string& help,
              const std::string& env = "");
  void Bool(const std::string& name, bool* target, const std::string& help,
            const std::string& env = "");

  // Parses argv[first..argc). Returns the positional arguments. Errors name the
  // flag (or environment variable) and the offending value.
  absl::StatusOr<std::vector<std::string>> Parse(int argc, const char* const* argv, int first = 1);

  // True when --help, -h or --helpmarkdown was given; Parse then returns no error
  // for it.
  bool help_requested() const { return help_requested_; }
  // For programs that take no command line (apps embedding a library whose options
  // register flags): assigns each flag from its environment variable when
  // `applies(name)` is true. Errors name the variable and the value.
  absl::Status ParseEnvironment(const std::function<bool(const std::string& name)>& applies);

  // True when the flag was given on the command line or by its environment variable.
  bool IsSet(const std::string& name) const;
  // True when flag `name` holds the same value here as in `other` (same type, exact
  // comparison); false when either lacks it.
  bool SameValue(const std::string& name, const FlagSet& other) const;
  // The description and one line per flag with its default and environment variable.
  std::string Usage() const;
  // The same as a Markdown section titled `program`: the description as text, then
  // a table of the flags (docs/FLAGS.md is made of these: scripts/flag_reference.sh).
  std::string Markdown(const std::string& program) const;
  // What --help asked for: Usage(), or with --helpmarkdown Markdown(program).
  std::string HelpText(const std::string& program = "") const;

 private:
  enum class Type { kString, kInt, kDouble, kBool };
  struct Flag {
    Type type;
    void* target;  // Not owned.
    std::string help;
    std::string env;
    std::string default_text;
    bool set = false;
  };
  static std::string Text(Type type, const void* target);
  void Add(const std::string& name, Type type, void* target, const std::string& help,
           const std::string& env);
  absl::Status Assign(const std::string& name, Flag& flag, const std::string& value,
                      const std::string& origin);

  std::string description_;
  std::map<std::string, Flag> flags_;
  bool help_requested_ = false;
  bool markdown_requested_ = false;
};

}  // namespace ringwork

#endif  // RINGWORK_BASE_FLAGS_H_
