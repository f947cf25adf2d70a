// /proc/<pid>/exe as an audit reads it, and the host's namespaces. The
// programs on a tmpfs and in a memfd are in tests/kernel (they mount).
#include "facts/dev.hpp"
#include "sources/exe.hpp"
#include "sources/namespaces.hpp"

#include <gtest/gtest.h>

#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace shmbpf {
namespace {

TEST(ExeLink, StripsTheDeletedMark) {
  EXPECT_EQ(parse_exe_link("/usr/bin/sleep"), (ExeLink{"/usr/bin/sleep", false}));
  EXPECT_EQ(parse_exe_link("/dev/shm/x (deleted)"), (ExeLink{"/dev/shm/x", true}));
  // A memfd never had a name, with or without the mark.
  EXPECT_EQ(parse_exe_link("/memfd:payload (deleted)"), (ExeLink{"/memfd:payload", true}));
  EXPECT_EQ(parse_exe_link("/memfd:"), (ExeLink{"/memfd:", true}));
  // The mark only at the end, once; a name may hold it too.
  EXPECT_EQ(parse_exe_link("/tmp/a (deleted)/b"), (ExeLink{"/tmp/a (deleted)/b", false}));
  EXPECT_EQ(parse_exe_link("/tmp/a (deleted) (deleted)"), (ExeLink{"/tmp/a (deleted)", true}));
  EXPECT_EQ(parse_exe_link("/tmp/memfd:x"), (ExeLink{"/tmp/memfd:x", false}));
  EXPECT_EQ(parse_exe_link(""), (ExeLink{"", false}));
}

TEST(ReadExe, OwnProgram) {
  const auto exe = read_exe(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(exe);
  char link[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", link, sizeof link);
  ASSERT_GT(n, 0);
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/exe", &st), 0);
  EXPECT_EQ(exe->pid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(exe->path, std::string(link, static_cast<size_t>(n)));
  EXPECT_EQ(exe->dev, kernel_dev(st.st_dev));
  EXPECT_EQ(exe->ino, st.st_ino);
  EXPECT_FALSE(exe->deleted);
}

TEST(ReadExe, NothingForAGoneProcess) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    _exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(read_exe(static_cast<uint32_t>(child)));
  EXPECT_FALSE(read_exe(0));
}

uint32_t ns_of(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint32_t>(st.st_ino) : 0;
}

TEST(HostNamespaces, InitsOrOwn) {
  const HostNamespaces host = read_host_namespaces();
  // pid 1's links need privilege over it: as root, its; else ours.
  if (ns_of("/proc/1/ns/mnt") != 0 && ns_of("/proc/1/ns/ipc") != 0) {
    EXPECT_EQ(host.pid, 1u);
    EXPECT_EQ(host.mntns, ns_of("/proc/1/ns/mnt"));
    EXPECT_EQ(host.ipcns, ns_of("/proc/1/ns/ipc"));
  } else {
    EXPECT_EQ(host.pid, static_cast<uint32_t>(::getpid()));
    EXPECT_EQ(host.mntns, ns_of("/proc/self/ns/mnt"));
    EXPECT_EQ(host.ipcns, ns_of("/proc/self/ns/ipc"));
  }
  EXPECT_NE(host.mntns, 0u);
  EXPECT_NE(host.ipcns, 0u);
}

} // namespace
} // namespace shmbpf
