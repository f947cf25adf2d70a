// A container's runtime makes the container's mount namespace, acts in it
// (runc's own events come from there first), and only then mounts the
// container's /dev/shm. The namespace's mount table, read at its first
// event, is stale by the time the container creates its files there. The
// light hooks' records name the inode exactly, so a path that leads to
// another filesystem says the table is stale: the session reads it again
// and gives the create its path on the new mount, where it once dropped it
// (seen with containerd on Debian's 6.12, whose light set is on shmem's
// calls, like this machine's on the ctime tracepoints).
#include "kernel/file_events.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

ProbeOptions light() {
  ProbeOptions o;
  o.hooks = HookSet::light;
  return o;
}

struct Made {
  uint32_t dev = 0; // kernel encoding
  uint64_t ino = 0;
};

TEST(StaleNamespace, ACreateOnAMountMadeAfterTheNamespacesFirstEventHasItsPath) {
  TmpfsMount outer;
  ASSERT_TRUE(outer.mount("size=4m"));
  SHMBPF_SESSION(session, light());
  const std::string first = outer.dir() + "/kt-stale-first";
  const std::string second = outer.dir() + "/kt-stale-second";
  const std::string dir = outer.dir();

  int down[2], up[2];
  ASSERT_EQ(pipe(down), 0);
  ASSERT_EQ(pipe(up), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Only the parent writes down and reads up: its end closed, a read
    // here ends.
    close(down[1]);
    close(up[0]);
    prctl(PR_SET_NAME, "kt-stale-ns");
    char c = 0;
    // The runtime's namespace, and an event of its own in it.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
      _exit(10);
    const int a = open(first.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (a < 0 || write(up[1], "1", 1) != 1 || read(down[0], &c, 1) != 1)
      _exit(11);
    // Then the container's /dev/shm over the same directory, and its file.
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0)
      _exit(12);
    const int b = open(second.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    struct stat st {};
    if (b < 0 || fstat(b, &st) != 0)
      _exit(13);
    const Made made{kdev_of(st.st_dev), st.st_ino};
    if (write(up[1], &made, sizeof made) != sizeof made || read(down[0], &c, 1) != 1)
      _exit(14);
    _exit(0);
  }
  close(down[0]);
  close(up[1]);
  struct Reap {
    pid_t pid;
    int fd;
    ~Reap() {
      close(fd);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  } reap{pid, down[1]};

  std::vector<Event> evs;
  auto collect = [&](Event &e) {
    if (e.pid == static_cast<uint32_t>(pid) && e.type == EventType::create)
      evs.push_back(e);
  };
  char c = 0;
  ASSERT_EQ(read(up[0], &c, 1), 1) << "the child did not make its namespace";
  session->drain(collect); // its table is read now, before the new mount
  ASSERT_EQ(evs.size(), 1u) << show(evs);
  EXPECT_EQ(evs[0].full_path, first);
  ASSERT_EQ(write(down[1], "g", 1), 1);

  Made made;
  ASSERT_EQ(read(up[0], &made, sizeof made), static_cast<ssize_t>(sizeof made));
  session->drain(collect);
  ASSERT_EQ(evs.size(), 2u) << show(evs);
  const Event &cr = evs[1];
  EXPECT_EQ(cr.full_path, second) << show(cr);
  EXPECT_EQ(cr.dev, made.dev) << show(cr);
  EXPECT_EQ(cr.ino, made.ino) << show(cr);
  EXPECT_NE(cr.dev, evs[0].dev); // another filesystem than the first file's
  ASSERT_EQ(write(down[1], "g", 1), 1);
  close(up[0]);
}

// The same, but the file's creator exits before its record is read (a
// container's first process that writes and ends at once): the namespace's
// table is read from another process still in it.
TEST(StaleNamespace, ACreateWhoseCallerHasEndedIsResolvedThroughTheNamespacesOtherProcesses) {
  TmpfsMount outer;
  ASSERT_TRUE(outer.mount("size=4m"));
  SHMBPF_SESSION(session, light());
  const std::string first = outer.dir() + "/kt-stale-keeper";
  const std::string second = outer.dir() + "/kt-stale-gone";
  const std::string dir = outer.dir();

  int down[2], up[2];
  ASSERT_EQ(pipe(down), 0);
  ASSERT_EQ(pipe(up), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    prctl(PR_SET_NAME, "kt-stale-keep");
    char c = 0;
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
      _exit(10);
    const int a = open(first.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (a < 0 || write(up[1], "1", 1) != 1 || read(down[0], &c, 1) != 1)
      _exit(11);
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0)
      _exit(12);
    // The writer: creates its file, says what it made, and is gone before
    // the parent reads a record. This process keeps the namespace.
    int made_pipe[2];
    if (pipe(made_pipe) != 0)
      _exit(13);
    const pid_t writer = fork();
    if (writer == 0) {
      prctl(PR_SET_NAME, "kt-stale-gone");
      const int b = open(second.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
      struct stat st {};
      if (b < 0 || fstat(b, &st) != 0)
        _exit(1);
      const Made made{kdev_of(st.st_dev), st.st_ino};
      _exit(write(made_pipe[1], &made, sizeof made) == sizeof made ? 0 : 1);
    }
    int status = 0;
    Made made;
    if (writer < 0 || waitpid(writer, &status, 0) != writer || status != 0 ||
        read(made_pipe[0], &made, sizeof made) != sizeof made)
      _exit(14);
    if (write(up[1], &writer, sizeof writer) != sizeof writer ||
        write(up[1], &made, sizeof made) != sizeof made || read(down[0], &c, 1) != 1)
      _exit(15);
    _exit(0);
  }
  close(down[0]);
  close(up[1]);
  struct Reap {
    pid_t pid;
    int fd;
    ~Reap() {
      close(fd);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  } reap{pid, down[1]};

  std::vector<Event> evs;
  pid_t writer = -1;
  auto collect = [&](Event &e) {
    if (e.type == EventType::create &&
        (e.pid == static_cast<uint32_t>(pid) || e.pid == static_cast<uint32_t>(writer)))
      evs.push_back(e);
  };
  char c = 0;
  ASSERT_EQ(read(up[0], &c, 1), 1) << "the child did not make its namespace";
  session->drain(collect); // its table is read now, before the new mount
  ASSERT_EQ(evs.size(), 1u) << show(evs);
  EXPECT_EQ(evs[0].full_path, first);
  ASSERT_EQ(write(down[1], "g", 1), 1);

  Made made;
  ASSERT_EQ(read(up[0], &writer, sizeof writer), static_cast<ssize_t>(sizeof writer));
  ASSERT_EQ(read(up[0], &made, sizeof made), static_cast<ssize_t>(sizeof made));
  ASSERT_NE(kill(writer, 0), 0) << "the writer is still there"; // reaped by the child
  // Past the session's rate limit of whole-namespace scans.
  usleep(300'000);
  session->drain(collect);
  ASSERT_EQ(evs.size(), 2u) << show(evs);
  const Event &cr = evs[1];
  EXPECT_EQ(cr.pid, static_cast<uint32_t>(writer));
  EXPECT_EQ(cr.full_path, second) << show(cr);
  EXPECT_EQ(cr.dev, made.dev) << show(cr);
  EXPECT_EQ(cr.ino, made.ino) << show(cr);
  ASSERT_EQ(write(down[1], "g", 1), 1);
  close(up[0]);
}

} // namespace
} // namespace shmbpf::test
