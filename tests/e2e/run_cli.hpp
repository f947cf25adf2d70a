// Runs the shmbpf binary from end-to-end tests and reads its JSON.
#pragma once

#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace shmbpf::test {

struct CliResult {
  int code = -1; // exit status, -1 when killed by a signal
  std::string out;
  std::string err;
  std::string command;

  // The parsed stdout; a parse failure is reported as a test failure with
  // the command line and both streams, and yields null.
  nlohmann::json json() const {
    auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      ADD_FAILURE() << "not JSON from `" << command << "`:\n" << out << "\nstderr: " << err;
    return j;
  }
};

// Runs `shmbpf <args>` through the shell (args may carry quoted globs).
inline CliResult run_shmbpf(const std::string &args) {
  CliResult r;
  r.command = std::string(SHMBPF_BINARY) + " " + args;
  char errpath[] = "/tmp/shmbpf-e2e-stderr-XXXXXX";
  int errfd = mkstemp(errpath);
  std::string cmd = r.command + (errfd >= 0 ? std::string(" 2>") + errpath : "");
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return r;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (errfd >= 0) {
    while ((n = static_cast<size_t>(std::max<ssize_t>(0, read(errfd, buf, sizeof buf)))) > 0)
      r.err.append(buf, n);
    close(errfd);
    unlink(errpath);
  }
  return r;
}

// Root is needed to see every process and namespace; outside CI a non-root
// run skips, under CI=true it fails.
#define SHMBPF_REQUIRE_ROOT()                                                                      \
  do {                                                                                             \
    if (geteuid() != 0) {                                                                          \
      if (::shmbpf::test::in_ci())                                                                 \
        FAIL() << "end-to-end tests need root under CI=true";                                      \
      GTEST_SKIP() << "needs root";                                                                \
    }                                                                                              \
  } while (0)

} // namespace shmbpf::test
