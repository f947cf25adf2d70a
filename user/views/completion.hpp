// Shell completion scripts for bash, zsh and fish, written from what the
// command line accepts (its commands, their options, the values an option
// is limited to): `shmbpf completion bash|zsh|fish`. Pure text; the cli
// layer reads the spec from its parser, so a new option completes without
// a second list to keep.
#pragma once

#include <string>
#include <vector>

namespace shmbpf {

struct CompletionOption {
  std::vector<std::string> names;   // "--hooks", "-v"
  std::string help;                 // one line
  bool takes_value = false;         // else a flag
  bool repeatable = false;          // may be given more than once
  std::vector<std::string> choices; // the only values it takes, when limited
};

struct CompletionCommand {
  std::string name;
  std::string help; // one line
  std::vector<CompletionOption> options;
  std::vector<std::string> arguments; // the values its first argument takes, when limited
};

struct CompletionSpec {
  std::string program;                  // "shmbpf"
  std::vector<CompletionOption> global; // before a command: --help, --version
  std::vector<CompletionCommand> commands;
};

// The first sentence of text, at most max characters (cut at a word, with
// "..."), for a completion's description.
std::string completion_summary(const std::string &text, size_t max = 70);

std::string bash_completion(const CompletionSpec &spec);
std::string zsh_completion(const CompletionSpec &spec);
std::string fish_completion(const CompletionSpec &spec);

} // namespace shmbpf
