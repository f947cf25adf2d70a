// `shmbpf ls` end to end: real files in /dev/shm, a real holder process,
// the real binary's JSON.
#include "run_cli.hpp"
#include "unit/text_checks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

using shmbpf::test::fields_of;

// (exit status, stdout) of `shmbpf <args>`.
std::pair<int, std::string> run(const std::string &args) {
  auto r = shmbpf::test::run_shmbpf(args);
  return {r.code, r.out};
}

std::string devstr(dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); }

const nlohmann::json *find_path(const nlohmann::json &segs, const std::string &path) {
  for (const auto &s : segs)
    if (s["path"] == path)
      return &s;
  return nullptr;
}

TEST(LsCli, ListsLinkedAndUnlinkedButHeldSegments) {
  std::string linked = "/dev/shm/e2e-ls-" + std::to_string(getpid());
  std::string held = linked + "-held";
  int fd = open(linked.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 20), 0);
  std::string data(8192, 'x');
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  close(fd);

  // A child keeps an fd to a file it has unlinked, like PyTorch's
  // file_descriptor strategy.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    int h = open(held.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (h < 0 || write(h, data.data(), 4096) != 4096 || unlink(held.c_str()) != 0)
      _exit(1);
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
      _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);

  auto [code, out] = run("ls --json");
  auto [pcode, pout] = run("ls --by process --json");
  auto [tcode, tout] = run("ls --by process");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  unlink(linked.c_str());
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_TRUE(j.contains("segments"));

  const auto *s = find_path(j["segments"], linked);
  ASSERT_NE(s, nullptr) << out;
  EXPECT_EQ((*s)["kind"], "tmpfs");
  EXPECT_EQ((*s)["dev"], devstr(st.st_dev));
  EXPECT_EQ((*s)["ino"], st.st_ino);
  EXPECT_EQ((*s)["size"], 1 << 20);
  EXPECT_EQ((*s)["bytes"], st.st_blocks * 512);
  EXPECT_EQ((*s)["state"], "linked");
  EXPECT_EQ((*s)["mount"], "/dev/shm");

  const auto *h = find_path(j["segments"], held);
  ASSERT_NE(h, nullptr) << out;
  EXPECT_EQ((*h)["state"], "unlinked");
  std::vector<int> holders = (*h)["holders"];
  EXPECT_NE(std::find(holders.begin(), holders.end(), child), holders.end());
  // Only its holders know its size: read through the holder's fd.
  EXPECT_EQ((*h)["bytes"], 4096);
  EXPECT_EQ((*h)["size"], 4096);

  // Processes with shared memory only: the holder, not this test process.
  ASSERT_EQ(pcode, 0) << pout;
  bool child_listed = false;
  const auto procs = nlohmann::json::parse(pout);
  for (const auto &p : procs["processes"]) {
    EXPECT_NE(p["pid"], getpid());
    if (p["pid"] == child) {
      child_listed = true;
      EXPECT_EQ(p["segments_held"], 1);
      EXPECT_EQ(p["bytes_held"], 4096);
    }
  }
  EXPECT_TRUE(child_listed) << pout;

  // The table has top's process columns; the holder's row names its user.
  ASSERT_EQ(tcode, 0) << tout;
  std::istringstream table(tout);
  std::string header, line;
  std::getline(table, header);
  EXPECT_EQ(fields_of(header), (std::vector<std::string>{"PID", "USER", "COMM", "CONTAINER", "SEGS",
                                                         "BYTES", "HELD", "CREATE/s", "UNHELD"}))
      << tout;
  bool row_found = false;
  while (std::getline(table, line)) {
    const auto f = fields_of(line);
    if (f.size() == 9 && f[0] == std::to_string(child)) {
      row_found = true;
      const passwd *pw = getpwuid(getuid());
      EXPECT_EQ(f[1], pw ? pw->pw_name : std::to_string(getuid())) << line;
      EXPECT_EQ(f[6], "4.0K") << line; // HELD: the unlinked file's page
    }
  }
  EXPECT_TRUE(row_found) << tout;

  // The filters narrow it down.
  auto [code2, out2] = run("ls --json --match '*e2e-ls-" + std::to_string(getpid()) + "'");
  ASSERT_EQ(code2, 0);
  auto j2 = nlohmann::json::parse(out2);
  EXPECT_EQ(j2["segments"].size(), 0u) << "the file was removed before this run: " << out2;
}

TEST(LsCli, MountsViewShowsDevShm) {
  auto [code, out] = run("ls --by mount --json");
  ASSERT_EQ(code, 0);
  auto j = nlohmann::json::parse(out);
  bool found = false;
  for (const auto &m : j["mounts"])
    if (m["mountpoint"] == "/dev/shm") {
      found = true;
      EXPECT_TRUE(m["size_bytes"].is_number());
      EXPECT_TRUE(m["used_bytes"].is_number());
      EXPECT_TRUE(m["percent"].is_number());
    }
  EXPECT_TRUE(found) << out;
}

TEST(LsCli, RejectsUnknownView) {
  auto [code, out] = run("ls --by bogus");
  EXPECT_NE(code, 0);
}

} // namespace

namespace {

// A file five and more directories down is shared memory like any other:
// a leak once hid there from ls, leaks and top.
TEST(LsCli, ListsFilesDeepInTheTree) {
  std::string dir = "/dev/shm/e2e-deep-" + std::to_string(getpid());
  std::vector<std::string> made;
  std::string path = dir;
  for (const char *part : {"", "/a", "/b", "/c", "/d", "/e", "/f"}) {
    path += part;
    ASSERT_EQ(mkdir(path.c_str(), 0755), 0) << path;
    made.push_back(path);
  }
  const std::string file = path + "/x";
  int fd = open(file.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  std::string data(1 << 16, 'x');
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  close(fd);

  auto r = shmbpf::test::run_shmbpf("ls --json --match '" + dir + "/*'");
  unlink(file.c_str());
  for (auto it = made.rbegin(); it != made.rend(); ++it)
    rmdir(it->c_str());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const nlohmann::json *s = find_path(doc["segments"], file);
  ASSERT_NE(s, nullptr) << r.out;
  EXPECT_EQ((*s)["bytes"], data.size());
  EXPECT_EQ(r.err.find("not every file was scanned"), std::string::npos) << r.err;
}

} // namespace
