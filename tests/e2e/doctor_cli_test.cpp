// End-to-end tests of `shmbpf doctor`: the real binary, as root, as nobody
// and with a fake tracefs; the exit status and first line say whether
// shmbpf can run, the JSON says the same at length.
#include "background.hpp"
#include "run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <grp.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

void drop_to_nobody() {
  const uid_t nobody = 65534;
  if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0)
    _exit(126);
}

TEST(DoctorCli, SaysShmbpfCanRunHere) {
  SHMBPF_REQUIRE_ROOT();
  const CliResult r = run_shmbpf("doctor");
  EXPECT_EQ(r.code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines[0].starts_with("shmbpf can run here")) << r.out;
  for (const char *part : {"CHECK", "BTF", "privileges", "tracefs", "programs", "HOOK",
                           "syscalls/sys_exit_openat", "MOUNTPOINT", "/dev/shm"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " in\n" << r.out;
}

TEST(DoctorCli, JsonCarriesEveryPart) {
  SHMBPF_REQUIRE_ROOT();
  const CliResult r = run_shmbpf("doctor --json");
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = r.json();
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["can_run"], true);
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_FALSE(j["kernel"]["release"].get<std::string>().empty());
  std::set<std::string> checks;
  for (const auto &c : j["checks"]) {
    checks.insert(c["check"].get<std::string>());
    EXPECT_NE(c["verdict"], "fail") << c.dump();
  }
  for (const char *name :
       {"kernel", "BTF", "privileges", "tracefs", "programs", "tmpfs mounts", "cgroup2"})
    EXPECT_TRUE(checks.count(name)) << name;
  ASSERT_FALSE(j["hooks"].empty());
  bool openat = false;
  for (const auto &h : j["hooks"]) {
    EXPECT_EQ(h["attached"].get<bool>(), h["off"].is_null()) << h.dump();
    EXPECT_EQ(h["attached"].get<bool>(), h["program"].is_string()) << h.dump();
    openat = openat || h["hook"] == "syscalls/sys_exit_openat";
  }
  EXPECT_TRUE(openat);
  EXPECT_GT(j["ring_buffer_bytes"].get<uint64_t>(), 0u);
  bool dev_shm = false;
  for (const auto &m : j["mounts"])
    dev_shm = dev_shm || m["mountpoint"] == "/dev/shm";
  EXPECT_TRUE(dev_shm) << j["mounts"].dump();
}

TEST(DoctorCli, RingBufferSizeIsTheOneTried) {
  SHMBPF_REQUIRE_ROOT();
  const CliResult r = run_shmbpf("doctor --json --ring-buffer-size 65536");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.json()["ring_buffer_bytes"], 65536);
  const CliResult bad = run_shmbpf("doctor --ring-buffer-size 5000");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("power of two"), std::string::npos) << bad.err;
}

TEST(DoctorCli, NotRootCannotRunAndSaysWhy) {
  SHMBPF_REQUIRE_ROOT();
  ShmbpfProcess text({"doctor"}, drop_to_nobody);
  expect_exit_code(text.wait(30s), 2);
  const auto lines = lines_of(text.out());
  ASSERT_FALSE(lines.empty()) << text.err();
  EXPECT_TRUE(lines[0].starts_with("shmbpf cannot run here: privileges: ")) << text.out();
  EXPECT_NE(lines[0].find("sudo shmbpf doctor"), std::string::npos) << lines[0];

  ShmbpfProcess js({"doctor", "--json"}, drop_to_nobody);
  expect_exit_code(js.wait(30s), 2);
  const auto j = nlohmann::json::parse(js.out(), nullptr, false);
  ASSERT_TRUE(j.is_object()) << js.out();
  EXPECT_EQ(j["can_run"], false);
  EXPECT_TRUE(j["reason"].get<std::string>().starts_with("privileges: ")) << j["reason"];
  EXPECT_TRUE(j["hooks"].empty());
  // What needs no privilege is still told.
  EXPECT_FALSE(j["kernel"]["release"].get<std::string>().empty());
}

TEST(DoctorCli, AFakeTracefsIsTheReason) {
  SHMBPF_REQUIRE_ROOT();
  ShmbpfProcess p({"doctor"}, [] { tracefs_setup_in_own_namespace(true); });
  expect_exit_code(p.wait(30s), 2);
  const auto lines = lines_of(p.out());
  ASSERT_FALSE(lines.empty()) << p.err();
  EXPECT_TRUE(lines[0].starts_with("shmbpf cannot run here: tracefs: ")) << p.out();
  EXPECT_NE(lines[0].find("is not tracefs"), std::string::npos) << lines[0];
}

} // namespace
} // namespace shmbpf::test
