// Output that cannot be written is an error: a full disk under `trace`,
// `ls`, `leaks` or `top -b` exits 2 and says so, instead of exiting as if
// the report had been read. A reader that goes away (`| head`) is not.
#include "run_cli.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

namespace shmbpf::test {
namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_full_disk_is_an_error(const std::string &args) {
  const CliResult r = run_shmbpf(args + " > /dev/full");
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("shmbpf: writing the output: No space left on device"), std::string::npos)
      << args << "\n"
      << r.err;
}

TEST(OutputCli, FullDiskIsAnErrorForScans) {
  expect_full_disk_is_an_error("ls");
  expect_full_disk_is_an_error("ls --json");
  expect_full_disk_is_an_error("leaks --min-age 0");
}

TEST(OutputCli, FullDiskIsAnErrorForLiveCommands) {
  SHMBPF_REQUIRE_ROOT();
  expect_full_disk_is_an_error("trace --duration 1");
  expect_full_disk_is_an_error("top -b -n 1");
}

// top -b prints frames until stopped: once `head` has its line, top must
// see the closed pipe and end quietly with status 0.
TEST(OutputCli, AReaderThatGoesAwayEndsTheOutputQuietly) {
  SHMBPF_REQUIRE_ROOT();
  char dir[] = "/tmp/shmbpf-e2e-pipe-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string status = std::string(dir) + "/status", err = std::string(dir) + "/err";
  const std::string cmd = "(timeout 60 " + std::string(SHMBPF_BINARY) + " top -b -d 0.2 2>" + err +
                          "; echo $? >" + status + ") | head -n 1 >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // head exits at once; the subshell writes its status when top has ended.
  std::string code, errors;
  for (int i = 0; i < 600 && code.empty(); ++i) {
    code = read_file(status);
    if (code.empty())
      usleep(100'000);
  }
  errors = read_file(err);
  EXPECT_EQ(code, "0\n") << errors;
  EXPECT_EQ(errors.find("writing the output"), std::string::npos) << errors;
  std::remove(status.c_str());
  std::remove(err.c_str());
  rmdir(dir);
}

} // namespace
} // namespace shmbpf::test
