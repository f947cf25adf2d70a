// `--hooks light` end to end: the real binary attaches no program to any
// syscall tracepoint (bpftool says which hooks each process has), reports a
// child's files from inside the filesystem, and `top` in the light set
// shows the same segments, holders and orphans as in the full set once
// the rescans have found what the light hooks do not see (an open of an
// existing file).
#include "background.hpp"
#include "reap_support.hpp"
#include "run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kLoadTimeout = 30s;

// The hooks bpftool lists for a process's perf-event and raw tracepoint
// attachments ("sys_exit_openat", "inode_set_ctime_to_ts").
std::vector<std::string> attached_hooks(pid_t pid) {
  std::vector<std::string> out;
  FILE *p = popen("bpftool perf show 2>&1", "r");
  if (!p)
    return out;
  char line[512];
  const std::string prefix = "pid " + std::to_string(pid) + " ";
  while (fgets(line, sizeof line, p)) {
    std::string l(line);
    if (!l.starts_with(prefix))
      continue;
    while (!l.empty() && (l.back() == '\n' || l.back() == ' '))
      l.pop_back();
    out.push_back(l.substr(l.find_last_of(' ') + 1));
  }
  pclose(p);
  return out;
}

bool has(const std::vector<std::string> &v, const std::string &x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// JSON mode prints nothing of its own: make memfds until one shows up.
::testing::AssertionResult wait_loaded(ShmbpfProcess &p) {
  const std::string marker = "e2e-lready-" + std::to_string(getpid());
  for (auto deadline = Clock::now() + kLoadTimeout; Clock::now() < deadline;) {
    int fd = memfd_create(marker.c_str(), MFD_CLOEXEC);
    if (fd >= 0)
      close(fd);
    if (p.wait_output(marker, 100ms))
      return ::testing::AssertionSuccess();
    if (p.exited())
      break;
  }
  return ::testing::AssertionFailure() << "shmbpf trace showed no memfd; stderr: " << p.err();
}

TEST(TraceLight, AttachesNoSyscallHookAndReportsAChildsFiles) {
  SHMBPF_REQUIRE_ROOT();
  ShmbpfProcess light({"trace", "--hooks", "light", "--json", "--stats"});
  ShmbpfProcess full({"trace", "--hooks", "full", "--json"});
  ASSERT_TRUE(wait_loaded(light));
  ASSERT_TRUE(wait_loaded(full));

  const auto lh = attached_hooks(light.pid());
  const auto fh = attached_hooks(full.pid());
  for (const std::string &h : lh)
    EXPECT_FALSE(h.starts_with("sys_enter_") || h.starts_with("sys_exit_")) << h;
  for (const char *h : {"inode_set_ctime_to_ts", "ctime_ns_xchg", "ctime_xchg_skip",
                        "sched_process_exit", "signal_generate"})
    EXPECT_TRUE(has(lh, h)) << h;
  // What the check would see if it were wrong: the full set's.
  EXPECT_TRUE(has(fh, "sys_exit_openat"));
  EXPECT_FALSE(has(fh, "inode_set_ctime_to_ts"));

  const std::string path = "/dev/shm/shmbpf-e2e-tlight-" + std::to_string(getpid());
  struct Facts {
    uint64_t ino = 0, memfd_ino = 0;
  };
  Shared<Facts> facts;
  GatedFork child = fork_gated("e2e-tlight", [&] {
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0)
      return 1;
    facts->ino = st.st_ino;
    std::string data(65536, 't');
    if (ftruncate(fd, 65536) != 0 || pwrite(fd, data.data(), data.size(), 0) != 65536)
      return 2;
    if (unlink(path.c_str()) != 0)
      return 3;
    close(fd);
    int m = memfd_create("e2e-tlight", 0);
    if (m < 0 || fstat(m, &st) != 0 || ftruncate(m, 4096) != 0)
      return 4;
    facts->memfd_ino = st.st_ino;
    return 0;
  });
  ASSERT_EQ(write(child.gate_fd, "x", 1), 1);
  close(child.gate_fd);
  int st = 0;
  ASSERT_EQ(waitpid(child.pid, &st, 0), child.pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child: status " << st;

  // Every event of the child's, by name: its exit is the last.
  const std::string pid_field = "\"pid\":" + std::to_string(child.pid) + ",";
  ASSERT_TRUE(light.wait_output(
      [&](const std::string &o) {
        return o.find("\"event\":\"exit\"", o.find(pid_field)) != std::string::npos;
      },
      10s))
      << light.out();
  std::map<std::string, std::vector<json>> by_event;
  for (const std::string &line : lines_of(light.out())) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j["pid"] == child.pid)
      by_event[j["event"].get<std::string>()].push_back(j);
  }
  const std::string all = light.out();
  ASSERT_EQ(by_event["create"].size(), 1u) << all;
  const json &cr = by_event["create"][0];
  EXPECT_EQ(cr["ino"], facts->ino);
  EXPECT_EQ(cr["path"], path);
  EXPECT_EQ(cr["comm"], "e2e-tlight");
  EXPECT_EQ(cr["path_from_call"], true);
  ASSERT_EQ(by_event["resize"].size(), 2u) << all; // the file's, the memfd's
  EXPECT_EQ(by_event["resize"][0]["ino"], facts->ino);
  EXPECT_EQ(by_event["resize"][0]["size"], 65536);
  EXPECT_EQ(by_event["resize"][0]["path"], path);
  // Sent as the inode alone when it followed the create on its CPU.
  EXPECT_TRUE(by_event["resize"][0]["path_from_model"].is_boolean()) << all;
  EXPECT_EQ(by_event["resize"][1]["path_from_model"], false); // a memfd names itself
  EXPECT_EQ(by_event["resize"][1]["ino"], facts->memfd_ino);
  EXPECT_EQ(by_event["resize"][1]["size"], 4096);
  ASSERT_EQ(by_event["unlink"].size(), 1u) << all;
  EXPECT_EQ(by_event["unlink"][0]["ino"], facts->ino);
  ASSERT_FALSE(by_event["free"].empty()) << all;
  uint64_t freed = 0;
  for (const json &f : by_event["free"])
    if (f["ino"] == facts->ino)
      freed += f["bytes"].get<uint64_t>();
  EXPECT_EQ(freed, 65536u) << all;
  ASSERT_EQ(by_event["memfd_create"].size(), 1u) << all;
  EXPECT_EQ(by_event["memfd_create"][0]["ino"], facts->memfd_ino);
  EXPECT_EQ(by_event["memfd_create"][0]["name"], "memfd:e2e-tlight");
  EXPECT_EQ(by_event.count("open"), 0u) << all;

  // --stats names the set and its hooks.
  light.signal(SIGINT);
  expect_exit_code(light.wait(10s), 0);
  EXPECT_NE(light.err().find("shmbpf: light hooks: "), std::string::npos) << light.err();
  EXPECT_EQ(light.err().find("syscalls/"), std::string::npos) << light.err();
}

