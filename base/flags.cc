#include "base/flags.h"

#include <cstdlib>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

std::string TypeName(int type) {
  static const char* const kNames[] = {"a string", "an integer", "a number", "true or false"};
  return kNames[type];
}

}  // namespace

std::string FlagSet::Text(Type type, const void* target) {
  switch (type) {
    case Type::kString:
      return "\"" + *static_cast<const std::string*>(target) + "\"";
    case Type::kInt:
      return std::to_string(*static_cast<const int64_t*>(target));
    case Type::kDouble:
      return absl::StrCat(*static_cast<const double*>(target));
    case Type::kBool:
      return *static_cast<const bool*>(target) ? "true" : "false";
  }
  return "";
}

FlagSet::FlagSet(std::string description) : description_(std::move(description)) {}

void FlagSet::Add(const std::string& name, Type type, void* target, const std::string& help,
                  const std::string& env) {
  Flag flag{type, target, help, env, Text(type, target), false};
  flags_[name] = std::move(flag);
}

void FlagSet::String(const std::string& name, std::string* target, const std::string& help,
                     const std::string& env) {
  Add(name, Type::kString, target, help, env);
}
void FlagSet::Int(const std::string& name, int64_t* target, const std::string& help,
                  const std::string& env) {
  Add(name, Type::kInt, target, help, env);
}
void FlagSet::Double(const std::string& name, double* target, const std::string& help,
                     const std::string& env) {
  Add(name, Type::kDouble, target, help, env);
}
void FlagSet::Bool(const std::string& name, bool* target, const std::string& help,
                   const std::string& env) {
  Add(name, Type::kBool, target, help, env);
}

absl::Status FlagSet::Assign(const std::string& name, Flag& flag, const std::string& value,
                             const std::string& origin) {
  bool ok = true;
  switch (flag.type) {
    case Type::kString:
      *static_cast<std::string*>(flag.target) = value;
      break;
    case Type::kInt:
      ok = absl::SimpleAtoi(value, static_cast<int64_t*>(flag.target));
      break;
    case Type::kDouble:
      ok = absl::SimpleAtod(value, static_cast<double*>(flag.target));
      break;
    case Type::kBool:
      ok = absl::SimpleAtob(value, static_cast<bool*>(flag.target));
      break;
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": expected ",
                                                   TypeName(static_cast<int>(flag.type)),
                                                   ", got \"", value, "\" (see --help)"));
  }
  flag.set = true;
  return absl::OkStatus();
}

absl::Status FlagSet::ParseEnvironment(
    const std::function<bool(const std::string& name)>& applies) {
  for (auto& [name, flag] : flags_) {
    if (flag.env.empty() || !applies(name)) continue;
    const char* value = std::getenv(flag.env.c_str());
    if (value == nullptr || *value == '\0') continue;
    RW_RETURN_IF_ERROR(
        Assign(name, flag, value, absl::StrCat("environment variable ", flag.env, "=", value)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FlagSet::Parse(int argc, const char* const* argv,
                                                        int first) {
  // Environment first, so that the command line overrides it.
  RW_RETURN_IF_ERROR(ParseEnvironment([](const std::string&) { return true; }));
  std::vector<std::string> positional;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.push_back(argv[i]);
      break;
    }
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpmarkdown") {
      help_requested_ = true;
      markdown_requested_ = markdown_requested_ || arg == "--helpmarkdown";
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      positional.push_back(arg);
      continue;
    }
    std::string body = arg.substr(2);
    std::string name = body;
    std::string value;
    bool has_value = false;
    const size_t eq = body.find('=');
    if (eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end() && !has_value && name.compare(0, 2, "no") == 0) {
      auto negated = flags_.find(name.substr(2));
      if (negated != flags_.end() && negated->second.type == Type::kBool) {
        RW_RETURN_IF_ERROR(Assign(negated->first, negated->second, "false", arg));
        continue;
      }
    }
    if (it == flags_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (run with --help to list flags)"));
    }
    Flag& flag = it->second;
    if (!has_value) {
      if (flag.type == Type::kBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value: --", name, "=VALUE (see --help)"));
      }
    }
    RW_RETURN_IF_ERROR(Assign(name, flag, value, absl::StrCat("flag --", name)));
  }
  return positional;
}

bool FlagSet::IsSet(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.set;
}

bool FlagSet::SameValue(const std::string& name, const FlagSet& other) const {
  auto a = flags_.find(name);
  auto b = other.flags_.find(name);
  if (a == flags_.end() || b == other.flags_.end() || a->second.type != b->second.type) {
    return false;
  }
  const void* x = a->second.target;
  const void* y = b->second.target;
  switch (a->second.type) {
    case Type::kString:
      return *static_cast<const std::string*>(x) == *static_cast<const std::string*>(y);
    case Type::kInt:
      return *static_cast<const int64_t*>(x) == *static_cast<const int64_t*>(y);
    case Type::kDouble:
      return *static_cast<const double*>(x) == *static_cast<const double*>(y);
    case Type::kBool:
      return *static_cast<const bool*>(x) == *static_cast<const bool*>(y);
  }
  return false;
}

std::string FlagSet::Usage() const {
  std::ostringstream out;
  out << description_ << "\n\nFlags:\n";
  for (const auto& [name, flag] : flags_) {
    out << "  --" << name << " (default " << flag.default_text;
    if (!flag.env.empty()) out << "; env " << flag.env;
    out << ")\n      " << flag.help << "\n";
  }
  return out.str();
}

std::string FlagSet::Markdown(const std::string& program) const {
  // Table cells hold one line, and a '|' would end them.
  auto cell = [](std::string text) {
    std::string out;
    for (char c : text) {
      if (c == '|')
        out += "\\|";
      else if (c == '\n')
        out += ' ';
      else
        out += c;
    }
    return out;
  };
  std::ostringstream out;
  out << "## " << program << "\n\n```text\n" << description_ << "\n```\n\n";
  out << "| flag | default | environment variable | what |\n|---|---|---|---|\n";
  for (const auto& [name, flag] : flags_) {
    out << "| `--" << name << "` | " << (flag.default_text.empty() ? "" : "`")
        << cell(flag.default_text) << (flag.default_text.empty() ? "" : "`") << " | "
        << (flag.env.empty() ? "" : "`" + flag.env + "`") << " | " << cell(flag.help) << " |\n";
  }
  return out.str();
}

std::string FlagSet::HelpText(const std::string& program) const {
  return markdown_requested_ ? Markdown(program) : Usage();
}

}  // namespace ringwork
