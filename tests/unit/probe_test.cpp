// Parts of the probe that need no BPF: sizing of the kernel's maps, room
// for file descriptors.
#include "probe/probe.hpp"

#include "facts/result.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace shmbpf::test {
namespace {

TEST(NameMapCapacity, AtLeast64KiEntries) {
  EXPECT_EQ(name_map_capacity(0), 65536u);
  EXPECT_EQ(name_map_capacity(1000), 65536u);
  EXPECT_EQ(name_map_capacity(16384), 65536u);
}

TEST(NameMapCapacity, FourTimesTheFilesAsAPowerOfTwo) {
  EXPECT_EQ(name_map_capacity(16385), 131072u);
  EXPECT_EQ(name_map_capacity(20000), 131072u);
  EXPECT_EQ(name_map_capacity(100000), 524288u);
}

TEST(NameMapCapacity, AtMostAMillionEntries) {
  EXPECT_EQ(name_map_capacity(262144), 1u << 20);
  EXPECT_EQ(name_map_capacity(300000), 1u << 20);
  EXPECT_EQ(name_map_capacity(uint64_t{1} << 40), 1u << 20);
}

// In a child: the limits are the process's own.
int in_child(rlim_t soft, rlim_t hard, rlim_t *after) {
  int pipefd[2];
  if (pipe(pipefd) != 0)
    return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    rlimit lim{soft, hard};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
      _exit(3);
    int code = 0;
    try {
      ensure_fd_room();
    } catch (const FatalError &e) {
      code = e.exit_code() == 2 && std::string(e.what()).find("ulimit -n") != std::string::npos ? 1
                                                                                                : 4;
    }
    getrlimit(RLIMIT_NOFILE, &lim);
    if (write(pipefd[1], &lim.rlim_cur, sizeof lim.rlim_cur) != sizeof lim.rlim_cur)
      _exit(5);
    _exit(code);
  }
  close(pipefd[1]);
  if (read(pipefd[0], after, sizeof *after) != sizeof *after)
    *after = 0;
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Too few descriptors made a map go uncreated and the load fail with
// EINVAL, as if the programs were wrong: the soft limit is raised when the
// hard one allows, and a refusal says what to raise.
TEST(FdRoom, RaisesTheSoftLimitOrSaysWhatToRaise) {
  rlim_t after = 0;
  EXPECT_EQ(in_child(20, 4096, &after), 0);
  EXPECT_GE(after, 256u);
  EXPECT_EQ(in_child(20, 40, &after), 1);
  EXPECT_EQ(after, 40u);
  EXPECT_EQ(in_child(8192, 8192, &after), 0);
  EXPECT_EQ(after, 8192u); // enough already: left alone
}

} // namespace
} // namespace shmbpf::test
