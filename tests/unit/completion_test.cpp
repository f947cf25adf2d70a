// Completion scripts from a spec: what each shell is given, quoted so that
// no help text can end a quote or a description.
#include "views/completion.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

CompletionSpec spec() {
  CompletionSpec s;
  s.program = "shmbpf";
  s.global = {{{"--version"}, "Print the version", false, false, {}}};
  s.commands = {{"serve",
                 "Run [the] agent: it's 'quoted'",
                 {{{"--hooks"}, "Which hooks: a [set]", true, false, {"full", "light"}},
                  {{"-v", "--verbose"}, "Louder", false, false, {}},
                  {{"--runtime-root"}, "Where a runtime's files are", true, true, {}}},
                 {}},
                {"completion", "A shell's script", {}, {"bash", "zsh", "fish"}}};
  return s;
}

TEST(Completion, SummaryIsTheFirstSentenceCutAtAWord) {
  EXPECT_EQ(completion_summary("Show libbpf's messages"), "Show libbpf's messages");
  EXPECT_EQ(completion_summary("Run the agent. It serves"), "Run the agent");
  EXPECT_EQ(completion_summary("One: two; three"), "One");
  EXPECT_EQ(completion_summary("Ends with a dot."), "Ends with a dot");
  EXPECT_EQ(completion_summary("aaaa bbbb cccc dddd", 12), "aaaa bbbb...");
  EXPECT_EQ(completion_summary("aaaabbbbccccdddd", 12), "aaaabbbbc...");
  EXPECT_EQ(completion_summary("first line\nsecond"), "first line");
}

TEST(Completion, BashOffersCommandsOptionsAndChoices) {
  const std::string b = bash_completion(spec());
  EXPECT_NE(b.find("compgen -W 'serve completion --version'"), std::string::npos) << b;
  EXPECT_NE(b.find("--hooks) COMPREPLY=($(compgen -W 'full light'"), std::string::npos) << b;
  EXPECT_NE(b.find("--runtime-root) COMPREPLY=($(compgen -f"), std::string::npos) << b;
  EXPECT_NE(b.find("'--hooks -v --verbose --runtime-root'"), std::string::npos) << b;
  EXPECT_NE(b.find("compgen -W 'bash zsh fish'"), std::string::npos) << b;
  EXPECT_TRUE(b.ends_with("complete -F _shmbpf shmbpf\n")) << b;
}

TEST(Completion, ZshQuotesDescriptionsAndKeepsRepeatableOptions) {
  const std::string z = zsh_completion(spec());
  EXPECT_TRUE(z.starts_with("#compdef shmbpf\n")) << z;
  // [, ] and : escaped; a single quote closed, escaped and reopened.
  EXPECT_NE(z.find(R"('serve:Run \[the\] agent\: it'\''s '\''quoted'\''')"), std::string::npos)
      << z;
  EXPECT_NE(z.find(R"('--hooks[Which hooks\: a \[set\]]:value:(full light)')"), std::string::npos)
      << z;
  EXPECT_NE(z.find(R"('(-v --verbose)'{-v,--verbose}'[Louder]')"), std::string::npos) << z;
  EXPECT_NE(z.find(R"('*--runtime-root[Where a runtime'\''s files are]:value:_files')"),
            std::string::npos)
      << z;
  EXPECT_NE(z.find("'1:argument:(bash zsh fish)'"), std::string::npos) << z;
}

TEST(Completion, FishGivesEachOptionItsCommandAndValues) {
  const std::string f = fish_completion(spec());
  EXPECT_NE(f.find("complete -c shmbpf -n 'not __fish_seen_subcommand_from serve completion' -a "
                   "serve -d 'Run [the] agent: it\\'s \\'quoted\\''"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("-n '__fish_seen_subcommand_from serve' -l hooks -x -a 'full light'"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("-n '__fish_seen_subcommand_from serve' -s v -l verbose -d 'Louder'"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("-l runtime-root -r -F"), std::string::npos) << f;
  EXPECT_NE(f.find("-n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'"),
            std::string::npos)
      << f;
}

} // namespace
} // namespace shmbpf
