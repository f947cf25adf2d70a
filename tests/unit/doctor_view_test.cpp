// doctor's report as text and JSON, from reports made up here: the verdict
// line, the hook table, the fallbacks, and names that need escaping.
#include "views/doctor_view.hpp"
#include "views/escape.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using Verdict = DoctorCheck::Verdict;

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

DoctorReport runnable() {
  DoctorReport r;
  r.release = "6.1.0-28-amd64";
  r.machine = "x86_64";
  r.checks = {{"kernel", Verdict::ok, "Linux 6.1.0-28-amd64 (x86_64)"},
              {"programs", Verdict::warn, "20 of 21 hooks attached (build compat)"}};
  r.hooks = {{"syscalls/sys_exit_openat", "tracepoint__syscalls__sys_exit_openat_compat",
              Build::compat, "", "create, open", "files created or opened with openat(2) not seen"},
             {"mm_filemap_delete_from_page_cache", "", Build::fast, "no such tracepoint", "free",
              "freed bytes of unlinked files come from rescans"}};
  r.fallbacks = {{"bpf_rdonly_cast (v6.2)", "reads through bpf_probe_read_kernel", false}};
  r.ring_buffer_bytes = 8 << 20;
  r.name_capacity = 65536;
  r.tmpfs_files = 12;
  r.cgroup2 = "/sys/fs/cgroup";
  r.mount_namespaces = 1;
  r.mounts = {{7, 4026531841, "/dev/shm", 25, 64 << 20, 1 << 20, true}};
  return r;
}

TEST(DoctorView, RunnableSaysSoFirstWithItsWarnings) {
  const std::string text = doctor_text(runnable());
  const auto l = lines(text);
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(l[0], "shmbpf can run here (1 warning).");
  // Each hook on a line of its own: the program that serves it, or why it
  // is off and what that costs.
  bool on = false, off = false;
  for (const std::string &line : l) {
    if (line.starts_with("syscalls/sys_exit_openat"))
      on = line.find(" on ") != std::string::npos &&
           line.find("tracepoint__syscalls__sys_exit_openat_compat") != std::string::npos;
    if (line.starts_with("mm_filemap_delete_from_page_cache"))
      off = line.find(" OFF ") != std::string::npos &&
            line.find("no such tracepoint: freed bytes of unlinked files come from rescans") !=
                std::string::npos;
  }
  EXPECT_TRUE(on) << text;
  EXPECT_TRUE(off) << text;
  EXPECT_NE(text.find("kernel 6.1.0-28-amd64 lacks"), std::string::npos) << text;
  EXPECT_NE(text.find("bpf_rdonly_cast (v6.2): reads through bpf_probe_read_kernel"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("64M"), std::string::npos) << text;
}

TEST(DoctorView, AFailureIsTheFirstLineAndTheReason) {
  DoctorReport r = runnable();
  r.checks.insert(r.checks.begin() + 1,
                  {"privileges", Verdict::fail, "loading BPF programs needs root"});
  r.checks.push_back({"tracefs", Verdict::fail, "a second failure"});
  r.hooks.clear();
  EXPECT_EQ(lines(doctor_text(r))[0],
            "shmbpf cannot run here: privileges: loading BPF programs needs root");
  const auto j = nlohmann::json::parse(doctor_json(r));
  EXPECT_EQ(j["can_run"], false);
  EXPECT_EQ(j["reason"], "privileges: loading BPF programs needs root");
  EXPECT_EQ(j["checks"][1]["verdict"], "fail");
  EXPECT_TRUE(j["hooks"].empty());
}

TEST(DoctorView, JsonHasEveryPart) {
  const auto j = nlohmann::json::parse(doctor_json(runnable()));
  EXPECT_EQ(j["can_run"], true);
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["kernel"]["release"], "6.1.0-28-amd64");
  EXPECT_EQ(j["checks"][1]["verdict"], "warn");
  const auto &on = j["hooks"][0];
  EXPECT_EQ(on["attached"], true);
  EXPECT_EQ(on["build"], "compat");
  EXPECT_TRUE(on["off"].is_null());
  EXPECT_TRUE(on["lost"].is_null());
  const auto &off = j["hooks"][1];
  EXPECT_EQ(off["attached"], false);
  EXPECT_TRUE(off["program"].is_null());
  EXPECT_TRUE(off["build"].is_null());
  EXPECT_EQ(off["off"], "no such tracepoint");
  EXPECT_EQ(off["lost"], "freed bytes of unlinked files come from rescans");
  EXPECT_EQ(j["fallbacks"][0]["lossy"], false);
  EXPECT_EQ(j["ring_buffer_bytes"], 8 << 20);
  EXPECT_EQ(j["cgroup2"], "/sys/fs/cgroup");
  EXPECT_EQ(j["mounts"][0]["size_bytes"], 64 << 20);
  EXPECT_EQ(j["mounts"][0]["dev"], "0:25");
}

TEST(DoctorView, NamesThatNeedEscapingStayOnTheirLine) {
  DoctorReport r = runnable();
  r.mounts[0].mountpoint = "/mnt/a\nb";
  r.mounts[0].size_limit = 0;
  r.cgroup2.reset();
  const std::string text = doctor_text(r);
  EXPECT_EQ(text.find("/mnt/a\n"), std::string::npos) << text;
  EXPECT_NE(text.find(escape_text("/mnt/a\nb")), std::string::npos) << text;
  const auto j = nlohmann::json::parse(doctor_json(r));
  EXPECT_EQ(unescape_text(j["mounts"][0]["mountpoint"].get<std::string>()), "/mnt/a\nb");
  EXPECT_TRUE(j["mounts"][0]["size_bytes"].is_null());
  EXPECT_TRUE(j["cgroup2"].is_null());
}

} // namespace
} // namespace shmbpf
