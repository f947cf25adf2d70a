// The command line's edges, as they were found: a reader that closes the
// pipe (one rule for every command), numbers CLI11 would read in base 16 or
// wrap, ranges printed as 300 digits, control characters in a bad argument
// printed raw, a group id no group has.
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

struct Ran {
  bool exited = false; // false: killed by a signal (or never ended)
  int status = -1;     // exit status or signal
  std::string err;
};

// Runs shmbpf with stdout given: a pipe nobody reads any more, or
// /dev/null; stderr collected.
Ran run_with_stdout(const std::vector<std::string> &args, bool closed_pipe) {
  int out = -1;
  if (closed_pipe) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
      return {};
    close(p[0]); // the reader is gone before the command starts
    out = p[1];
  } else {
    out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  }
  char errpath[] = "/tmp/shmbpf-attack-err-XXXXXX";
  const int err = mkstemp(errpath);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, 1);
    dup2(err, 2);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    std::vector<char *> argv{const_cast<char *>(SHMBPF_BINARY)};
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(SHMBPF_BINARY, argv.data());
    _exit(127);
  }
  close(out);
  Ran r;
  int st = 0;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);;) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      break;
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.exited = WIFEXITED(st);
  r.status = r.exited ? WEXITSTATUS(st) : WTERMSIG(st);
  char buf[4096];
  lseek(err, 0, SEEK_SET);
  for (ssize_t n; (n = read(err, buf, sizeof buf)) > 0;)
    r.err.append(buf, static_cast<size_t>(n));
  close(err);
  unlink(errpath);
  return r;
}

TEST(CliEdges, AClosedPipeEndsEveryCommandQuietlyWithItsOwnStatus) {
  SHMBPF_REQUIRE_ROOT();
  const std::vector<std::vector<std::string>> commands = {
      {"ls"},
      {"ls", "--json"},
      {"leaks", "--min-age", "0"},
      {"audit"},
      {"doctor"},
      {"reap", "--min-age", "0", "--match", "/dev/shm/shmbpf-attack-none-*"},
      {"top", "-b", "-n", "2", "-d", "0.2"},
      {"trace", "--duration", "1"},
  };
  for (const auto &args : commands) {
    std::string line;
    for (const std::string &a : args)
      line += " " + a;
    const Ran reference = run_with_stdout(args, false);
    const Ran closed = run_with_stdout(args, true);
    ASSERT_TRUE(reference.exited) << line << ": " << reference.err;
    EXPECT_TRUE(closed.exited) << line << ": killed by signal " << closed.status;
    EXPECT_EQ(closed.status, reference.status) << line << ": " << closed.err;
    EXPECT_EQ(closed.err.find("Broken pipe"), std::string::npos) << line << ": " << closed.err;
  }
}

TEST(CliEdges, NumbersAreDecimalInRangeAndSaidReadably) {
  struct Bad {
    std::string args;
    std::string said;
  };
  for (const Bad &b : std::vector<Bad>{
           {"leaks --min-age -1", "--min-age: must be a number 0 or more, not -1"},
           {"reap --min-age -0.5", "--min-age: must be a number 0 or more, not -0.5"},
           {"leaks --min-age 0x10", "--min-age: must be a number written in decimal, not '0x10'"},
           {"leaks --window 0b11", "written in decimal, not '0b11'"},
           {"top -d 0", "--delay: must be a number from 0.1 to 3600, not 0"},
           {"top -d nan", "--delay: must be a number from 0.1 to 3600, not nan"},
           {"trace --duration 0", "--duration: must be a number above 0, not 0"},
           {"trace --ring-buffer-size 18446744073709551616",
            "18446744073709551616 is not a power of two between"},
           {"trace --ring-buffer-size -1", "written in decimal, not '-1'"},
           {"serve --export-file /tmp/x --export-file-max-backups 0x5",
            "written in decimal, not '0x5'"},
           {"serve --socket-group 4294967295", "no group has the id '4294967295'"},
           {"serve --socket-group 48213", "no group has the id '48213'"},
       }) {
    const CliResult r = run_shmbpf(b.args);
    EXPECT_EQ(r.code, 2) << b.args << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << b.args << ": " << r.err;
    EXPECT_NE(r.err.find(b.said), std::string::npos) << b.args << ": " << r.err;
    EXPECT_LT(r.err.size(), 200u) << b.args << ": " << r.err;
  }
}

TEST(CliEdges, ABadArgumentIsShownEscapedOnOneLine) {
  // Through sh: printf makes the control characters.
  for (const std::string &args : {std::string("leaks --min-age \"$(printf '1\\n2')\""),
                                  std::string("ls --by \"$(printf 'x\\033]0;pwned\\007y')\""),
                                  std::string("ls --runtime-root \"$(printf 'docker=\\n/x')\"")}) {
    const CliResult r = run_shmbpf(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << args << ": " << r.err;
    for (char c : r.err.substr(0, r.err.size() - 1))
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << args << ": " << r.err;
  }
}

} // namespace
} // namespace shmbpf::test