// A file of 64 KiB with its pages allocated; its fd stays open.
bool make_file(const std::string &path) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return false;
  std::string data(65536, 'l');
  return pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size());
}

// What a top frame says of the segments under prefix: path -> the model's
// facts that both sets must agree on.
std::map<std::string, json> our_segments(const std::string &out, const std::string &prefix) {
  std::map<std::string, json> seen;
  const auto lines = lines_of(out);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const json frame = json::parse(*it, nullptr, false);
    if (!frame.is_object() || !frame.contains("rows"))
      continue; // a line still being written
    for (const json &s : frame["rows"]) {
      const std::string path = s.value("path", "");
      if (!path.starts_with(prefix))
        continue;
      std::vector<uint32_t> holders = s["holders"].get<std::vector<uint32_t>>();
      std::sort(holders.begin(), holders.end());
      seen[path] = {{"size", s["size"]},
                    {"bytes", s["bytes"]},
                    {"state", s["state"]},
                    {"orphan", s["orphan"]},
                    {"holders", holders},
                    {"creator", s["creator"].is_object() ? s["creator"]["pid"] : json()}};
    }
    break;
  }
  return seen;
}

TEST(TopLight, SameSegmentsHoldersAndOrphansAsFullAfterARescan) {
  SHMBPF_REQUIRE_ROOT();
  const std::vector<std::string> args = {"top", "-b", "--json", "--by", "segments", "-d", "0.5"};
  auto with = [&](const char *set) {
    auto a = args;
    a.insert(a.end(), {"--hooks", set});
    return a;
  };
  ShmbpfProcess light(with("light")), full(with("full"));
  for (ShmbpfProcess *p : {&light, &full})
    ASSERT_TRUE(p->wait_output("\"rows\"", kLoadTimeout)) << p->err();

  const std::string prefix = "/dev/shm/shmbpf-e2e-toplight-" + std::to_string(getpid()) + "-";
  struct Cleanup {
    std::string prefix;
    ~Cleanup() {
      for (const char *n : {"1", "2", "3", "4"})
        unlink((prefix + n).c_str());
    }
  } cleanup{prefix};
  // A creates two files and holds them; B creates one and opens one of A's
  // (an open of an existing file: no event in the light set, B's holdings
  // are rescanned each second since it holds a file); C creates one and
  // exits, leaving an orphan.
  auto named = [](const char *comm, std::function<bool()> fn) {
    return [comm, fn] {
      prctl(PR_SET_NAME, comm);
      return fn();
    };
  };
  Holder a(
      named("e2e-lholder", [&] { return make_file(prefix + "1") && make_file(prefix + "2"); }));
  ASSERT_TRUE(a.ok());
  Holder b(named("e2e-lopener", [&] {
    return make_file(prefix + "4") && open((prefix + "1").c_str(), O_RDWR) >= 0;
  }));
  ASSERT_TRUE(b.ok());
  Holder c(named("e2e-lorphan", [&] { return make_file(prefix + "3"); }));
  ASSERT_TRUE(c.ok());
  c.stop();

  std::vector<uint32_t> ab = {static_cast<uint32_t>(a.pid()), static_cast<uint32_t>(b.pid())};
  std::sort(ab.begin(), ab.end());
  auto as_full_says = [&](const std::map<std::string, json> &m) {
    auto at = [&](const char *n) { return m.count(prefix + n) ? m.at(prefix + n) : json(); };
    return m.size() == 4 && at("1")["holders"] == json(ab) &&
           at("4")["holders"] == json({b.pid()}) && at("4")["creator"] == b.pid() &&
           at("2")["holders"] == json({a.pid()}) && at("3")["holders"].empty() &&
           at("3")["orphan"] == true && at("1")["creator"] == a.pid() && at("3")["bytes"] == 65536;
  };
  std::map<std::string, json> l, f;
  for (auto deadline = Clock::now() + 30s; Clock::now() < deadline;) {
    f = our_segments(full.out(), prefix);
    l = our_segments(light.out(), prefix);
    if (as_full_says(f) && l == f)
      break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_TRUE(as_full_says(f)) << json(f).dump();
  EXPECT_EQ(json(l).dump(), json(f).dump());

  for (ShmbpfProcess *p : {&light, &full}) {
    p->signal(SIGTERM);
    expect_exit_code(p->wait(10s), 0);
  }
}

} // namespace
} // namespace shmbpf::test
