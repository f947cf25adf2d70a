// reap, attacked by an unprivileged user: nobody makes a user and mount
// namespace of their own (unshare -Urm) and binds a root-only directory of a
// tmpfs the host mounts elsewhere at /dev/shm there. Root's reap must not
// take that directory's files for shared memory nor remove them, and no
// listing may show them as shared memory.
#include "attack/attacker.hpp"
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A tmpfs the host mounts at a path of the test's own (as /run is), with a
// directory only root may enter and an old file of root's in it.
struct HostTmpfs {
  fs::path mnt;
  fs::path secret;
  bool ok = false;
  HostTmpfs() : mnt("/tmp/shmbpf-attack-run-" + std::to_string(getpid())) {
    fs::create_directories(mnt);
    ::chmod(mnt.c_str(), 0755);
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m,mode=0755") != 0)
      return;
    fs::create_directory(mnt / "root-only");
    ::chmod((mnt / "root-only").c_str(), 0700);
    secret = mnt / "root-only" / "pid-of-a-daemon";
    std::ofstream(secret) << "1234\n";
    ok = true;
  }
  ~HostTmpfs() {
    ::umount2(mnt.c_str(), MNT_DETACH);
    ::rmdir(mnt.c_str());
  }
};

// Whether pid's mount namespace shows a mount at /dev/shm from root inside
// its filesystem.
bool binds(pid_t pid, const std::string &root) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/mountinfo");
  for (std::string line; std::getline(in, line);)
    if (line.find(" " + root + " /dev/shm ") != std::string::npos)
      return true;
  return false;
}

TEST(ForeignMounts, ReapLeavesWhatAnotherUsersNamespaceNamesDevShm) {
  SHMBPF_REQUIRE_ROOT();
  HostTmpfs host;
  ASSERT_TRUE(host.ok) << "mount tmpfs";
  // nobody's namespace, living while the test runs.
  ChildProcess attacker(
      "/usr/bin/setpriv",
      {"--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-Urm", "sh", "-c",
       "mount --bind " + (host.mnt / "root-only").string() + " /dev/shm && exec sleep 120"});
  bool bound = false;
  for (int i = 0; i < 100 && !bound && !attacker.exited(); ++i) {
    bound = binds(attacker.pid(), "/root-only");
    if (!bound)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(bound) << attacker.err();

  const CliResult leaks = run_shmbpf("leaks --min-age 0 --json");
  ASSERT_LE(leaks.code, 1) << leaks.err;
  // Each parsed once and kept: a range-for over a member of a temporary
  // would read freed memory.
  const json leaks_json = leaks.json();
  for (const json &o : leaks_json["orphans"])
    EXPECT_EQ(o["path"].get<std::string>().find("pid-of-a-daemon"), std::string::npos) << o;
  const CliResult ls = run_shmbpf("ls --json");
  ASSERT_EQ(ls.code, 0) << ls.err;
  const json ls_json = ls.json();
  for (const json &s : ls_json["segments"])
    if (s["path"].get<std::string>().ends_with("/pid-of-a-daemon")) {
      EXPECT_EQ(s["path"], host.secret.string()) << "named by the host's mount: " << s;
      EXPECT_FALSE(s["orphan"].get<bool>()) << s;
    }

  const CliResult reap = run_shmbpf("reap --yes --min-age 0 --json");
  EXPECT_LE(reap.code, 1) << reap.err;
  EXPECT_TRUE(fs::exists(host.secret)) << reap.out;
  // Even when asked for every tmpfs: removed, if at all, by the host's
  // path, never through nobody's tree.
  const CliResult all = run_shmbpf("reap --all-mounts --min-age 0 --match 'pid-of-a-*' --json");
  EXPECT_LE(all.code, 1) << all.err;
  const json all_json = all.json();
  for (const json &o : all_json["segments"])
    EXPECT_EQ(o["path"], host.secret.string()) << o;
}

// A file with two names: unlinking one frees nothing, so reap removes
// neither and says why, whichever name --match selects.
TEST(HardLinks, ReapRemovesNoNameOfAFileWithTwoAndSaysWhy) {
  SHMBPF_REQUIRE_ROOT();
  const std::string tag = std::to_string(getpid());
  const fs::path a = "/dev/shm/shmbpf-attack-link-a-" + tag;
  const fs::path b = "/dev/shm/shmbpf-attack-link-b-" + tag;
  std::ofstream(a) << std::string(64 << 10, 'x');
  fs::create_hard_link(a, b);
  struct Cleanup {
    fs::path a, b;
    ~Cleanup() {
      fs::remove(a);
      fs::remove(b);
    }
  } cleanup{a, b};
  for (const std::string &match : {a.string(), b.string()}) {
    const CliResult r = run_shmbpf("reap --yes --min-age 0 --match '" + match + "' --json");
    EXPECT_LE(r.code, 1) << r.err;
    const json j = r.json();
    ASSERT_EQ(j["segments"].size(), 1u) << r.out;
    EXPECT_EQ(j["segments"][0]["status"], "skipped") << r.out;
    EXPECT_EQ(j["segments"][0]["reason"], "other-names") << r.out;
    EXPECT_TRUE(fs::exists(a));
    EXPECT_TRUE(fs::exists(b));
  }
}

// Finding 10: a file whose only handle is an fd in flight (sent over a unix
// socket, not yet received) is in no process's fds, so it looked orphaned
// and was reaped: the receiver then got a file without a name. The kernel
// still counts that open file; reap asks it (a write lease) and leaves the
// file, until the fd is received and closed.
TEST(InFlight, AFileHeldOnlyByAnFdInFlightIsNotReaped) {
  SHMBPF_REQUIRE_ROOT();
  const fs::path path = "/dev/shm/shmbpf-attack-in-flight-" + std::to_string(getpid());
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove(p); }
  } cleanup{path};
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 64 << 10), 0);
    char byte = 'f';
    iovec io{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ASSERT_EQ(::sendmsg(sv[0], &m, 0), 1);
    ::close(fd);
    ::close(sv[0]);
  }
  const auto reap = [&] {
    const CliResult r = run_shmbpf("reap --yes --min-age 0 --match '" + path.string() + "' --json");
    EXPECT_LE(r.code, 1) << r.err;
    return r;
  };
  const CliResult first = reap();
  const json j = first.json();
  ASSERT_EQ(j["segments"].size(), 1u) << first.out;
  EXPECT_EQ(j["segments"][0]["status"], "skipped") << first.out;
  EXPECT_EQ(j["segments"][0]["reason"], "held") << first.out;
  EXPECT_TRUE(fs::exists(path));
  // Received and closed: an orphan now, and reaped.
  char byte = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec io{&byte, 1};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ASSERT_EQ(::recvmsg(sv[1], &m, MSG_CMSG_CLOEXEC), 1);
  int got = -1;
  std::memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
  ::close(got);
  ::close(sv[1]);
  const CliResult second = reap();
  const json k = second.json();
  ASSERT_EQ(k["segments"].size(), 1u) << second.out;
  EXPECT_EQ(k["segments"][0]["status"], "freed") << second.out;
  EXPECT_FALSE(fs::exists(path));
}

} // namespace
} // namespace shmbpf::test
