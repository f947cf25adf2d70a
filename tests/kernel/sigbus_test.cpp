// Kernel tests for SIGBUS: real faults of children, and what the kernel
// found at the faulting address (the mapping's file, its offset and size,
// the tmpfs's size and usage) checked against what the test knows.
#include "facts/dev.hpp"
#include "kernel/harness.hpp"
#include "model/bus_errors.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

namespace shmbpf::test {
namespace {

constexpr uint64_t kib = 1024;
constexpr uint64_t mib = 1024 * kib;

// What a child reports before it faults: where it mapped the file and
// which file it was.
struct Mapped {
  uint64_t addr = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
};

void record_mapping(Mapped &out, int fd, const void *p) {
  struct stat st {};
  fstat(fd, &st);
  out.addr = reinterpret_cast<uintptr_t>(p);
  out.dev = kernel_dev(st.st_dev);
  out.ino = st.st_ino;
}

// In a child: maps file, 1 MiB, on a tmpfs with less room and touches
// every page; dies of SIGBUS where the mount runs out. The exit status
// says which step failed if it does not.
int fill_past_the_mount(const std::string &file, Mapped &m) {
  die_of_sigbus_plainly();
  int fd = open(file.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, mib) != 0)
    return 1;
  auto *p =
      static_cast<volatile char *>(mmap(nullptr, mib, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED)
    return 2;
  record_mapping(m, fd, const_cast<char *>(p));
  for (uint64_t off = 0; off < mib; off += static_cast<uint64_t>(sysconf(_SC_PAGESIZE)))
    p[off] = 1;
  return 3; // should have died before
}

// The one SIGBUS event a child that died of it caused, its header checked.
Event sigbus_of(Collector &col, const Child &c, const std::string &comm) {
  EXPECT_TRUE(WIFSIGNALED(c.status)) << "status " << c.status;
  EXPECT_EQ(WTERMSIG(c.status), SIGBUS);
  auto bus = col.wait_for([&](const Event &e) {
    return e.type == EventType::sigbus && e.target_pid == uint32_t(c.pid);
  });
  EXPECT_EQ(bus.size(), 1u);
  if (bus.empty())
    return {};
  const Event &e = bus[0];
  // A fault: the faulting task generates the signal for itself.
  EXPECT_EQ(e.pid, uint32_t(c.pid));
  EXPECT_EQ(e.tid, uint32_t(c.pid));
  EXPECT_EQ(e.comm, comm);
  EXPECT_EQ(e.target_comm, comm);
  EXPECT_EQ(e.si_code, BUS_ADRERR);
  EXPECT_EQ(e.ret, 0);
  return e;
}

// A process in a pid namespace of its own, as in a container: the fault
// names it by the pid it has there (1, its namespace's first), beside the
// host's pid the header has.
TEST(Sigbus, AFaultInAPidNamespaceHasThePidItsNamespaceSees) {
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=64k,mode=0700"));
  SHMBPF_COLLECTOR(col);
  const std::string comm = "sigbus-nspid";
  const std::string file = tmpfs.dir() + "/fill";
  struct Inner {
    Mapped m;
    int32_t host_pid = 0;
    int32_t ns_pid = 0;
    int status = 0;
  };
  Shared<Inner> in;
  // The child makes the namespace; its child is the namespace's pid 1.
  Child c = run_child("sigbus-nsparent", [&] {
    if (unshare(CLONE_NEWPID) != 0)
      return 1;
    const pid_t inner = fork();
    if (inner == 0) {
      prctl(PR_SET_NAME, comm.c_str());
      in->ns_pid = getpid();
      _exit(fill_past_the_mount(file, in->m));
    }
    in->host_pid = inner;
    return waitpid(inner, &in->status, 0) == inner ? 0 : 2;
  });
  ASSERT_EQ(c.status, 0);
  ASSERT_EQ(in->ns_pid, 1);
  EXPECT_TRUE(WIFSIGNALED(in->status) && WTERMSIG(in->status) == SIGBUS) << in->status;
  auto bus = col->wait_for([&](const Event &e) {
    return e.type == EventType::sigbus && e.target_pid == uint32_t(in->host_pid);
  });
  ASSERT_EQ(bus.size(), 1u);
  EXPECT_EQ(bus[0].pid, uint32_t(in->host_pid));
  EXPECT_EQ(bus[0].target_ns_pid, 1u);
  EXPECT_EQ(bus[0].fault, FaultLookup::file);
  EXPECT_EQ(bus[0].full_path, file);
}

// A tmpfs of 64 KiB: a mapping of a 1 MiB file on it runs out of pages.
TEST(Sigbus, AFullTmpfsNamesTheFileTheMountAndTheOffset) {
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=64k,mode=0700"));
  SHMBPF_COLLECTOR(col);
  const std::string comm = "sigbus-fill";
  const std::string file = tmpfs.dir() + "/fill";
  Shared<Mapped> m;
  Child c = run_child(comm, [&] { return fill_past_the_mount(file, *m); });
  const Event e = sigbus_of(*col, c, comm);
  ASSERT_NE(m->addr, 0u);
  // 64 KiB hold the first pages; the next one faults.
  EXPECT_EQ(e.addr, m->addr + 64 * kib);
  ASSERT_EQ(e.fault, FaultLookup::file);
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.fs, kFsTmpfs);
  EXPECT_EQ(e.dev, m->dev);
  EXPECT_EQ(e.ino, m->ino);
  EXPECT_EQ(e.name, "/fill");
  EXPECT_EQ(e.full_path, file);
  EXPECT_EQ(e.offset, 64 * kib);
  EXPECT_EQ(e.size, mib);
  EXPECT_EQ(e.bytes, 64 * kib);
  EXPECT_FALSE(e.beyond_eof);
  EXPECT_FALSE(e.unlinked);
  EXPECT_EQ(e.mount_size, 64 * kib);
  // The kernel's count is batched per CPU: at most the size, never more.
  EXPECT_LE(e.mount_used, 64 * kib);
  EXPECT_EQ(bus_cause(e), BusCause::mount_full);
  EXPECT_NE(e.mnt_id, 0u);
  EXPECT_EQ(e.target_ns_pid, uint32_t(c.pid)); // the host's pid namespace is its own

