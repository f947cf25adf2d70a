// `shmbpf leaks --server SOCK --window S` end to end: a real daemon (its
// socket the test's own) samples the model while a child keeps filling a
// file on a tmpfs of the test's own; the client reports that growth at
// once from the daemon's history, says when the daemon has not run for the
// whole window, and a window longer than the history is refused (400,
// status 2, one line).
#include "background.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

namespace shmbpf::test {
namespace {

using nlohmann::json;

// A tmpfs of the test's own (other tests fill and empty /dev/shm) and a
// directory for the daemon's socket; both gone at the end.
struct Scratch {
  std::string mnt, sock_dir;
  Scratch() {
    mnt = "/tmp/shmbpf-e2e-sgrow-" + std::to_string(getpid());
    char tmpl[] = "/tmp/shmbpf-e2e-gsock-XXXXXX";
    sock_dir = mkdtemp(tmpl);
  }
  ~Scratch() {
    umount2(mnt.c_str(), MNT_DETACH);
    rmdir(mnt.c_str());
    std::filesystem::remove_all(sock_dir);
  }
  std::string sock() const { return sock_dir + "/shmbpf.sock"; }
};

// The finding for (what, id) in a report's growth, or null.
json finding(const json &report, const std::string &what, const std::string &id) {
  for (const auto &g : report["growth"])
    if (g["what"] == what && g["id"] == id)
      return g;
  return nullptr;
}

TEST(ServeGrowth, LeaksWindowFromTheDaemonsHistory) {
  SHMBPF_REQUIRE_ROOT();
  Scratch scratch;
  ASSERT_EQ(mkdir(scratch.mnt.c_str(), 0700), 0) << strerror(errno);
  ASSERT_EQ(mount("tmpfs", scratch.mnt.c_str(), "tmpfs", 0, "size=64m"), 0) << strerror(errno);
  const std::string sock = scratch.sock();
  const int port = free_port();
  const auto started = Clock::now();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);

