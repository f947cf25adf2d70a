// `shmbpf audit` on the real machine, without containers: a process in a
// private mount namespace with its own /dev/shm (a tmpfs without noexec)
// runs a program stored there and keeps a world-writable file; the
// snapshot must name all three, as the host's. With --watch, a program run
// from such a mount made after the snapshot, and one run from a memfd,
// both exiting at once, must be caught from the exec events.
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::vector<json> findings_of(const json &doc, const std::string &rule) {
  std::vector<json> out;
  for (const json &f : doc["findings"])
    if (f["rule"] == rule)
      out.push_back(f);
  return out;
}

bool has_pid(const json &f, pid_t pid) {
  for (const json &p : f["evidence"]["processes"])
    if (p["pid"] == pid)
      return true;
  return false;
}

bool has_path(const json &f, const std::string &path) {
  for (const json &p : f["evidence"]["paths"])
    if (p == path)
      return true;
  return false;
}

// A shell in a private mount namespace with a fresh tmpfs on /dev/shm
// (which the host never sees), running script there.
std::unique_ptr<ChildProcess> in_private_shm(const std::string &script) {
  return std::make_unique<ChildProcess>(
      "/usr/bin/unshare",
      std::vector<std::string>{"--mount", "--propagation", "private", "/bin/sh", "-c",
                               "mount -t tmpfs -o size=4m,mode=1777 shmbpf-audit /dev/shm && " +
                                   script});
}

TEST(AuditCli, RejectsBadOptions) {
  for (const char *bad : {"--fail-on urgent", "--rule no-such-rule", "--watch 0", "--watch -3",
                          "--runtime-root nosuch=/x"}) {
    const CliResult r = run_shmbpf(std::string("audit ") + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("shmbpf: "), std::string::npos) << r.err;
  }
}

