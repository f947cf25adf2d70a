// What an audit reads about real processes, as root: the program of a child
// started from a tmpfs it mounts, from a memfd and from the disk
// (read_exe), the memory limit of a cgroup it makes (read_memory_limit),
// and the whole gather around a child in a container's cgroup.
#include "container_cgroups.hpp"
#include "docker_cgroup.hpp"
#include "support.hpp"

#include "facts/dev.hpp"
#include "facts/fs_magic.hpp"
#include "live/audit_gather.hpp"
#include "sources/cgroup.hpp"
#include "sources/exe.hpp"
#include "sources/mountinfo.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

extern char **environ;

namespace shmbpf {
namespace {

namespace fs = std::filesystem;

// Under CI=true what cannot be set up fails the test; elsewhere it skips.
#define AUDIT_REQUIRE(cond, why)                                                                   \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if (::shmbpf::test::in_ci())                                                                 \
        FAIL() << why;                                                                             \
      GTEST_SKIP() << why;                                                                         \
    }                                                                                              \
  } while (0)

#define AUDIT_REQUIRE_ROOT() AUDIT_REQUIRE(geteuid() == 0, "needs root")

constexpr const char *kProgram = "/bin/sleep";

// A child, killed and reaped with its owner.
struct Child {
  pid_t pid = -1;
  Child() = default;
  explicit Child(pid_t p) : pid(p) {}
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// A child that execs (or fexecve's fd when path is empty) kProgram's copy
// with "30": sleeps long enough to be read.
pid_t spawn(const std::string &path, int fd = -1) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    char name[] = "sleep", arg[] = "30";
    char *argv[] = {name, arg, nullptr};
    if (fd >= 0)
      ::fexecve(fd, argv, environ);
    else
      ::execv(path.c_str(), argv);
    _exit(100 + (errno & 63)); // the exec's errno, for exe_after_exec to say
  }
  return pid;
}

// read_exe once the child has exec'd: its program is no longer ours. A
// child that exits first (its exec failed) ends the wait at once, and *why
// says with which errno.
std::optional<ExeFile> exe_after_exec(pid_t pid, std::string *why = nullptr) {
  const auto own = read_exe(static_cast<uint32_t>(::getpid()));
  // An exec under an emulated guest, next to other guests, can take seconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto exe = read_exe(static_cast<uint32_t>(pid));
    if (exe && own && exe->ino != own->ino)
      return exe;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      if (why)
        *why = info.si_status >= 100
                   ? std::string("exec failed: ") + std::strerror(info.si_status - 100)
                   : "the child ended with status " + std::to_string(info.si_status);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (why)
    *why = "no exec within 60 s";
  return std::nullopt;
}

// A tmpfs of the test's own, unmounted and removed with it.
class TmpMount {
public:
  TmpMount() {
    char tmpl[] = "/tmp/shmbpf-audit-exe-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr)
      return;
    dir_ = tmpl;
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m") == 0;
  }
  TmpMount(const TmpMount &) = delete;
  TmpMount &operator=(const TmpMount &) = delete;
  ~TmpMount() {
    if (mounted_)
      ::umount2(dir_.c_str(), MNT_DETACH);
    if (!dir_.empty())
      ::rmdir(dir_.c_str());
  }
  bool ok() const { return mounted_; }
  const std::string &dir() const { return dir_; }

private:
  std::string dir_;
  bool mounted_ = false;
};

struct Stat {
  uint32_t dev = 0;
  uint64_t ino = 0;
};
Stat stat_of(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {kernel_dev(st.st_dev), st.st_ino};
}

TEST(AuditExe, ProgramOnATmpfs) {
  AUDIT_REQUIRE_ROOT();
  TmpMount tmp;
  AUDIT_REQUIRE(tmp.ok(), "cannot mount a tmpfs: " << std::strerror(errno));
  const std::string copy = tmp.dir() + "/payload";
  fs::copy_file(kProgram, copy);
  ASSERT_EQ(::chmod(copy.c_str(), 0755), 0);
  const Stat want = stat_of(copy);

  Child child(spawn(copy));
  ASSERT_GT(child.pid, 0);
  auto exe = exe_after_exec(child.pid);
  ASSERT_TRUE(exe) << "the child never ran " << copy;
  EXPECT_EQ(exe->pid, static_cast<uint32_t>(child.pid));
  EXPECT_EQ(exe->path, copy);
  EXPECT_FALSE(exe->deleted);
  EXPECT_TRUE(exe->on_shm);
  EXPECT_EQ(exe->dev, want.dev);
  EXPECT_EQ(exe->ino, want.ino);

  // Unlinked while it runs: the same inode, marked deleted.
  ASSERT_EQ(::unlink(copy.c_str()), 0);
  exe = read_exe(static_cast<uint32_t>(child.pid));
  ASSERT_TRUE(exe);
  EXPECT_EQ(exe->path, copy);
  EXPECT_TRUE(exe->deleted);
  EXPECT_TRUE(exe->on_shm);
  EXPECT_EQ(exe->ino, want.ino);
}

