// Misspelled flags and subcommands: see suggest.h.
#include "flashsim/app/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace flashsim::app {

namespace {

// The command path as a user types it: "flashsim sim predict".
std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent())
    if (!p->get_name().empty()) path = p->get_name() + " " + path;
  return path;
}

// Named subcommands of `app` (the nameless ones are option groups, whose options belong to `app`).
std::vector<const CLI::App*> named_subcommands(const CLI::App* app) {
  return app->get_subcommands([](const CLI::App* s) { return !s->get_name().empty() && !s->get_disabled(); });
}

// The long flag names `app` accepts, with dashes, its option groups' included; hidden options are left out.
std::vector<std::string> long_flags(const CLI::App* app) {
  std::vector<std::string> names;
  const auto add = [&names](const CLI::App* a) {
    for (const CLI::Option* opt : a->get_options()) {
      if (opt->get_group().empty()) continue;  // hidden
      for (const std::string& l : opt->get_lnames()) {
        if (std::find(names.begin(), names.end(), "--" + l) == names.end()) names.push_back("--" + l);
      }
    }
  };
  add(app);
  for (const CLI::App* g : app->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); }))
    add(g);
  return names;
}

// "--seqeln=10" -> "--seqeln"; "-x" stays.
std::string flag_name(const std::string& arg) {
  return arg.substr(0, arg.find('='));
}

bool is_flag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return false;
  // a negative number is a (misplaced) value, not a flag
  return !(std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
}

std::string unknown_flag(const CLI::App* app, const std::string& arg) {
  const std::string name = flag_name(arg);
  std::optional<std::string> hint;
  std::vector<std::string> flags = long_flags(app);
  if (name.rfind("--", 0) == 0) {
    std::vector<std::string> bare;
    for (const std::string& f : flags) bare.push_back(f.substr(2));
    if (auto n = nearest(name.substr(2), bare)) hint = "--" + *n;
  } else if (name.size() > 2) {  // -seqlen: a long flag typed with one dash
    std::vector<std::string> bare;
    for (const std::string& f : flags) bare.push_back(f.substr(2));
    if (auto n = nearest(name.substr(1), bare)) hint = "--" + *n;
  }
  const std::string path = command_path(app);
  if (hint) return fmt::format("unknown flag {} for '{}'; did you mean {}?", name, path, *hint);
  return fmt::format("unknown flag {} for '{}' (see {} --help)", name, path, path);
}

std::string unknown_command(const CLI::App* app, const std::string& arg) {
  std::vector<std::string> names;
  for (const CLI::App* s : named_subcommands(app)) {
    names.push_back(s->get_name());
    for (const std::string& a : s->get_aliases()) names.push_back(a);
  }
  const std::string path = command_path(app);
  const std::string where = app->get_parent() == nullptr ? "" : fmt::format(" for '{}'", path);
  if (auto n = nearest(arg, names))
    return fmt::format("unknown command '{}'{}; did you mean '{}'?", arg, where, *n);
  return fmt::format("unknown command '{}'{} (see {} --help)", arg, where, path);
}

}  // namespace

std::optional<std::string> unknown_argument_message(CLI::App& root) {
  // From the top command down the parsed path: an argument left over in a group none of whose subcommands ran
  // is a misspelled subcommand; a leftover flag is one the command does not have. A leftover plain value in a
  // command without subcommands stays CLI11's "not expected" error.
  for (const CLI::App* app = &root; app != nullptr;) {
    const std::vector<std::string> rest = app->remaining();
    const std::vector<CLI::App*> ran = app->get_subcommands();
    if (ran.empty() && !named_subcommands(app).empty()) {
      for (const std::string& arg : rest)
        if (!is_flag(arg) && arg != "--") return unknown_command(app, arg);
    }
    for (const std::string& arg : rest)
      if (is_flag(arg)) return unknown_flag(app, arg);
    app = ran.empty() ? nullptr : ran.front();
  }
  return std::nullopt;
}

}  // namespace flashsim::app
