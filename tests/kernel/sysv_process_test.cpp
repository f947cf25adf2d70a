// Kernel tests for System V segments and process events (exit, exec; SIGBUS
// is sigbus_test.cpp's), and for the lost-record counter: real BPF programs, real
// syscalls from children with their own comm, every field checked.
#include "facts/dev.hpp"
#include "kernel/harness.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t mib = 1u << 20;

// The header fields every event of a child of ours must carry. tid is
// checked by the callers: it is the pid only for single-threaded children.
void expect_header(const Event &e, pid_t pid, const std::string &comm) {
  SCOPED_TRACE("event " + std::string(to_string(e.type)));
  EXPECT_EQ(e.pid, static_cast<uint32_t>(pid));
  EXPECT_EQ(e.ppid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(e.comm, comm);
  EXPECT_EQ(e.uid, getuid());
  EXPECT_EQ(e.ipcns, ns_inode("/proc/self/ns/ipc"));
  EXPECT_EQ(e.mntns, ns_inode("/proc/self/ns/mnt"));
  EXPECT_NE(e.cgroup_id, 0u);
  if (uint64_t cg = own_cgroup_id()) {
    EXPECT_EQ(e.cgroup_id, cg);
  }
  EXPECT_NE(e.ts_ns, 0u);
}

bool is_sysv_call(EventType t) {
  return t == EventType::shmget || t == EventType::shmat || t == EventType::shmdt ||
         t == EventType::shm_rmid;
}

void expect_exited(const Child &c, int code) {
  ASSERT_TRUE(WIFEXITED(c.status)) << "status " << c.status;
  ASSERT_EQ(WEXITSTATUS(c.status), code);
}

// Removes a SysV segment even when an assertion fails half-way.
struct SegmentGuard {
  key_t key;
  ~SegmentGuard() {
    int id = shmget(key, 0, 0);
    if (id >= 0)
      shmctl(id, IPC_RMID, nullptr);
  }
};

TEST(SysvEvents, PrivateSegmentFullLife) {
  SHMBPF_COLLECTOR(col);
  struct Out {
    int shmid = -1;
    uint64_t addr = 0;
  };
  Shared<Out> out;
  const std::string comm = "sysv-life";
  Child c = run_child(comm, [&] {
    int id = shmget(IPC_PRIVATE, mib, IPC_CREAT | 0600);
    if (id < 0)
      return 1;
    out->shmid = id;
    void *a = shmat(id, nullptr, 0);
    if (a == reinterpret_cast<void *>(-1)) {
      shmctl(id, IPC_RMID, nullptr);
      return 2;
    }
    out->addr = reinterpret_cast<uintptr_t>(a);
    std::memset(a, 0x5a, mib); // fault every page in
    if (shmdt(a) != 0)
      return 3;
    return shmctl(id, IPC_RMID, nullptr) == 0 ? 0 : 4;
  });
  expect_exited(c, 0);
  ASSERT_GE(out->shmid, 0);

  auto evs = col->wait_for(
      [&](const Event &e) { return e.pid == uint32_t(c.pid) && is_sysv_call(e.type); }, 4);
  ASSERT_EQ(evs.size(), 4u);
  std::sort(evs.begin(), evs.end(),
            [](const Event &a, const Event &b) { return a.ts_ns < b.ts_ns; });
  ASSERT_EQ(evs[0].type, EventType::shmget);
  ASSERT_EQ(evs[1].type, EventType::shmat);
  ASSERT_EQ(evs[2].type, EventType::shmdt);
  ASSERT_EQ(evs[3].type, EventType::shm_rmid);
  for (const auto &e : evs) {
    expect_header(e, c.pid, comm);
    EXPECT_EQ(e.tid, uint32_t(c.pid));
    EXPECT_EQ(e.kind, Kind::sysv);
    EXPECT_EQ(e.err, 0);
  }

  const Event &get = evs[0];
  EXPECT_EQ(get.shmid, out->shmid);
  EXPECT_EQ(get.ret, out->shmid);
  EXPECT_EQ(get.key, 0u);
  EXPECT_EQ(get.arg_size, mib);
  EXPECT_EQ(get.flags, uint32_t(IPC_CREAT | 0600));
  EXPECT_EQ(get.created, 1);

  const Event &at = evs[1];
  EXPECT_EQ(at.shmid, out->shmid);
  EXPECT_EQ(at.addr, out->addr);
  EXPECT_EQ(at.ret, 0); // the address is in addr, not in the 32-bit ret
  EXPECT_EQ(at.flags, 0u);

  const Event &dt = evs[2];
  EXPECT_EQ(dt.addr, out->addr);
  EXPECT_EQ(dt.shmid, -1); // the kernel does not say which segment
  EXPECT_EQ(dt.ret, 0);

  const Event &rm = evs[3];
  EXPECT_EQ(rm.shmid, out->shmid);
  EXPECT_EQ(rm.ret, 0);
}

TEST(SysvEvents, KeyedSegmentCreatedOnlyOnce) {
  // A key unlikely to be in use, derived from our pid; start from scratch.
  const key_t key = static_cast<key_t>(0x5b4d0000u | (uint32_t(getpid()) & 0xffffu));
  SegmentGuard guard{key};
  if (int old = shmget(key, 0, 0); old >= 0)
    shmctl(old, IPC_RMID, nullptr);
  SHMBPF_COLLECTOR(col);

  struct Out {
    std::array<int, 3> ids{-1, -1, -1};
  };
  Shared<Out> out;
  struct Call {
    std::string comm;
    size_t size;
    int flags;
    uint8_t created;
  };
  const std::array<Call, 3> calls{{
      {"sysv-key-new", 4096, IPC_CREAT | 0600, 1},
      {"sysv-key-get", 0, 0600, 0},
      {"sysv-key-again", 4096, IPC_CREAT | 0600, 0},
  }};
  std::array<pid_t, 3> pids{};
  for (size_t i = 0; i < calls.size(); i++) {
    const Call &call = calls[i];
    Child c = run_child(call.comm, [&] {
      out->ids[i] = shmget(key, call.size, call.flags);
      return out->ids[i] >= 0 ? 0 : 1;
    });
    expect_exited(c, 0);
    pids[i] = c.pid;
  }
  ASSERT_GE(out->ids[0], 0);
  EXPECT_EQ(out->ids[1], out->ids[0]);
  EXPECT_EQ(out->ids[2], out->ids[0]);

  for (size_t i = 0; i < calls.size(); i++) {
    SCOPED_TRACE(calls[i].comm);
    auto evs = col->wait_for(
        [&](const Event &e) { return e.pid == uint32_t(pids[i]) && e.type == EventType::shmget; });
    ASSERT_EQ(evs.size(), 1u);
    const Event &e = evs[0];
    expect_header(e, pids[i], calls[i].comm);
    EXPECT_EQ(e.tid, uint32_t(pids[i]));
    EXPECT_EQ(e.kind, Kind::sysv);
    EXPECT_EQ(e.key, static_cast<uint32_t>(key));
    EXPECT_EQ(e.shmid, out->ids[0]);
    EXPECT_EQ(e.ret, out->ids[0]);
    EXPECT_EQ(e.err, 0);
    EXPECT_EQ(e.arg_size, calls[i].size);
    EXPECT_EQ(e.flags, uint32_t(calls[i].flags));
    EXPECT_EQ(e.created, calls[i].created);
  }
}

// Exit events of pid, after giving a duplicate time to show up.
std::vector<Event> exits_of(Collector &col, pid_t pid) {
  auto pred = [&](const Event &e) { return e.type == EventType::exit && e.pid == uint32_t(pid); };
  auto evs = col.wait_for(pred);
  if (evs.empty())
    return evs;
  return col.wait_for(pred, 2, 300ms);
}

TEST(ProcessEvents, ExitCodeIsAWaitStatus) {
  SHMBPF_COLLECTOR(col);
  const std::string comm = "exit-seven";
  Child c = run_child(comm, [] { return 7; });
  expect_exited(c, 7);

  auto evs = exits_of(*col, c.pid);
  ASSERT_EQ(evs.size(), 1u);
  const Event &e = evs[0];
  expect_header(e, c.pid, comm);
  EXPECT_EQ(e.tid, uint32_t(c.pid));
  EXPECT_EQ(e.kind, Kind::none);
  EXPECT_EQ(e.exit_code, 7u << 8);
  EXPECT_EQ(e.ret, 0);
  EXPECT_EQ(e.err, 0);
}

TEST(ProcessEvents, OneExitPerProcessAfterThreadJoined) {
  SHMBPF_COLLECTOR(col);
  const std::string comm = "exit-joined";
  Child c = run_child(comm, [] {
    std::thread t([] { std::this_thread::sleep_for(100ms); });
    t.join();
    return 3;
  });
  expect_exited(c, 3);

  auto evs = exits_of(*col, c.pid);
  ASSERT_EQ(evs.size(), 1u);
  expect_header(evs[0], c.pid, comm);
  EXPECT_EQ(evs[0].tid, uint32_t(c.pid)); // the thread was gone first
  EXPECT_EQ(evs[0].exit_code, 3u << 8);
}

TEST(ProcessEvents, OneExitPerProcessOnExitGroup) {
  SHMBPF_COLLECTOR(col);
  // Threads that are still running when the main thread calls exit_group:
  // they all die together, and only the last one may report. Repeated,
  // because the threads race each other to the exit tracepoint.
  constexpr int rounds = 10;
  constexpr int nthreads = 4;
  struct Out {
    std::array<std::atomic<int>, nthreads> tids{};
  };
  for (int r = 0; r < rounds; r++) {
    SCOPED_TRACE("round " + std::to_string(r));
    Shared<Out> out;
    const std::string comm = "exit-group";
    Child c = run_child(comm, [&] {
      for (int i = 0; i < nthreads; i++)
        std::thread([&, i] {
          out->tids[i] = gettid();
          // Busy threads as well as sleeping ones.
          if (i % 2 == 0) {
            std::this_thread::sleep_for(5s);
          } else {
            volatile unsigned spin = 0;
            for (;;)
              spin = spin + 1;
          }
        }).detach();
      auto all_started = [&] {
        return std::all_of(out->tids.begin(), out->tids.end(),
                           [](const std::atomic<int> &t) { return t != 0; });
      };
      for (int i = 0; i < 1000 && !all_started(); i++)
        std::this_thread::sleep_for(1ms);
      syscall(SYS_exit_group, 4);
      return 99;
    });
    expect_exited(c, 4);

    auto evs = exits_of(*col, c.pid);
    ASSERT_EQ(evs.size(), 1u);
    const Event &e = evs[0];
    expect_header(e, c.pid, comm);
    EXPECT_EQ(e.exit_code, 4u << 8);
    bool known_tid = e.tid == uint32_t(c.pid);
    for (auto &t : out->tids)
      known_tid = known_tid || e.tid == uint32_t(t.load());
    EXPECT_TRUE(known_tid) << "tid " << e.tid;
  }
}

TEST(ProcessEvents, ExecOfBinTrue) {
  SHMBPF_COLLECTOR(col);
  Child c = run_child("exec-true", [] {
    execl("/bin/true", "true", static_cast<char *>(nullptr));
    return 127;
  });
  expect_exited(c, 0);

  auto evs = col->wait_for(
      [&](const Event &e) { return e.type == EventType::exec && e.pid == uint32_t(c.pid); });
  ASSERT_EQ(evs.size(), 1u);
  const Event &e = evs[0];
  // The header is taken after the exec: the comm is the new program's.
  expect_header(e, c.pid, "true");
  EXPECT_EQ(e.tid, uint32_t(c.pid));
  EXPECT_EQ(e.kind, Kind::none);
  EXPECT_EQ(e.old_pid, uint32_t(c.pid));
  EXPECT_EQ(e.ret, 0);
  char resolved[PATH_MAX];
  ASSERT_NE(realpath("/bin/true", resolved), nullptr);
  EXPECT_TRUE(e.filename == "/bin/true" || e.filename == resolved) << e.filename;
  // The program the kernel loaded: the file itself, not on shared memory.
  struct stat st {};
  ASSERT_EQ(stat(resolved, &st), 0);
  EXPECT_EQ(e.dev, kernel_dev(st.st_dev));
  EXPECT_EQ(e.ino, st.st_ino);
  // 0 on a disk; in an initramfs (the VM layer's guests) / is a tmpfs.
  struct statfs sfs {};
  ASSERT_EQ(statfs(resolved, &sfs), 0);
  EXPECT_EQ(e.fs, sfs.f_type == TMPFS_MAGIC ? 1 : 0) << std::hex << sfs.f_type;
  EXPECT_EQ(e.name, std::string(resolved).substr(std::string(resolved).rfind('/') + 1));

  auto ex = exits_of(*col, c.pid);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].comm, "true");
  EXPECT_EQ(ex[0].exit_code, 0u);
  EXPECT_GT(ex[0].ts_ns, e.ts_ns);
}

