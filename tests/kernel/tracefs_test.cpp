// probe/tracefs: on a machine with no tracefs mounted, any number of
// probes started at the same moment all attach, each through a tracefs of
// its own that no other process sees, and the mount table they started
// from is the same afterwards. The machine is played by a mount namespace
// of the test's own with tracefs and debugfs taken out of it; the host's
// mounts are not touched.
#include "kernel/harness.hpp"

#include "decode/decode.hpp"
#include "probe/probe.hpp"
#include "probe/tracefs.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace shmbpf {
namespace {

using namespace std::chrono_literals;

constexpr int kProbes = 8;

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the children tell the test: each one's error, or that it attached
// and saw the record of the memfd made once all had attached.
struct Report {
  int setup = 0; // 0, or why the namespace could not be made (an errno)
  std::atomic<int> attached{0};
  int tracefs_in_namespace = 0;
  bool same_mounts = false; // nothing was mounted meanwhile
  bool saw[kProbes] = {};
  char error[kProbes][240] = {};
  char marker[64] = {};
};

void copy_text(char *to, size_t size, const std::string &what) {
  std::snprintf(to, size, "%s", what.c_str());
}

// One probe: attach, say so, then wait for the namespace's own process to
// make a memfd named report.marker and see its record.
int one_probe(Report &r, int i, pid_t maker) {
  try {
    Probe p(ProbeOptions{});
    if (!p.attached()) {
      copy_text(r.error[i], sizeof r.error[i], "not attached");
      return 1;
    }
    ++r.attached;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!r.saw[i] && std::chrono::steady_clock::now() < deadline) {
      p.poll(100, [&](const void *data, size_t len) {
        Event e;
        if (decode_event_into(data, len, e) && e.pid == static_cast<uint32_t>(maker) &&
            (e.path.find(r.marker) != std::string::npos ||
             e.name.find(r.marker) != std::string::npos))
          r.saw[i] = true;
      });
    }
    return r.saw[i] ? 0 : 1;
  } catch (const std::exception &e) {
    copy_text(r.error[i], sizeof r.error[i], e.what());
    return 1;
  }
}

// The namespace's first process: takes tracefs and debugfs away, starts
// the probes together, makes the memfd they wait for, and compares its
// mount table before and after.
int namespace_without_tracefs(Report &r) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
    r.setup = errno;
    return 1;
  }
  while (umount2("/sys/kernel/tracing", MNT_DETACH) == 0) {
  }
  while (umount2("/sys/kernel/debug", MNT_DETACH) == 0) {
  }
  const std::string before = read_text("/proc/self/mountinfo");
  r.tracefs_in_namespace = before.find(" - tracefs ") != std::string::npos;

  int gate[2];
  if (pipe(gate) != 0) {
    r.setup = errno;
    return 1;
  }
  std::array<pid_t, kProbes> kids{};
  for (int i = 0; i < kProbes; ++i) {
    kids[i] = fork();
    if (kids[i] == 0) {
      close(gate[1]);
      char c;
      if (read(gate[0], &c, 1) != 0) // EOF: everybody goes at once
        _exit(3);
      _exit(one_probe(r, i, getppid()));
    }
  }
  close(gate[0]);
  close(gate[1]);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (r.attached < kProbes && std::chrono::steady_clock::now() < deadline) {
    int status;
    if (waitpid(-1, &status, WNOHANG) > 0) // one failed: no point waiting for all
      break;
    std::this_thread::sleep_for(20ms);
  }
  const int fd = memfd_create(r.marker, MFD_CLOEXEC);
  if (fd >= 0)
    close(fd);
  for (pid_t k : kids)
    waitpid(k, nullptr, 0);
  // Nothing mounted: every line now was there before. (A test beside this
  // one may remove a directory that was a mount point when the namespace
  // was copied, which unmounts its copy here: lines may go.)
  std::istringstream after(read_text("/proc/self/mountinfo"));
  r.same_mounts = true;
  for (std::string line; std::getline(after, line);)
    r.same_mounts = r.same_mounts && before.find(line + "\n") != std::string::npos;
  return 0;
}

TEST(Tracefs, EightProbesStartedTogetherWithoutTracefsAllAttach) {
  // A load that cannot work at all is told as such, not as a race.
  { SHMBPF_LOADED(probe, Probe, ProbeOptions{}); }
  test::Shared<Report> r;
  std::snprintf(r->marker, sizeof r->marker, "kt-tracefs-%d", getpid());
  const test::Child c =
      test::run_child("kt-tracefs-ns", [&] { return namespace_without_tracefs(*r); });
  ASSERT_EQ(r->setup, 0) << "a mount namespace of the test's own: " << std::strerror(r->setup);
  ASSERT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << c.status;
  EXPECT_FALSE(r->tracefs_in_namespace) << "tracefs was still mounted in the test's namespace";
  for (int i = 0; i < kProbes; ++i) {
    EXPECT_STREQ(r->error[i], "") << "probe " << i;
    EXPECT_TRUE(r->saw[i]) << "probe " << i << " saw no record of the memfd " << r->marker;
  }
  EXPECT_EQ(r->attached.load(), kProbes);
  EXPECT_TRUE(r->same_mounts) << "something was mounted in the namespace";
}

// The private mount is the probe's alone: its directory is readable from
// any thread, and the process's own mount table never shows it.
TEST(Tracefs, APrivateMountIsNotInTheProcesssMountTable) {
  { SHMBPF_LOADED(probe, Probe, ProbeOptions{}); } // root, and a kernel shmbpf runs on
  struct Seen {
    int setup = 0;
    bool is_private = false, events = false, in_own_table = false, after = false;
  };
  test::Shared<Seen> s;
  const test::Child c = test::run_child("kt-tracefs-own", [&] {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
      s->setup = errno;
      return 1;
    }
    while (umount2("/sys/kernel/tracing", MNT_DETACH) == 0) {
    }
    while (umount2("/sys/kernel/debug", MNT_DETACH) == 0) {
    }
    try {
      Tracefs t;
      s->is_private = t.is_private();
      s->events = std::filesystem::exists(t.dir() + "/events/sched/sched_process_exit");
      s->in_own_table = read_text("/proc/self/mountinfo").find(" - tracefs ") != std::string::npos;
      bool here = false;
      t.run([&] { here = std::filesystem::exists("/sys/kernel/tracing/events/sched"); });
      s->after = here;
    } catch (const std::exception &) {
      return 2;
    }
    return 0;
  });
  ASSERT_EQ(s->setup, 0) << std::strerror(s->setup);
  ASSERT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << c.status;
  EXPECT_TRUE(s->is_private);
  EXPECT_TRUE(s->events) << "the private tracefs, read through the thread's root";
  EXPECT_FALSE(s->in_own_table) << "the process's mount namespace got a tracefs";
  EXPECT_TRUE(s->after) << "run() did not see tracefs at its usual path";
}

} // namespace
} // namespace shmbpf
