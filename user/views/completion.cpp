#include "views/completion.hpp"

#include <string_view>

namespace shmbpf {

namespace {

std::string join(const std::vector<std::string> &words, std::string_view sep) {
  std::string out;
  for (const std::string &w : words) {
    if (!out.empty())
      out += sep;
    out += w;
  }
  return out;
}

// Inside single quotes in sh, bash and zsh: a quote ends, is escaped and
// the quoting starts again.
std::string sh_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Inside single quotes in fish: backslash and quote are escaped.
std::string fish_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "'";
}

// zsh's _arguments and _describe read [, ], : and \ in a description.
std::string zsh_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '[' || c == ']' || c == ':' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

std::string bash_options_case(const CompletionCommand &c) {
  std::vector<std::string> words, limited, valued;
  std::string out;
  for (const CompletionOption &o : c.options) {
    for (const std::string &n : o.names)
      words.push_back(n);
    if (o.takes_value && !o.choices.empty())
      out += "      " + join(o.names, "|") + ") COMPREPLY=($(compgen -W " +
             sh_quoted(join(o.choices, " ")) + " -- \"$cur\")); return ;;\n";
    else if (o.takes_value)
      valued.push_back(join(o.names, "|"));
  }
  if (!valued.empty())
    out += "      " + join(valued, "|") + ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
  for (const std::string &a : c.arguments)
    words.push_back(a);
  std::string body = "    " + c.name + ")\n";
  if (!out.empty())
    body += "      case $prev in\n" + out + "      esac\n";
  body += "      COMPREPLY=($(compgen -W " + sh_quoted(join(words, " ")) + " -- \"$cur\"))\n";
  return body + "      ;;\n";
}

} // namespace

std::string completion_summary(const std::string &text, size_t max) {
  std::string s = text.substr(0, text.find('\n'));
  // The first sentence: up to ". " or ": " or "; ", whichever comes first.
  for (std::string_view end : {". ", "; ", ": "})
    if (size_t at = s.find(end); at != std::string::npos)
      s.resize(at);
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  if (s.size() <= max)
    return s;
  size_t cut = s.rfind(' ', max - 3);
  if (cut == std::string::npos || cut == 0)
    cut = max - 3;
  return s.substr(0, cut) + "...";
}

std::string bash_completion(const CompletionSpec &spec) {
  std::vector<std::string> first;
  for (const CompletionCommand &c : spec.commands)
    first.push_back(c.name);
  for (const CompletionOption &o : spec.global)
    for (const std::string &n : o.names)
      first.push_back(n);
  const std::string fn = "_" + spec.program;
  std::string out = "# bash completion for " + spec.program + " (" + spec.program +
                    " completion bash)\n" + fn +
                    "() {\n"
                    "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
                    "  local cmd= i\n"
                    "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
                    "    case ${COMP_WORDS[i]} in\n"
                    "    -*) ;;\n"
                    "    *) cmd=${COMP_WORDS[i]}; break ;;\n"
                    "    esac\n"
                    "  done\n"
                    "  if [[ -z $cmd ]]; then\n"
                    "    COMPREPLY=($(compgen -W " +
                    sh_quoted(join(first, " ")) +
                    " -- \"$cur\"))\n"
                    "    return\n"
                    "  fi\n"
                    "  case $cmd in\n";
  for (const CompletionCommand &c : spec.commands)
    out += bash_options_case(c);
  out += "  esac\n}\ncomplete -F " + fn + " " + spec.program + "\n";
  return out;
}

std::string zsh_completion(const CompletionSpec &spec) {
  auto option_specs = [](const std::vector<CompletionOption> &options) {
    std::string out;
    for (const CompletionOption &o : options) {
      std::string s;
      if (o.names.size() > 1)
        s += "(" + join(o.names, " ") + ")";
      if (o.repeatable)
        s += "*";
      s += o.names.size() > 1 ? "{" + join(o.names, ",") + "}" : o.names.front();
      std::string rest = "[" + zsh_text(o.help) + "]";
      if (o.takes_value)
        rest += ":value:" +
                (o.choices.empty() ? std::string("_files") : "(" + join(o.choices, " ") + ")");
      // {a,b} is brace expansion: outside the quotes.
      if (o.names.size() > 1)
        out += " \\\n      " + sh_quoted(s.substr(0, s.find('{'))) + s.substr(s.find('{')) +
               sh_quoted(rest);
      else
        out += " \\\n      " + sh_quoted(s + rest);
    }
    return out;
  };
  const std::string fn = "_" + spec.program;
  std::string out = "#compdef " + spec.program + "\n# zsh completion for " + spec.program + " (" +
                    spec.program + " completion zsh)\n" + fn +
                    "() {\n"
                    "  local curcontext=$curcontext state line ret=1\n"
                    "  local -a commands\n"
                    "  commands=(\n";
  for (const CompletionCommand &c : spec.commands)
    out += "    " + sh_quoted(c.name + ":" + zsh_text(c.help)) + "\n";
  out += "  )\n  _arguments -C" + option_specs(spec.global) +
         " \\\n      '1: :->command' '*:: :->args' && ret=0\n"
         "  case $state in\n"
         "  command) _describe -t commands command commands && ret=0 ;;\n"
         "  args)\n"
         "    case $words[1] in\n";
  for (const CompletionCommand &c : spec.commands)
    out += "    " + c.name + ") _arguments" + option_specs(c.options) +
           (c.arguments.empty()
                ? std::string()
                : " \\\n      " + sh_quoted("1:argument:(" + join(c.arguments, " ") + ")")) +
           " && ret=0 ;;\n";
  out += "    esac\n    ;;\n  esac\n  return ret\n}\n" + fn + " \"$@\"\n";
  return out;
}

std::string fish_completion(const CompletionSpec &spec) {
  const std::string c = "complete -c " + spec.program;
  std::vector<std::string> names;
  for (const CompletionCommand &cmd : spec.commands)
    names.push_back(cmd.name);
  const std::string none = "'not __fish_seen_subcommand_from " + join(names, " ") + "'";
  std::string out = "# fish completion for " + spec.program + " (" + spec.program +
                    " completion fish)\n" + c + " -f\n";
  auto option = [&](const std::string &condition, const CompletionOption &o) {
    std::string line = c + " -n " + condition;
    for (const std::string &n : o.names)
      line += n.starts_with("--") ? " -l " + n.substr(2) : " -s " + n.substr(1);
    if (o.takes_value && !o.choices.empty())
      line += " -x -a " + fish_quoted(join(o.choices, " "));
    else if (o.takes_value)
      line += " -r -F";
    return line + " -d " + fish_quoted(o.help) + "\n";
  };
  for (const CompletionOption &o : spec.global)
    out += option(none, o);
  for (const CompletionCommand &cmd : spec.commands)
    out += c + " -n " + none + " -a " + cmd.name + " -d " + fish_quoted(cmd.help) + "\n";
  for (const CompletionCommand &cmd : spec.commands) {
    const std::string in = "'__fish_seen_subcommand_from " + cmd.name + "'";
    if (!cmd.arguments.empty())
      out += c + " -n " + in + " -a " + fish_quoted(join(cmd.arguments, " ")) + "\n";
    for (const CompletionOption &o : cmd.options)
      out += option(in, o);
  }
  return out;
}

} // namespace shmbpf