// A program run from a memfd (fexecve): the exec event names the memfd's
// inode on the kernel's own shm mount, which no mount table shows, so that
// `audit --watch` sees a fileless exec even when the process is gone.
TEST(ProcessEvents, ExecFromAMemfdNamesTheMemfd) {
  SHMBPF_COLLECTOR(col);
  struct stat mst {};
  Child c = run_child("exec-memfd", [&] {
    const int fd = static_cast<int>(syscall(SYS_memfd_create, "shmbpf-exec", 0));
    const int src = open("/bin/true", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || src < 0)
      return 126;
    char buf[65536];
    for (ssize_t n; (n = read(src, buf, sizeof buf)) > 0;)
      if (write(fd, buf, static_cast<size_t>(n)) != n)
        return 126;
    char *const argv[] = {const_cast<char *>("true"), nullptr};
    char *const envp[] = {nullptr};
    fexecve(fd, argv, envp);
    return 127;
  });
  expect_exited(c, 0);
  auto evs = col->wait_for(
      [&](const Event &e) { return e.type == EventType::exec && e.pid == uint32_t(c.pid); });
  ASSERT_EQ(evs.size(), 1u);
  const Event &e = evs[0];
  EXPECT_EQ(e.name, "memfd:shmbpf-exec");
  EXPECT_EQ(e.fs, 1); // tmpfs (enum shmbpf_fs)
  EXPECT_NE(e.ino, 0u);
  // The device is the one every memfd of this kernel has.
  const int probe = static_cast<int>(syscall(SYS_memfd_create, "shmbpf-exec-probe", 0));
  ASSERT_GE(probe, 0);
  ASSERT_EQ(fstat(probe, &mst), 0);
  close(probe);
  EXPECT_EQ(e.dev, kernel_dev(mst.st_dev));
}
TEST(Delivery, LostRecordsAreCounted) {
  // A one-page ring buffer nobody reads while a child floods it: the
  // records that do not fit must show up in lost(), not vanish.
  ProbeOptions opts;
  opts.ring_buffer_bytes = 4096;
  SHMBPF_SESSION(session, opts);
  constexpr int calls = 2000;
  const std::string comm = "memfd-flood";
  Child c = run_child(comm, [] {
    for (int i = 0; i < calls; i++) {
      int fd = memfd_create("flood", MFD_CLOEXEC);
      if (fd < 0)
        return 1;
      close(fd);
    }
    return 0;
  });
  expect_exited(c, 0);

  const uint64_t lost = session->lost();
  EXPECT_GT(lost, 0u);
  uint64_t delivered = 0;
  session->drain([&](Event &e) {
    if (e.type != EventType::memfd_create || e.pid != uint32_t(c.pid))
      return;
    delivered++;
    expect_header(e, c.pid, comm);
    EXPECT_EQ(e.kind, Kind::memfd);
    EXPECT_EQ(e.path, "flood");
    EXPECT_GE(e.fd, 0);
  });
  EXPECT_LE(delivered, uint64_t(calls));
  // lost() also counts other processes' records, so this is a lower bound.
  EXPECT_GE(delivered + lost, uint64_t(calls)) << delivered << " delivered, " << lost << " lost";
  EXPECT_GE(session->lost(), lost);
}

