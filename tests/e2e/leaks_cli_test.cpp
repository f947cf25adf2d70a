// `shmbpf leaks` end to end: exit status for cron, and growth over a window
// from a real writer that keeps filling a /dev/shm file.
#include "../support.hpp"
#include "run_cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

TEST(LeaksCli, ExitStatusTellsCleanFromLeakingFromError) {
  SHMBPF_REQUIRE_ROOT();
  const std::string path = "/dev/shm/e2e-leaks-" + std::to_string(getpid());
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "leak", 4), 4);
  close(fd);

  const std::string glob = "--match '/dev/shm/e2e-leaks-" + std::to_string(getpid()) + "'";
  // Fresh: younger than the default min-age of 60 s.
  auto young = run_shmbpf("leaks --json " + glob);
  EXPECT_EQ(young.code, 0) << young.out << young.err;
  EXPECT_EQ(young.json()["orphan_count"], 0);
  auto text = run_shmbpf("leaks " + glob);
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("no leaks"), std::string::npos) << text.out;

  auto old = run_shmbpf("leaks --json --min-age 0 " + glob);
  unlink(path.c_str());
  EXPECT_EQ(old.code, 1) << old.out << old.err;
  auto j = old.json();
  ASSERT_EQ(j["orphan_count"], 1);
  EXPECT_EQ(j["orphans"][0]["path"], path);
  EXPECT_EQ(j["orphans"][0]["orphan"], true);
  EXPECT_EQ(j["orphan_bytes"], 4096);
  EXPECT_EQ(j["by_mount"][0]["mount"], "/dev/shm");

  EXPECT_EQ(run_shmbpf("leaks --min-age -3").code, 2);
  EXPECT_EQ(run_shmbpf("leaks --bogus").code, 2);
  EXPECT_EQ(run_shmbpf("leaks --help").code, 0);
}

TEST(LeaksCli, WindowReportsAWriterThatKeepsGrowing) {
  SHMBPF_REQUIRE_ROOT();
  // A tmpfs of its own: other tests running at the same time fill and empty
  // /dev/shm, which must not decide whether this mount grows.
  TestTmpfs tmpfs("shmbpf-e2e-grow");
  ASSERT_EQ(tmpfs.mount("size=64m"), "");
  const std::string &mnt = tmpfs.dir();
  const std::string path = mnt + "/grow";
  // Writes 256 KiB every 200 ms into a file it keeps open, for ~8 s.
  GatedFork writer = fork_gated("e2e-grower", [&] {
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return 1;
    std::string chunk(256 << 10, 'g');
    for (int i = 0; i < 40; ++i) {
      if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size()))
        return 2;
      usleep(200'000);
    }
    return 0;
  });
  char go = 1;
  ASSERT_EQ(write(writer.gate_fd, &go, 1), 1);
  close(writer.gate_fd);
  usleep(300'000);

  auto r = run_shmbpf("leaks --json --window 3 --match '/nothing/matches'");
  kill(writer.pid, SIGKILL);
  waitpid(writer.pid, nullptr, 0);
  unlink(path.c_str());

  EXPECT_EQ(r.code, 1) << r.out << r.err; // growth alone is a finding
  auto j = r.json();
  EXPECT_EQ(j["orphan_count"], 0);
  bool process = false, mount = false;
  for (const auto &g : j["growth"]) {
    if (g["what"] == "process" && g["id"] == std::to_string(writer.pid)) {
      process = true;
      EXPECT_EQ(g["name"], "e2e-grower");
      EXPECT_GT(g["to_bytes"].get<uint64_t>(), g["from_bytes"].get<uint64_t>() + (512u << 10));
      EXPECT_GT(g["bytes_per_s"].get<double>(), 100'000.0);
      EXPECT_GE(g["seconds"].get<double>(), 2.5);
    }
    if (g["what"] == "mount" && g["id"] == mnt)
      mount = true;
  }
  EXPECT_TRUE(process) << r.out;
  EXPECT_TRUE(mount) << r.out;
  // Watched for the whole window.
  EXPECT_EQ(j["window"]["requested_s"], 3.0);
  EXPECT_GE(j["window"]["covered_s"].get<double>(), 2.5);
  EXPECT_GE(j["window"]["samples"].get<int>(), 3);
  EXPECT_EQ(j["window"]["complete"], true);
}

// A process that maps a file larger than its 1 MiB tmpfs and touches every
// page dies of SIGBUS during the window: leaks names the mount, the file
// and the cause, and that alone makes its exit status 1.
// The BPF links and perf events a process holds: what attaching made.
size_t attached_links(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR *d = opendir(dir.c_str());
  if (!d)
    return 0;
  size_t n = 0;
  while (const dirent *e = readdir(d)) {
    char link[64];
    const ssize_t len = readlink((dir + "/" + e->d_name).c_str(), link, sizeof link - 1);
    if (len <= 0)
      continue;
    link[len] = '\0';
    n += std::strcmp(link, "anon_inode:bpf_link") == 0 ||
         std::strcmp(link, "anon_inode:[perf_event]") == 0;
  }
  closedir(d);
  return n;
}

// The pid of the process whose command line holds word, or 0.
pid_t process_with_argument(const std::string &word) {
  DIR *d = opendir("/proc");
  pid_t found = 0;
  while (const dirent *e = d ? readdir(d) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid())
      continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(" " + word) != std::string::npos &&
        cmdline.find("sh -c") == std::string::npos) {
      found = pid;
      break;
    }
  }
  if (d)
    closedir(d);
  return found;
}