TEST(AuditCli, ProgramAndWorldWritableFileOnAPrivateDevShm) {
  SHMBPF_REQUIRE_ROOT();
  auto child = in_private_shm("cp /bin/sleep /dev/shm/shmbpf-audit-sleep && "
                              "touch /dev/shm/ww && chmod 0666 /dev/shm/ww && echo ready && "
                              "exec /dev/shm/shmbpf-audit-sleep 120");
  ASSERT_TRUE(child->wait_output("ready", 10s)) << child->err();
  std::this_thread::sleep_for(200ms); // the exec after the echo
  struct stat shm {};
  ASSERT_EQ(stat(("/proc/" + std::to_string(child->pid()) + "/root/dev/shm/ww").c_str(), &shm), 0);
  const std::string dev =
      std::to_string(major(shm.st_dev)) + ":" + std::to_string(minor(shm.st_dev));

  const CliResult r = run_shmbpf("audit --json --fail-on none");
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = r.json();

  bool exec_found = false;
  for (const json &f : findings_of(doc, "exec-from-shm")) {
    if (!has_pid(f, child->pid()))
      continue;
    exec_found = true;
    EXPECT_EQ(f["severity"], "high");
    EXPECT_EQ(f["source"], "snapshot");
    EXPECT_TRUE(f["container"].is_null()) << f.dump();
    EXPECT_TRUE(has_path(f, "/dev/shm/shmbpf-audit-sleep")) << f.dump();
    EXPECT_EQ(f["evidence"]["mountpoint"], "/dev/shm");
    EXPECT_EQ(f["evidence"]["dev"], dev);
  }
  EXPECT_TRUE(exec_found) << r.out;

  bool ww_found = false;
  for (const json &f : findings_of(doc, "world-writable-segment")) {
    if (f["evidence"].value("dev", "") != dev)
      continue;
    ww_found = true;
    EXPECT_EQ(f["severity"], "medium");
    EXPECT_TRUE(has_path(f, "/dev/shm/ww")) << f.dump();
    EXPECT_EQ(f["evidence"]["mode"], "0666");
    EXPECT_EQ(f["evidence"]["segments"], 1);
  }
  EXPECT_TRUE(ww_found) << r.out;

  bool options_found = false;
  for (const json &f : findings_of(doc, "shm-mount-options")) {
    if (f["evidence"]["dev"] != dev)
      continue;
    options_found = true;
    EXPECT_EQ(f["severity"], "low");
    EXPECT_NE(f["summary"].get<std::string>().find("noexec"), std::string::npos);
  }
  EXPECT_TRUE(options_found) << r.out;

  // The exit status follows --fail-on; --rule and --container select.
  EXPECT_EQ(run_shmbpf("audit --fail-on high").code, 1);
  const CliResult only = run_shmbpf("audit --json --rule exec-from-shm --container host");
  EXPECT_EQ(only.code, 1) << only.err;
  const json only_doc = only.json(); // kept: the loop below reads into it
  for (const json &f : only_doc["findings"]) {
    EXPECT_EQ(f["rule"], "exec-from-shm");
    EXPECT_TRUE(f["container"].is_null());
  }
  EXPECT_EQ(run_shmbpf("audit --rule shm-mount-options").code, 0); // low < medium
  const CliResult text = run_shmbpf("audit --rule exec-from-shm");
  EXPECT_NE(text.out.find("HIGH   exec-from-shm  host"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("path: /dev/shm/shmbpf-audit-sleep"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" high, "), std::string::npos) << text.out;
  child->signal(SIGKILL);
}

TEST(AuditCli, WatchCatchesProgramsThatExitAtOnce) {
  SHMBPF_REQUIRE_ROOT();
  ChildProcess audit(SHMBPF_BINARY, {"audit", "--watch", "8", "--json", "--fail-on", "none"});
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (audit.err().find("watching execs") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline && !audit.exited())
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(audit.err().find("watching execs"), std::string::npos) << audit.err();

  // A /dev/shm mounted after the snapshot, a program run from it that exits
  // at once; the namespace lives on a little (the shell's sleep).
  auto shm = in_private_shm("cp /bin/true /dev/shm/shmbpf-audit-true && "
                            "/dev/shm/shmbpf-audit-true && echo ran && sleep 3");
  ASSERT_TRUE(shm->wait_output("ran", 10s)) << shm->err();
  // A program run from a memfd, gone at once.
  const CliResult memfd = [] {
    CliResult r;
    r.code = std::system("python3 -c 'import os; fd = os.memfd_create(\"shmbpf-audit-payload\"); "
                         "os.write(fd, open(\"/bin/true\", \"rb\").read()); "
                         "os.execve(fd, [\"true\"], {})'");
    return r;
  }();
  ASSERT_EQ(memfd.code, 0);

  const auto st = audit.wait(60s);
  ASSERT_TRUE(st.has_value()) << audit.err();
  ASSERT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << audit.err();
  const json doc = json::parse(audit.out(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << audit.out();
  EXPECT_EQ(doc["watch_seconds"], 8.0);

  bool shm_seen = false;
  for (const json &f : findings_of(doc, "exec-from-shm")) {
    if (!has_path(f, "/dev/shm/shmbpf-audit-true"))
      continue;
    shm_seen = true;
    EXPECT_EQ(f["source"], "watch");
    EXPECT_EQ(f["evidence"]["mountpoint"], "/dev/shm");
    EXPECT_EQ(f["evidence"]["processes"][0]["comm"], "shmbpf-audit-tr");
  }
  EXPECT_TRUE(shm_seen) << audit.out();

  bool memfd_seen = false;
  for (const json &f : findings_of(doc, "fileless-exec")) {
    if (!has_path(f, "/memfd:shmbpf-audit-payload"))
      continue;
    memfd_seen = true;
    EXPECT_EQ(f["source"], "watch");
    EXPECT_EQ(f["severity"], "high");
    EXPECT_TRUE(f["container"].is_null());
  }
  EXPECT_TRUE(memfd_seen) << audit.out();
}

} // namespace
} // namespace shmbpf::test
