// libbpf's messages while a BPF object loads, kept per program, so that a
// load that fails is told as "program X: <the verifier's reason>" instead of
// libbpf's last line ("failed to load BPF skeleton ...: -22").
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace shmbpf {

class LoadLog {
public:
  // One message of libbpf's, as its print callback formats it (a verifier
  // log arrives whole, as one message of many lines).
  void add(std::string_view message);
  // "program X: reason" for the program whose load failed; "" when no
  // message named one.
  std::string failure() const;

private:
  std::string failed_;                      // the program libbpf said failed to load
  std::map<std::string, std::string> log_;  // program -> its verifier log
  std::map<std::string, std::string> last_; // program -> libbpf's last warning on it
};

// The verifier's last meaningful line of a program's load log: the reason
// it gave up, without the statistics and markers that follow it.
std::string verifier_reason(std::string_view log);

} // namespace shmbpf