// A small ring read while it fills: the consumer position moves in
// batches, records of every size wrap around the ring's end, and each one
// comes out once, whole and in order. The light set's records end early, so
// their sizes vary with the name. Tests running alongside can overflow the
// ring: then what arrives must still be whole and in order, and all of it
// only when nothing was lost.
TEST(Delivery, ARingThatWrapsHandsOverEveryRecordInOrder) {
  ProbeOptions opts;
  opts.ring_buffer_bytes = 64 << 10; // wraps 9 times in the light set, 30 in the full one
  opts.hooks = HookSet::light;
  opts.light_or_full = true;
  SHMBPF_COLLECTOR(col, opts);
  constexpr int calls = 3000;
  auto name_of = [](int i) { return "wrap-" + std::to_string(i) + std::string(i % 61, 'x'); };
  Child c = run_child("ring-wrap", [&] {
    for (int i = 0; i <= calls; i++) { // the last one marks the end
      int fd = memfd_create(i == calls ? "wrap-end" : name_of(i).c_str(), MFD_CLOEXEC);
      if (fd < 0)
        return 1;
      close(fd);
      if (i % 20 == 19)
        usleep(2000); // a few KiB at a time: the reader keeps up
    }
    return 0;
  });
  expect_exited(c, 0);
  auto of_child = [&](const Event &e) {
    return e.type == EventType::memfd_create && e.pid == uint32_t(c.pid);
  };
  col->wait_for([&](const Event &e) { return of_child(e) && e.path == "wrap-end"; }, 1,
                std::chrono::seconds(10));
  const uint64_t lost = col->lost();
  const auto evs = col->wait_for(of_child, 0);
  int next = 0; // the least index the next record may have
  size_t whole = 0;
  for (const Event &e : evs) {
    if (e.path == "wrap-end")
      continue;
    ASSERT_TRUE(e.path.starts_with("wrap-")) << e.path;
    const int i = std::atoi(e.path.c_str() + 5);
    ASSERT_GE(i, next) << "out of order or twice: " << e.path;
    ASSERT_EQ(e.path, name_of(i)) << "not whole";
    next = i + 1;
    whole++;
  }
  EXPECT_GT(whole, 0u);
  if (lost == 0) {
    EXPECT_EQ(whole, size_t(calls));
  }
}

} // namespace
} // namespace shmbpf::test
