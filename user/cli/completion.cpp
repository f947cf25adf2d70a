// `shmbpf completion bash|zsh|fish`: the completion script of this very
// command line, read from the parser (views/completion writes it).
#include "cli/app.hpp"

#include "views/completion.hpp"

#include <cstdio>
#include <functional>

namespace shmbpf {

namespace {

// An IsMember check's values, as CLI11 names them in the type: "TEXT:{a,b}".
std::vector<std::string> choices_of(const std::string &type) {
  const size_t open = type.find(":{");
  const size_t close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos)
    return {};
  std::vector<std::string> out;
  std::string word;
  for (char c : type.substr(open + 2, close - open - 2)) {
    if (c == ',') {
      out.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  out.push_back(word);
  return out;
}

std::vector<CompletionOption> options_of(const CLI::App &app) {
  std::vector<CompletionOption> out;
  for (const CLI::Option *opt : app.get_options()) {
    if (!opt->nonpositional())
      continue;
    CompletionOption o;
    for (const std::string &s : opt->get_snames())
      o.names.push_back("-" + s);
    for (const std::string &l : opt->get_lnames())
      o.names.push_back("--" + l);
    o.help = completion_summary(opt->get_description());
    // A flag expects no value; a vector option any number of them.
    o.takes_value = opt->get_expected_max() > 0;
    o.repeatable = opt->get_expected_max() > 1;
    if (o.takes_value)
      o.choices = choices_of(opt->get_type_name());
    out.push_back(std::move(o));
  }
  return out;
}

CompletionSpec completion_spec(const CLI::App &app) {
  CompletionSpec spec;
  spec.program = app.get_name();
  spec.global = options_of(app);
  for (const CLI::App *sub : app.get_subcommands(std::function<bool(const CLI::App *)>{})) {
    CompletionCommand c{
        sub->get_name(), completion_summary(sub->get_description()), options_of(*sub), {}};
    for (const CLI::Option *opt : sub->get_options())
      if (opt->get_positional() && c.arguments.empty())
        c.arguments = choices_of(opt->get_type_name());
    spec.commands.push_back(std::move(c));
  }
  return spec;
}

} // namespace

void add_completion_command(CLI::App &app, CompletionOptions &o) {
  auto *c = app.add_subcommand(
      "completion",
      "Print the completion script of a shell: source <(shmbpf completion bash); the .deb "
      "installs each where its shell looks");
  c->add_option("shell", o.shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
}

int run_completion(const CLI::App &app, const CompletionOptions &o) {
  const CompletionSpec spec = completion_spec(app);
  const std::string text = o.shell == "bash"  ? bash_completion(spec)
                           : o.shell == "zsh" ? zsh_completion(spec)
                                              : fish_completion(spec);
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}

} // namespace shmbpf