  auto ex = col->wait_for([pid = c.pid](const Event &x) {
    return x.type == EventType::exit && x.pid == uint32_t(pid);
  });
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].exit_code & 0x7f, uint32_t(SIGBUS));
  EXPECT_GT(ex[0].ts_ns, e.ts_ns);
}

// A memfd shrunk under its mapping: the page touched is past its end.
TEST(Sigbus, AMemfdTouchedPastItsEnd) {
  SHMBPF_COLLECTOR(col);
  const std::string comm = "sigbus-memfd";
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  Shared<Mapped> m;
  Child c = run_child(comm, [&] {
    die_of_sigbus_plainly();
    int fd = memfd_create("kt-sigbus", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, mib) != 0)
      return 1;
    auto *p =
        static_cast<volatile char *>(mmap(nullptr, mib, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED || ftruncate(fd, page) != 0)
      return 2;
    record_mapping(*m, fd, const_cast<char *>(p));
    p[2 * page + 5] = 1;
    return 3;
  });
  const Event e = sigbus_of(*col, c, comm);
  ASSERT_NE(m->addr, 0u);
  EXPECT_EQ(e.addr, m->addr + 2 * page + 5);
  ASSERT_EQ(e.fault, FaultLookup::file);
  EXPECT_EQ(e.kind, Kind::memfd);
  EXPECT_EQ(e.name, "memfd:kt-sigbus");
  EXPECT_EQ(e.dev, m->dev);
  EXPECT_EQ(e.ino, m->ino);
  EXPECT_EQ(e.offset, 2 * page + 5);
  EXPECT_EQ(e.size, page);
  EXPECT_TRUE(e.beyond_eof);
  // memfds live on the kernel's own mount: no size, and no mountpoint.
  EXPECT_EQ(e.mount_size, 0u);
  EXPECT_EQ(bus_cause(e), BusCause::beyond_eof);
}

// A cgroup v2 directory with the hugetlb controller and a limit of one
// 2 MiB huge page, and a pool with pages to spare; all undone at the end.
// "" from make() when the machine cannot: why, to skip on. Both are the
// machine's: a lock keeps the test's runs alongside (the other builds'
// binaries) from undoing each other's.
class HugetlbLimit {
public:
  HugetlbLimit() = default;
  HugetlbLimit(const HugetlbLimit &) = delete;
  HugetlbLimit &operator=(const HugetlbLimit &) = delete;
  ~HugetlbLimit() {
    if (!dir_.empty())
      rmdir(dir_.c_str());
    if (enabled_)
      write_file(root_ + "/cgroup.subtree_control", "-hugetlb");
    if (pool_ >= 0)
      write_file(kPool, std::to_string(pool_));
    if (lock_ >= 0)
      close(lock_); // lets the next one in
  }

  std::string make() {
    lock_ = open("/tmp/shmbpf-kt-hugetlb.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (lock_ < 0 || flock(lock_, LOCK_EX) != 0)
      return std::string("cannot lock /tmp/shmbpf-kt-hugetlb.lock: ") + std::strerror(errno);
    const auto mnt = find_cgroup2_mount(read_mountinfo(0));
    if (!mnt)
      return "no cgroup2 mount";
    root_ = *mnt;
    if (read_file(root_ + "/cgroup.controllers").find("hugetlb") == std::string::npos)
      return "no hugetlb controller on cgroup2 (bound to v1, or not built)";
    if (read_file(root_ + "/cgroup.subtree_control").find("hugetlb") == std::string::npos) {
      if (!write_file(root_ + "/cgroup.subtree_control", "+hugetlb"))
        return "cannot enable hugetlb in " + root_;
      enabled_ = true;
    }
    const std::string pool = read_file(kPool);
    if (pool.empty())
      return "no 2 MiB huge pages on this machine";
    pool_ = std::stol(pool);
    if (!write_file(kPool, std::to_string(pool_ + 4)))
      return "cannot grow the huge page pool";
    dir_ = root_ + "/shmbpf-kt-hugetlb-" + std::to_string(getpid());
    if (mkdir(dir_.c_str(), 0755) != 0)
      return "mkdir " + dir_ + ": " + std::strerror(errno);
    if (!write_file(dir_ + "/hugetlb.2MB.max", std::to_string(2 * mib)))
      return "cannot set hugetlb.2MB.max";
    return {};
  }
  // In the child: moves the calling process into the cgroup.
  bool join() const { return write_file(dir_ + "/cgroup.procs", "0"); }
  uint64_t id() const {
    struct stat st {};
    return stat(dir_.c_str(), &st) == 0 ? st.st_ino : 0;
  }

private:
  static constexpr const char *kPool = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
  static std::string read_file(const std::string &path) {
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  }
  static bool write_file(const std::string &path, const std::string &text) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return false;
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    return ok;
  }
  std::string root_, dir_;
  bool enabled_ = false;
  long pool_ = -1;
  int lock_ = -1;
};