  // Writes 128 KiB every 250 ms into a file it keeps open, for up to 40 s.
  const std::string path = scratch.mnt + "/grow";
  GatedFork writer = fork_gated("e2e-sgrower", [&] {
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return 1;
    std::string chunk(128 << 10, 'g');
    for (int i = 0; i < 160; ++i) {
      if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size()))
        return 2;
      usleep(250'000);
    }
    return 0;
  });
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{writer.pid};
  ASSERT_EQ(write(writer.gate_fd, "x", 1), 1);
  close(writer.gate_fd);
  // A process is in a sample once the daemon knows it holds bytes (its
  // file's size comes from a re-stat): the window starts after that.
  const auto holds_bytes = [&] {
    auto ls = run_shmbpf("ls --server " + sock + " --by process --json");
    const json procs = ls.json();
    for (const auto &p : procs["processes"])
      if (p["pid"] == writer.pid && p["bytes_held"].get<uint64_t>() > 0)
        return true;
    return false;
  };
  const auto deadline = Clock::now() + 20s;
  while (!holds_bytes() && Clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  // The daemon samples about once a second: five or more of a steady rise.
  // A window's first sample must already have the writer; on a loaded
  // machine (sanitizers, tests alongside) samples come further apart, and
  // the window reaches back further: asked again until it starts after.
  std::this_thread::sleep_for(5500ms);
  CliResult r;
  json j, proc;
  for (const auto until = Clock::now() + 15s;;) {
    // Answered at once, from the samples kept: no 4 s of watching.
    const auto asked = Clock::now();
    r = run_shmbpf("leaks --server " + sock + " --window 4 --json --match '/nothing/matches'");
    EXPECT_LT(Clock::now() - asked, 3s);
    j = r.json();
    proc = finding(j, "process", std::to_string(writer.pid));
    if (!proc.is_null() || Clock::now() > until)
      break;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(r.code, 1) << r.out << r.err; // growth alone is a finding
  EXPECT_EQ(j["orphan_count"], 0);
  ASSERT_FALSE(proc.is_null()) << r.out;
  EXPECT_EQ(proc["name"], "e2e-sgrower");
  EXPECT_GE(proc["to_bytes"].get<uint64_t>(), proc["from_bytes"].get<uint64_t>() + (1u << 20));
  EXPECT_GT(proc["bytes_per_s"].get<double>(), 200'000.0);
  EXPECT_FALSE(finding(j, "mount", scratch.mnt).is_null()) << r.out;
  EXPECT_EQ(j["window"]["requested_s"], 4.0);
  const double covered = j["window"]["covered_s"].get<double>();
  EXPECT_GE(covered, 4.0);
  // Growth is judged over a subject in every sample of the window: the
  // writer's spans all of it, however far apart the samples came.
  EXPECT_NEAR(proc["seconds"].get<double>(), covered, 0.01);
  // A growth finding needs two rises, so three samples at least. The daemon
  // takes one at most every 0.8 s (a second, due 200 ms early), and less
  // often when a sample costs more than its share of a CPU (sanitizers,
  // tests alongside): no tighter floor holds on every machine.
  EXPECT_GE(j["window"]["samples"].get<int>(), 3);
  EXPECT_LE(j["window"]["samples"].get<double>(), covered / 0.8 + 1.0);
  EXPECT_EQ(j["window"]["complete"], true);
  // The same keys as `leaks --json` of a scan, plus the window.
  auto scan = run_shmbpf("leaks --json --match '/nothing/matches'");
  json sj = scan.json();
  sj["window"] = nullptr;
  sj["bus_errors"] = nullptr;
  for (auto it = sj.begin(); it != sj.end(); ++it)
    EXPECT_TRUE(j.contains(it.key())) << it.key();
  EXPECT_EQ(j.size(), sj.size()) << r.out;

  // Longer than the daemon has run: what it has, and it says so. The mount
  // was there from the start (the writer was not: it has no finding).
  auto partial = run_shmbpf("leaks --server " + sock + " --window 600 --json --match '/nothing'");
  EXPECT_EQ(partial.code, 1) << partial.out << partial.err;
  json pj = partial.json();
  EXPECT_EQ(pj["window"]["complete"], false);
  EXPECT_EQ(pj["window"]["requested_s"], 600.0);
  // All the daemon's samples: at least what the 4 s window covered, at most
  // the time since the daemon started (samples come further apart under
  // sanitizers, so nothing finer holds on every machine).
  EXPECT_GT(pj["window"]["covered_s"].get<double>(), covered);
  EXPECT_GT(pj["window"]["samples"].get<int>(), j["window"]["samples"].get<int>());
  EXPECT_LT(pj["window"]["covered_s"].get<double>(),
            std::chrono::duration<double>(Clock::now() - started).count());
  EXPECT_FALSE(finding(pj, "mount", scratch.mnt).is_null()) << partial.out;
  EXPECT_TRUE(finding(pj, "process", std::to_string(writer.pid)).is_null()) << partial.out;
  auto text = run_shmbpf("leaks --server " + sock + " --window 600 --match '/nothing'");
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("growth: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("mount " + scratch.mnt + ": "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("note: growth judged over "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not the 600 s asked for"), std::string::npos) << text.out;

  // Longer than the daemon keeps: refused, one line, status 2.
  auto refused = run_shmbpf("leaks --server " + sock + " --window 901 --json");
  EXPECT_EQ(refused.code, 2) << refused.out << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
  EXPECT_EQ(refused.err, "shmbpf: shmbpf serve at " + sock +
                             ": refused the request: window must be at most 900 seconds: the "
                             "daemon keeps usage samples for that long, not 901\n");

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

// A full 1 MiB tmpfs under a running daemon: a writer's write fails with
// ENOSPC, then a process maps a file larger than the mount and dies of
// SIGBUS touching it. `leaks --server --window` names the mount, the file
// and the cause; /metrics counts both on the mount's series.
TEST(ServeGrowth, AFullMountsSigbusAndNoSpaceInLeaksAndMetrics) {
  SHMBPF_REQUIRE_ROOT();
  Scratch scratch;
  ASSERT_EQ(mkdir(scratch.mnt.c_str(), 0700), 0) << strerror(errno);
  ASSERT_EQ(mount("tmpfs", scratch.mnt.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  const std::string sock = scratch.sock();
  const int port = free_port();
  // Writes without space are seen by the full hook set only.
  ShmbpfProcess serve({"serve", "--no-state", "--hooks", "full", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);

  const std::string big = scratch.mnt + "/big", log = scratch.mnt + "/log";
  GatedFork toucher = fork_gated("e2e-sfull", [&] {
    int w = open(log.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (w < 0)
      return 1;
    std::string chunk(64 << 10, 'w');
    while (write(w, chunk.data(), chunk.size()) > 0) {
    }
    if (errno != ENOSPC)
      return 2;
    if (ftruncate(w, 0) != 0) // room for the mapping's first pages again
      return 6;
    return 10 + map_and_touch(big, 4 << 20); // SIGBUS at 1 MiB
  });
  ASSERT_EQ(write(toucher.gate_fd, "x", 1), 1);
  close(toucher.gate_fd);
  int status = 0;
  ASSERT_EQ(waitpid(toucher.pid, &status, 0), toucher.pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << status;

  // The daemon applies events as they come: poll briefly for both.
  const std::string at = "mountpoint=\"" + scratch.mnt + "\"";
  std::optional<double> sigbus, nospace;
  for (int i = 0; i < 50 && (!sigbus || !nospace); ++i) {
    if (auto m = get(port, "/metrics"); m && m->status == 200) {
      sigbus = metric(m->body, "shmbpf_sigbus_total", {at, "container_id=\"\""});
      nospace = metric(m->body, "shmbpf_nospace_total", {at, "container_id=\"\""});
    }
    if (!sigbus || !nospace)
      std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(sigbus, 1.0);
  EXPECT_EQ(nospace, 1.0);

  auto r = run_shmbpf("leaks --server " + sock + " --window 60 --json --match '/nothing'");
  EXPECT_EQ(r.code, 1) << r.out << r.err; // a fault alone is a finding
  json j = r.json();
  // Tests running alongside fault too: this one's mount is its own.
  json m;
  for (const auto &b : j["bus_errors"])
    if (b["mountpoint"] == scratch.mnt)
      m = b;
  ASSERT_FALSE(m.is_null()) << r.out;
  EXPECT_EQ(m["mountpoint"], scratch.mnt);
  EXPECT_EQ(m["count"], 1);
  EXPECT_EQ(m["last"]["pid"], toucher.pid);
  EXPECT_EQ(m["last"]["comm"], "e2e-sfull");
  EXPECT_EQ(m["last"]["path"], big);
  EXPECT_EQ(m["last"]["cause"], "mount-full");
  EXPECT_EQ(m["last"]["mount_size"], 1 << 20);

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

} // namespace
} // namespace shmbpf::test
