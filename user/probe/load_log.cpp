#include "probe/load_log.hpp"

#include <array>
#include <vector>

namespace shmbpf {

namespace {

constexpr std::string_view kTag = "libbpf: prog '";
constexpr std::string_view kBegin = "-- BEGIN PROG LOAD LOG --";
constexpr std::string_view kEnd = "-- END PROG LOAD LOG --";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// Lines a verifier writes after its reason, or that say nothing about it.
bool is_noise(std::string_view line) {
  constexpr std::array prefixes = {
      std::string_view{"processed "},  std::string_view{"verification time"},
      std::string_view{"stack depth"}, std::string_view{"max_states_per_insn"},
      std::string_view{"-- END"},      std::string_view{"-- BEGIN"},
      std::string_view{"last_idx"},    std::string_view{"regs="},
      std::string_view{"parent "},     std::string_view{"Func#"},
  };
  if (line.empty())
    return true;
  for (std::string_view p : prefixes)
    if (line.starts_with(p))
      return true;
  return false;
}

} // namespace

std::string verifier_reason(std::string_view log) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at <= log.size();) {
    size_t nl = log.find('\n', at);
    if (nl == std::string_view::npos)
      nl = log.size();
    lines.push_back(trim(log.substr(at, nl - at)));
    at = nl + 1;
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!is_noise(*it))
      return std::string(*it);
  return {};
}

void LoadLog::add(std::string_view message) {
  if (!message.starts_with(kTag))
    return;
  const size_t end = message.find('\'', kTag.size());
  if (end == std::string_view::npos)
    return;
  const std::string prog(message.substr(kTag.size(), end - kTag.size()));
  std::string_view rest = message.substr(end + 1);
  if (rest.starts_with(": "))
    rest.remove_prefix(2);
  if (rest.starts_with(kBegin)) {
    rest.remove_prefix(kBegin.size());
    if (size_t e = rest.rfind(kEnd); e != std::string_view::npos)
      rest = rest.substr(0, e);
    log_[prog] = std::string(rest);
    return;
  }
  if (rest.starts_with("BPF program load failed") || rest.starts_with("failed to load")) {
    if (failed_.empty())
      failed_ = prog;
    // The first of these says why (errno); keep it over "failed to load: -22".
    if (!last_.contains(prog) || rest.starts_with("BPF program load failed"))
      last_[prog] = std::string(trim(rest));
    return;
  }
  last_[prog] = std::string(trim(rest));
}

std::string LoadLog::failure() const {
  if (failed_.empty())
    return {};
  std::string why;
  if (auto it = log_.find(failed_); it != log_.end())
    why = verifier_reason(it->second);
  if (why.empty())
    if (auto it = last_.find(failed_); it != last_.end())
      why = it->second;
  return "program " + failed_ + ": " + (why.empty() ? "refused" : why);
}

} // namespace shmbpf