// A memory cgroup limit where the kernel answers with SIGBUS rather than
// the OOM killer: a hugetlb memfd whose cgroup may have one huge page. The
// pool has pages; the second page's fault is over the limit.
TEST(Sigbus, AHugetlbMemfdOverItsCgroupsLimit) {
  HugetlbLimit limit;
  if (const std::string why = limit.make(); !why.empty())
    GTEST_SKIP() << why;
  SHMBPF_COLLECTOR(col);
  const std::string comm = "sigbus-hugetlb";
  Shared<Mapped> m;
  Child c = run_child(comm, [&] {
    die_of_sigbus_plainly();
    if (!limit.join())
      return 1;
    int fd = memfd_create("kt-hugetlb", MFD_CLOEXEC | MFD_HUGETLB);
    if (fd < 0 || ftruncate(fd, 8 * mib) != 0)
      return 2;
    auto *p = static_cast<volatile char *>(
        mmap(nullptr, 8 * mib, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
      return 3;
    record_mapping(*m, fd, const_cast<char *>(p));
    p[0] = 1;
    p[2 * mib + 7] = 1; // over the cgroup's one page
    return 4;
  });
  const Event e = sigbus_of(*col, c, comm);
  ASSERT_NE(m->addr, 0u);
  EXPECT_EQ(e.addr, m->addr + 2 * mib + 7);
  EXPECT_EQ(e.cgroup_id, limit.id());
  ASSERT_EQ(e.fault, FaultLookup::file);
  EXPECT_EQ(e.kind, Kind::memfd);
  EXPECT_EQ(e.fs, kFsHugetlbfs);
  EXPECT_EQ(e.name, "memfd:kt-hugetlb");
  EXPECT_EQ(e.dev, m->dev);
  EXPECT_EQ(e.ino, m->ino);
  EXPECT_EQ(e.offset, 2 * mib + 7);
  EXPECT_EQ(e.size, 8 * mib);
  EXPECT_EQ(e.bytes, 2 * mib); // the one page it had
  EXPECT_FALSE(e.beyond_eof);
  EXPECT_EQ(bus_cause(e), BusCause::no_huge_pages);
}

// Two tracers on one fault (two shmbpf instances, a daemon and a `trace`):
// the first one's bpf_find_vma leaves its unlock pending on the CPU, with
// interrupts off, and the second's cannot run; it searches the VMA tree
// itself. Both name the file.
TEST(Sigbus, TwoTracersBothFindTheFile) {
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=64k,mode=0700"));
  SHMBPF_COLLECTOR(first);
  SHMBPF_COLLECTOR(second);
  const std::string comm = "sigbus-twice";
  const std::string file = tmpfs.dir() + "/twice";
  Shared<Mapped> m;
  Child c = run_child(comm, [&] { return fill_past_the_mount(file, *m); });
  for (Collector *col : {first.get(), second.get()}) {
    const Event e = sigbus_of(*col, c, comm);
    ASSERT_EQ(e.fault, FaultLookup::file);
    EXPECT_EQ(e.ino, m->ino);
    EXPECT_EQ(e.offset, 64 * kib);
    EXPECT_EQ(e.full_path, file);
    EXPECT_EQ(bus_cause(e), BusCause::mount_full);
  }
}

// An anonymous mapping never faults with SIGBUS by itself; a signal sent
// with kill(2) is not a fault and looks nothing up.
TEST(Sigbus, AKilledProcessIsNotAFault) {
  SHMBPF_COLLECTOR(col);
  const std::string comm = "sigbus-kill";
  Child c = run_child(comm, [&] {
    die_of_sigbus_plainly();
    kill(getpid(), SIGBUS);
    return 3;
  });
  auto bus = col->wait_for([&](const Event &e) {
    return e.type == EventType::sigbus && e.target_pid == uint32_t(c.pid);
  });
  ASSERT_EQ(bus.size(), 1u);
  EXPECT_LE(bus[0].si_code, 0);
  EXPECT_EQ(bus[0].fault, FaultLookup::not_a_fault);
  EXPECT_EQ(bus[0].addr, 0u);
  EXPECT_EQ(bus[0].ino, 0u);
}

} // namespace
} // namespace shmbpf::test
