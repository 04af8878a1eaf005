#pragma once
// flashsim's help layout: an option's value is shown by its plain type (INT, FLOAT, TEXT) or its choices
// (fwd|bwd|both), never CLI11's validator text ("FLOAT:FLOAT in [0 - 1e+06]"); a captured default goes after
// the description as "(default: X)".
#include <CLI/CLI.hpp>
#include <string>

namespace flashsim::app {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

// "TEXT:{fwd,bwd,both}" -> "fwd|bwd|both"; "FLOAT:FLOAT in [0 - 1e+06]" -> "FLOAT"; "INT" -> "INT".
std::string plain_type_name(const std::string& cli11_type_name);

}  // namespace flashsim::app