TEST(AuditExe, ProgramFromAMemfd) {
  AUDIT_REQUIRE_ROOT();
  const int fd = ::memfd_create("shmbpf-audit-exe", MFD_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  {
    std::ifstream in(kProgram, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty());
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);

  Child child(spawn("", fd));
  ASSERT_GT(child.pid, 0);
  std::string why;
  auto exe = exe_after_exec(child.pid, &why);
  ::close(fd);
  AUDIT_REQUIRE(exe, "the child could not exec its memfd (vm.memfd_noexec?): " << why);
  EXPECT_EQ(exe->path, "/memfd:shmbpf-audit-exe");
  EXPECT_TRUE(exe->deleted);
  EXPECT_TRUE(exe->on_shm);
  EXPECT_EQ(exe->dev, kernel_dev(st.st_dev));
  EXPECT_EQ(exe->ino, st.st_ino);
}

TEST(AuditExe, ProgramOnDisk) {
  AUDIT_REQUIRE_ROOT();
  Child child(spawn(kProgram));
  ASSERT_GT(child.pid, 0);
  auto exe = exe_after_exec(child.pid);
  ASSERT_TRUE(exe);
  EXPECT_EQ(exe->path, fs::canonical(kProgram).string());
  EXPECT_FALSE(exe->deleted);
  const Stat want = stat_of(kProgram);
  EXPECT_EQ(exe->dev, want.dev);
  EXPECT_EQ(exe->ino, want.ino);
  // On shared memory only where the root filesystem itself is a tmpfs.
  struct statfs sfs {};
  ASSERT_EQ(::statfs(kProgram, &sfs), 0);
  EXPECT_EQ(exe->on_shm, is_shm_magic(static_cast<long>(sfs.f_type)));

  // A kernel thread runs no program.
  std::ifstream comm("/proc/2/comm");
  std::string name;
  if (std::getline(comm, name) && name == "kthreadd") {
    EXPECT_FALSE(read_exe(2));
  }
}

constexpr uint64_t kOuterLimit = 64ull << 20;
constexpr uint64_t kInnerLimit = 32ull << 20;

TEST(AuditMemoryLimit, SmallestUpToTheRoot) {
  AUDIT_REQUIRE_ROOT();
  test::ContainerCgroups cg;
  const std::string failed = cg.create("audit-test", {"limited", "inner"}, 0, kOuterLimit);
  AUDIT_REQUIRE(failed.empty(), failed);

  int gate[2];
  ASSERT_EQ(::pipe2(gate, O_CLOEXEC), 0);
  {
    Child child(::fork());
    ASSERT_GE(child.pid, 0);
    if (child.pid == 0) {
      char c;
      ::close(gate[1]);
      _exit(::read(gate[0], &c, 1) >= 0 ? 0 : 1);
    }
    ::close(gate[0]);
    ASSERT_TRUE(cg.add(child.pid));
    const auto mounts = read_mountinfo(0);
    // The inner cgroup has no limit of its own: the outer one's holds.
    auto limit = read_memory_limit(static_cast<uint32_t>(child.pid), mounts);
    ASSERT_TRUE(limit);
    EXPECT_EQ(limit->bytes, kOuterLimit);
    // A tighter one inside wins.
    ASSERT_TRUE(cg.set_limit(1, kInnerLimit));
    limit = read_memory_limit(static_cast<uint32_t>(child.pid), mounts);
    ASSERT_TRUE(limit);
    EXPECT_EQ(limit->bytes, kInnerLimit);
    ::close(gate[1]);
  } // the child is reaped here, before the cgroup goes
  EXPECT_FALSE(read_memory_limit(999'999'999, read_mountinfo(0)));
}

// gather_audit around a child in a docker-like cgroup: its program, its
// container once, and the limit its cgroup has.
TEST(AuditGather, ChildInAContainer) {
  AUDIT_REQUIRE_ROOT();
  test::DockerCgroup cg("shmbpf-audit.slice");
  const std::string failed = cg.create();
  AUDIT_REQUIRE(failed.empty(), failed);
  Child child(spawn(kProgram));
  ASSERT_GT(child.pid, 0);
  ASSERT_TRUE(cg.add(child.pid));
  ASSERT_TRUE(exe_after_exec(child.pid));

  const AuditScan scan = gather_audit(RuntimeRoots{});
  // pid 1's namespaces, or ours where even root may not read them (a
  // sandbox whose init another user namespace owns).
  const bool init_readable = test::ns_inode("/proc/1/ns/ipc") != 0;
  EXPECT_EQ(scan.host.pid, init_readable ? 1u : static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(scan.host.ipcns,
            test::ns_inode(init_readable ? "/proc/1/ns/ipc" : "/proc/self/ns/ipc"));
  EXPECT_EQ(scan.host.mntns,
            test::ns_inode(init_readable ? "/proc/1/ns/mnt" : "/proc/self/ns/mnt"));
  const auto exe = std::find_if(scan.exes.begin(), scan.exes.end(), [&](const ExeFile &e) {
    return e.pid == static_cast<uint32_t>(child.pid);
  });
  ASSERT_NE(exe, scan.exes.end());
  EXPECT_EQ(exe->ino, stat_of(kProgram).ino);
  EXPECT_EQ(std::count_if(scan.names.begin(), scan.names.end(),
                          [&](const auto &n) { return n.first == cg.id(); }),
            1);
  const auto expected = read_memory_limit(static_cast<uint32_t>(child.pid), read_mountinfo(0));
  const auto limit = std::find_if(scan.memory_limits.begin(), scan.memory_limits.end(),
                                  [&](const auto &l) { return l.first == cg.id(); });
  ASSERT_EQ(limit != scan.memory_limits.end(), expected.has_value());
  if (expected) {
    EXPECT_EQ(limit->second.bytes, expected->bytes);
  }
  // Every process read has its program, apart from kernel threads.
  EXPECT_GT(scan.exes.size(), 0u);
  EXPECT_LE(scan.exes.size(), scan.system.processes.size());
}

} // namespace
} // namespace shmbpf
