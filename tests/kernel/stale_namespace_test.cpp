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

#include <functional>
#include <optional>
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

// Creates path and says what it is, or nothing.
std::optional<Made> create(const std::string &path) {
  const int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0)
    return std::nullopt;
  return Made{kdev_of(st.st_dev), st.st_ino};
}

// A child as a container's runtime acts: it makes a mount namespace,
// creates first there (and says so up), waits for the parent's byte down,
// mounts a tmpfs over dir, then runs then(up, down), whose value is its
// exit status. Driven step by step over the two pipes; reaped at the end.
class NamespaceChild {
public:
  NamespaceChild(const char *comm, const std::string &first, const std::string &dir,
                 const std::function<int(int up, int down)> &then) {
    int d[2], u[2];
    if (pipe(d) != 0 || pipe(u) != 0)
      return;
    pid = fork();
    if (pid == 0) {
      // Only the parent writes down and reads up: its end closed, a read
      // here ends.
      close(d[1]);
      close(u[0]);
      prctl(PR_SET_NAME, comm);
      char c = 0;
      // The runtime's namespace, and an event of its own in it.
      if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
        _exit(10);
      if (!create(first) || write(u[1], "1", 1) != 1 || read(d[0], &c, 1) != 1)
        _exit(11);
      // Then the container's /dev/shm over the same directory.
      if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0)
        _exit(12);
      _exit(then(u[1], d[0]));
    }
    close(d[0]);
    close(u[1]);
    down = d[1];
    up = u[0];
  }
  ~NamespaceChild() {
    close(down);
    close(up);
    int status = 0;
    if (pid > 0)
      waitpid(pid, &status, 0);
  }
  NamespaceChild(const NamespaceChild &) = delete;
  NamespaceChild &operator=(const NamespaceChild &) = delete;

  pid_t pid = -1;
  int up = -1;   // the child's news
  int down = -1; // the parent's go
};

TEST(StaleNamespace, ACreateOnAMountMadeAfterTheNamespacesFirstEventHasItsPath) {
  TmpfsMount outer;
  ASSERT_TRUE(outer.mount("size=4m"));
  SHMBPF_SESSION(session, light());
  const std::string first = outer.dir() + "/kt-stale-first";
  const std::string second = outer.dir() + "/kt-stale-second";

  // The container's file on its /dev/shm.
  NamespaceChild child("kt-stale-ns", first, outer.dir(), [&](int up, int down) {
    char c = 0;
    const std::optional<Made> made = create(second);
    if (!made)
      return 13;
    return write(up, &*made, sizeof *made) != sizeof *made || read(down, &c, 1) != 1 ? 14 : 0;
  });
  ASSERT_GT(child.pid, 0);
  const pid_t pid = child.pid;

  std::vector<Event> evs;
  auto collect = [&](Event &e) {
    if (e.pid == static_cast<uint32_t>(pid) && e.type == EventType::create)
      evs.push_back(e);
  };
  char c = 0;
  ASSERT_EQ(read(child.up, &c, 1), 1) << "the child did not make its namespace";
  session->drain(collect); // its table is read now, before the new mount
  ASSERT_EQ(evs.size(), 1u) << show(evs);
  EXPECT_EQ(evs[0].full_path, first);
  ASSERT_EQ(write(child.down, "g", 1), 1);

  Made made;
  ASSERT_EQ(read(child.up, &made, sizeof made), static_cast<ssize_t>(sizeof made));
  session->drain(collect);
  ASSERT_EQ(evs.size(), 2u) << show(evs);
  const Event &cr = evs[1];
  EXPECT_EQ(cr.full_path, second) << show(cr);
  EXPECT_EQ(cr.dev, made.dev) << show(cr);
  EXPECT_EQ(cr.ino, made.ino) << show(cr);
  EXPECT_NE(cr.dev, evs[0].dev); // another filesystem than the first file's
  ASSERT_EQ(write(child.down, "g", 1), 1);
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

  NamespaceChild child("kt-stale-keep", first, outer.dir(), [&](int up, int down) {
    // The writer: creates its file, says what it made, and is gone before
    // the parent reads a record. This process keeps the namespace.
    int made_pipe[2];
    if (pipe(made_pipe) != 0)
      return 13;
    const pid_t writer = fork();
    if (writer == 0) {
      prctl(PR_SET_NAME, "kt-stale-gone");
      const std::optional<Made> made = create(second);
      _exit(made && write(made_pipe[1], &*made, sizeof *made) == sizeof *made ? 0 : 1);
    }
    int status = 0;
    Made made;
    if (writer < 0 || waitpid(writer, &status, 0) != writer || status != 0 ||
        read(made_pipe[0], &made, sizeof made) != sizeof made)
      return 14;
    char c = 0;
    if (write(up, &writer, sizeof writer) != sizeof writer ||
        write(up, &made, sizeof made) != sizeof made || read(down, &c, 1) != 1)
      return 15;
    return 0;
  });
  ASSERT_GT(child.pid, 0);
  const pid_t pid = child.pid;

  std::vector<Event> evs;
  pid_t writer = -1;
  auto collect = [&](Event &e) {
    if (e.type == EventType::create &&
        (e.pid == static_cast<uint32_t>(pid) || e.pid == static_cast<uint32_t>(writer)))
      evs.push_back(e);
  };
  char c = 0;
  ASSERT_EQ(read(child.up, &c, 1), 1) << "the child did not make its namespace";
  session->drain(collect); // its table is read now, before the new mount
  ASSERT_EQ(evs.size(), 1u) << show(evs);
  EXPECT_EQ(evs[0].full_path, first);
  ASSERT_EQ(write(child.down, "g", 1), 1);

  Made made;
  ASSERT_EQ(read(child.up, &writer, sizeof writer), static_cast<ssize_t>(sizeof writer));
  ASSERT_EQ(read(child.up, &made, sizeof made), static_cast<ssize_t>(sizeof made));
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
  ASSERT_EQ(write(child.down, "g", 1), 1);
}

} // namespace
} // namespace shmbpf::test