// Until the shmbpf whose command line holds marker has attached: its links
// the same for three looks 100 ms apart. At most limit.
void wait_for_attach(const std::string &marker, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  size_t last = 0;
  int same = 0;
  while (std::chrono::steady_clock::now() < end && same < 3) {
    const pid_t pid = process_with_argument(marker);
    const size_t n = pid ? attached_links(pid) : 0;
    same = n > 0 && n == last ? same + 1 : 0;
    last = n;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

TEST(LeaksCli, WindowReportsTheMountASigbusHit) {
  SHMBPF_REQUIRE_ROOT();
  TestTmpfs tmpfs("shmbpf-e2e-sigbus");
  ASSERT_EQ(tmpfs.mount("size=1m"), "");
  const std::string &mnt = tmpfs.dir();
  const std::string path = mnt + "/big";
  // SIGBUS at 1 MiB.
  GatedFork toucher = fork_gated("e2e-toucher", [&] { return map_and_touch(path, 4 << 20); });

  // The fault comes once leaks has attached its programs (its links stop
  // growing in number), whatever the machine's load, well inside the window.
  const std::string marker = "/nothing/matches-" + std::to_string(getpid());
  std::thread go([&] {
    wait_for_attach(marker, std::chrono::seconds(8));
    char c = 1;
    if (write(toucher.gate_fd, &c, 1) != 1)
      kill(toucher.pid, SIGKILL);
    close(toucher.gate_fd);
  });
  auto r = run_shmbpf("leaks --json --window 12 --match '" + marker + "'");
  go.join();
  int status = 0;
  waitpid(toucher.pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << status;

  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = r.json();
  ASSERT_TRUE(j["bus_errors"].is_array()) << r.out << r.err;
  // Tests running alongside fault too: this one's mount is its own.
  nlohmann::json m;
  for (const auto &b : j["bus_errors"])
    if (b["mountpoint"] == mnt)
      m = b;
  ASSERT_FALSE(m.is_null()) << r.out;
  EXPECT_TRUE(m["container"].is_null()) << m;
  EXPECT_EQ(m["mountpoint"], mnt);
  EXPECT_EQ(m["count"], 1);
  EXPECT_EQ(m["last"]["pid"], toucher.pid);
  EXPECT_EQ(m["last"]["tid"], toucher.pid); // its only thread
  EXPECT_EQ(m["last"]["comm"], "e2e-toucher");
  EXPECT_EQ(m["last"]["path"], path);
  EXPECT_EQ(m["last"]["offset"], 1 << 20);
  EXPECT_EQ(m["last"]["file_size"], 4 << 20);
  EXPECT_EQ(m["last"]["mount_size"], 1 << 20);
  EXPECT_EQ(m["last"]["cause"], "mount-full");
}

} // namespace
} // namespace shmbpf::test
