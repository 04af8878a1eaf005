// flashsim's help layout: see help_format.h.
#include "flashsim/app/help_format.h"

#include <sstream>

namespace flashsim::app {

std::string plain_type_name(const std::string& cli11_type_name) {
  // CLI11 appends each validator's description to the type name after a ':'. A choice list (IsMember,
  // Transformer) reads "{a,b,c}" or "{a->x,b->y}": shown as its keys; any other validator text is dropped.
  const std::size_t colon = cli11_type_name.find(':');
  const std::string base = cli11_type_name.substr(0, colon);
  for (std::size_t at = colon; at != std::string::npos; at = cli11_type_name.find(':', at + 1)) {
    if (cli11_type_name.compare(at + 1, 1, "{") != 0) continue;
    const std::size_t close = cli11_type_name.find('}', at + 1);
    if (close == std::string::npos) break;
    std::string choices;
    std::stringstream items(cli11_type_name.substr(at + 2, close - at - 2));
    for (std::string item; std::getline(items, item, ',');) {
      item = item.substr(0, item.find("->"));
      if (item.empty()) continue;
      choices += (choices.empty() ? "" : "|") + item;
    }
    if (!choices.empty()) return choices;
  }
  return base;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::string out;
  if (opt->get_type_size() != 0) {
    const std::string type = plain_type_name(opt->get_type_name());
    if (!type.empty()) out += " " + get_label(type);
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size)
      out += " ...";
    else if (opt->get_expected_min() > 1)
      out += " x " + std::to_string(opt->get_expected());
    if (opt->get_required()) out += " " + get_label("REQUIRED");
  }
  if (!opt->get_envname().empty()) out += " (" + get_label("Env") + ":" + opt->get_envname() + ")";
  if (!opt->get_needs().empty()) {
    out += " " + get_label("Needs") + ":";
    for (const CLI::Option* o : opt->get_needs()) out += " " + o->get_name();
  }
  if (!opt->get_excludes().empty()) {
    out += " " + get_label("Excludes") + ":";
    for (const CLI::Option* o : opt->get_excludes()) out += " " + o->get_name();
  }
  return out;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string desc = opt->get_description();
  const std::string def = opt->get_default_str();
  // Flags (type size 0) have no value to default; empty containers capture as "" or "[]"; a description
  // that says its own default ("default: --seqlen") knows better than the variable's placeholder value.
  if (opt->get_type_size() == 0 || def.empty() || def == "[]" || desc.find("default:") != std::string::npos)
    return desc;
  return desc + (desc.empty() ? "" : " ") + "(default: " + def + ")";
}

}  // namespace flashsim::app
