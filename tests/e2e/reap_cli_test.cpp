// `shmbpf reap` end to end, the binary itself: what a dry run reports and
// leaves alone, what --yes frees and how much the mount's usage drops, the
// filters, the exit statuses, the JSON, System V segments, and races with
// the running binary (a target opened, or removed by someone else, while
// reap holds it between its scan and its removal). Files live on a tmpfs of
// the test's own and segments have keys of its own: no reap here can reach
// another test's.
#include "e2e/reap_support.hpp"
#include "e2e/run_cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

std::string quoted(const std::string &s) { return "'" + s + "'"; }

// Runs the binary without a shell (as uid when not -1) and, while it runs,
// calls watch(pid) until it returns true or the process ends.
CliResult run_watched(const std::vector<std::string> &args, uid_t uid,
                      const std::function<bool(pid_t)> &watch = {}, int drop_cap = -1) {
  CliResult r;
  r.command = SHMBPF_BINARY;
  for (const auto &a : args)
    r.command += " " + a;
  char out_path[] = "/tmp/shmbpf-e2e-reap-out-XXXXXX",
       err_path[] = "/tmp/shmbpf-e2e-reap-err-XXXXXX";
  const int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0)
    return r;
  const pid_t pid = ForkGuard::fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (uid != static_cast<uid_t>(-1) &&
        (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
      _exit(125);
    // Out of the bounding set: root's exec then lacks it, as a daemon does
    // that systemd or a container bounds.
    if (drop_cap >= 0 && prctl(PR_CAPBSET_DROP, drop_cap, 0, 0, 0) != 0)
      _exit(126);
    std::vector<char *> argv{const_cast<char *>(SHMBPF_BINARY)};
    for (const auto &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(SHMBPF_BINARY, argv.data());
    _exit(127);
  }
  int st = 0;
  bool done = !watch;
  while (!done && waitpid(pid, &st, WNOHANG) == 0)
    done = watch(pid);
  if (waitpid(pid, &st, 0) == pid || errno == ECHILD)
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = file_text(out_path);
  r.err = file_text(err_path);
  close(out_fd);
  close(err_fd);
  unlink(out_path);
  unlink(err_path);
  return r;
}

// Whether pid holds path with an O_PATH descriptor: reap's hold on a target
// it chose, taken after its scan and kept past its last checks.
bool holds_o_path(pid_t pid, const std::string &path) {
  const std::string dir = "/proc/" + std::to_string(pid);
  DIR *d = opendir((dir + "/fd").c_str());
  if (!d)
    return false;
  bool found = false;
  while (const dirent *e = readdir(d)) {
    char link[4096];
    const std::string fd = dir + "/fd/" + e->d_name;
    const ssize_t n = readlink(fd.c_str(), link, sizeof link);
    if (n != static_cast<ssize_t>(path.size()) || path.compare(0, path.size(), link, n) != 0)
      continue;
    const std::string info = file_text(dir + "/fdinfo/" + e->d_name);
    const size_t at = info.find("flags:");
    if (at != std::string::npos && std::strtoul(info.c_str() + at + 6, nullptr, 8) & O_PATH) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

// Processes with many open fds: reap's fresh look at every process's fds
// takes longer, which widens the window between reap's first hold on a
// target and its removal that the race tests act in. Four of them, since
// one process's fds are capped by its limit (20,000 where raising it is
// not allowed), and one hog's 20,000 left that window shorter than a
// loaded machine takes to notice the hold and act, now and then.
std::vector<std::unique_ptr<Holder>> fd_hogs() {
  std::vector<std::unique_ptr<Holder>> hogs;
  for (int h = 0; h < 4; ++h)
    hogs.push_back(std::make_unique<Holder>([] {
      struct rlimit rl {
        40000, 40000
      };
      setrlimit(RLIMIT_NOFILE, &rl); // a smaller hog still works
      for (int i = 0; i < 30000; ++i)
        if (open("/dev/null", O_RDONLY) < 0)
          break;
      return true;
    }));
  return hogs;
}

TEST(ReapCli, DryRunChangesNothingAndReportsWhatWouldBeFreed) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string big = m.path("big"), small = m.path("small"), sparse = m.path("sparse");
  ASSERT_TRUE(make_orphan(big, (1 << 20) + 5000));
  ASSERT_TRUE(make_orphan(small, 100));
  {
    // 4 MiB long, one page written: bytes are what it occupies, not its size.
    const int fd = write_shm_file(sparse, 4096);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 4 << 20), 0);
    close(fd);
  }
  // An unlinked file a live process still holds: not a target (there is no
  // name to remove), listed as held.
  Holder keeper([&] {
    const std::string path = m.path("unlinked");
    const int fd = write_shm_file(path, 8192);
    return fd >= 0 && unlink(path.c_str()) == 0;
  });
  ASSERT_TRUE(keeper.ok());
  const std::vector<std::string> files{big, small, sparse};
  std::map<std::string, FileSnap> before;
  for (const auto &f : files)
    before[f] = snap(f);
  const uint64_t used = m.used_bytes();

  auto r = run_shmbpf("reap --json --min-age 0 --mount " + m.dir());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = r.json();
  for (const char *key : {"dry_run", "selected", "freed", "would_free", "skipped", "gone",
                          "bytes_freed", "bytes_would_free", "bytes_skipped", "segments", "held"})
    EXPECT_TRUE(j.contains(key)) << key << " missing: " << r.out;
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["selected"], 3);
  EXPECT_EQ(j["would_free"], 3);
  EXPECT_EQ(j["freed"], 0);
  EXPECT_EQ(j["skipped"], 0);
  EXPECT_EQ(j["gone"], 0);
  EXPECT_EQ(j["bytes_freed"], 0);
  const auto segs = by_path(j);
  ASSERT_EQ(segs.size(), 3u) << r.out;
  uint64_t total = 0;
  for (const auto &f : files) {
    SCOPED_TRACE(f);
    ASSERT_TRUE(segs.count(f)) << r.out;
    const json &s = segs.at(f);
    EXPECT_EQ(s["status"], "would-free");
    EXPECT_TRUE(s["reason"].is_null());
    EXPECT_TRUE(s["detail"].is_null());
    EXPECT_EQ(s["holders"], json::array());
    EXPECT_EQ(s["bytes"], resident(f)) << "st_blocks * 512";
    EXPECT_EQ(s["segment"]["kind"], "tmpfs");
    EXPECT_EQ(s["segment"]["ino"], before[f].ino);
    EXPECT_EQ(s["segment"]["mount"], m.dir());
    EXPECT_EQ(s["segment"]["orphan"], true);
    total += resident(f);
  }
  EXPECT_EQ(segs.at(sparse)["bytes"], 4096);
  EXPECT_EQ(j["bytes_would_free"], total);
  ASSERT_EQ(j["held"].size(), 1u) << r.out;
  EXPECT_EQ(j["held"][0]["holders"], json::array({keeper.pid()}));
  EXPECT_EQ(j["held"][0]["state"], "unlinked");

  for (const auto &f : files)
    EXPECT_EQ(snap(f), before[f]) << f << " changed in a dry run";
  EXPECT_EQ(m.used_bytes(), used);

  auto text = run_shmbpf("reap --min-age 0 --mount " + m.dir());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("would free 3 of 3 segments"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("dry run: nothing was removed"), std::string::npos) << text.out;
  for (const auto &f : files)
    EXPECT_NE(text.out.find(f), std::string::npos) << text.out;
  for (const auto &f : files)
    EXPECT_EQ(snap(f), before[f]);
}

TEST(ReapCli, YesFreesAndTheMountUsageDropsByTheReportedBytes) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  ASSERT_EQ(mkdir(m.path("job").c_str(), 0755), 0);
  const std::vector<std::string> files{m.path("a"), m.path("job/b"), m.path("job/c")};
  size_t size = 3 << 20;
  uint64_t total = 0;
  for (const auto &f : files) {
    ASSERT_TRUE(make_orphan(f, size));
    total += resident(f);
    size /= 3;
  }
  const uint64_t used = m.used_bytes();

  auto r = run_shmbpf("reap --yes --json --min-age 0 --mount " + m.dir());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = r.json();
  EXPECT_EQ(j["dry_run"], false);
  EXPECT_EQ(j["selected"], 3);
  EXPECT_EQ(j["freed"], 3);
  EXPECT_EQ(j["would_free"], 0);
  EXPECT_EQ(j["bytes_freed"], total);
  for (const auto &[path, s] : by_path(j)) {
    EXPECT_EQ(s["status"], "freed") << s;
    EXPECT_FALSE(exists(path)) << path;
  }
  EXPECT_EQ(by_path(j).size(), 3u);
  EXPECT_EQ(used - m.used_bytes(), j["bytes_freed"].get<uint64_t>());
  EXPECT_TRUE(exists(m.path("job"))) << "a directory is not reaped";

  auto again = run_shmbpf("reap --yes --min-age 0 --mount " + m.dir());
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to reap"), std::string::npos) << again.out;
}

// Without CAP_LEASE (a daemon bounded as the systemd unit bounds it),
// another user's file gets no lease: whether a handle no process shows
// holds it is unknown, and it is left. Root's own file is freed.
TEST(ReapCli, AnotherUsersFileIsLeftWithoutCapLease) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string mine = m.path("root-own"), theirs = m.path("nobody-own");
  ASSERT_TRUE(make_orphan(mine, 65536));
  ASSERT_TRUE(make_orphan(theirs, 65536));
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  const CliResult r = run_watched({"reap", "--yes", "--json", "--min-age", "0", "--mount", m.dir()},
                                  -1, {}, CAP_LEASE);
  ASSERT_EQ(r.code, 1) << r.out << r.err; // something selected was skipped
  const std::map<std::string, json> s = by_path(json::parse(r.out));
  ASSERT_EQ(s.count(mine) + s.count(theirs), 2u) << r.out;
  EXPECT_EQ(s.at(mine)["status"], "freed") << s.at(mine);
  EXPECT_EQ(s.at(theirs)["status"], "skipped") << s.at(theirs);
  EXPECT_EQ(s.at(theirs)["reason"], "failed") << s.at(theirs);
  EXPECT_NE(s.at(theirs)["detail"].get<std::string>().find("CAP_LEASE"), std::string::npos);
  EXPECT_FALSE(exists(mine));
  EXPECT_TRUE(exists(theirs));
  // With every capability, the same file is freed.
  auto root = run_shmbpf("reap --yes --json --min-age 0 --mount " + m.dir());
  ASSERT_EQ(root.code, 0) << root.out << root.err;
  EXPECT_FALSE(exists(theirs));
}

TEST(ReapCli, FiltersChooseWhatIsReaped) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m, other;
  ASSERT_EQ(m.error(), "");
  ASSERT_EQ(other.error(), "");
  const std::string keep = m.path("keep-1"), take = m.path("take-1"),
                    elsewhere = other.path("take-2");
  for (const auto &f : {keep, take, elsewhere})
    ASSERT_TRUE(make_orphan(f, 64 << 10));
  const FileSnap keep_before = snap(keep), elsewhere_before = snap(elsewhere);

  // The default --min-age (600 s) keeps a fresh orphan.
  auto young = run_shmbpf("reap --yes --json --mount " + m.dir());
  EXPECT_EQ(young.code, 0) << young.err;
  EXPECT_EQ(young.json()["selected"], 0) << young.out;
  EXPECT_TRUE(exists(keep) && exists(take));

  // Files are not System V segments.
  auto sysv = run_shmbpf("reap --yes --json --kind sysv --min-age 0 --mount " + m.dir());
  EXPECT_EQ(sysv.code, 0) << sysv.err;
  EXPECT_EQ(sysv.json()["selected"], 0) << sysv.out;
  EXPECT_TRUE(exists(keep) && exists(take));

  // --match on the path; --mount keeps the other mount out.
  auto match = run_shmbpf("reap --yes --json --min-age 0 --kind tmpfs --match " +
                          quoted(m.dir() + "/take-*") + " --mount " + m.dir());
  EXPECT_EQ(match.code, 0) << match.err;
  const auto freed = by_path(match.json());
  ASSERT_EQ(freed.size(), 1u) << match.out;
  EXPECT_EQ(freed.begin()->first, take);
  EXPECT_FALSE(exists(take));
  EXPECT_EQ(snap(keep), keep_before);
  EXPECT_EQ(snap(elsewhere), elsewhere_before);

  auto mount = run_shmbpf("reap --yes --json --min-age 0 --mount " + other.dir());
  EXPECT_EQ(mount.code, 0) << mount.err;
  const auto freed2 = by_path(mount.json());
  ASSERT_EQ(freed2.size(), 1u) << mount.out;
  EXPECT_EQ(freed2.begin()->first, elsewhere);
  EXPECT_FALSE(exists(elsewhere));
  EXPECT_EQ(snap(keep), keep_before);
}

TEST(ReapCli, ExitStatusTwoOnBadFlagsAndWithoutRoot) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string f = m.path("orphan");
  ASSERT_TRUE(make_orphan(f, 8192));
  const FileSnap before = snap(f);

  EXPECT_EQ(run_shmbpf("reap --bogus").code, 2);
  auto memfd = run_shmbpf("reap --kind memfd --mount " + m.dir());
  EXPECT_EQ(memfd.code, 2) << memfd.out << memfd.err;
  EXPECT_EQ(run_shmbpf("reap --min-age -1 --mount " + m.dir()).code, 2);
  EXPECT_EQ(run_shmbpf("reap --help").code, 0);

  // As nobody (65534): refused, nothing removed.
  auto nobody = run_watched({"reap", "--yes", "--min-age", "0", "--mount", m.dir()}, 65534);
  EXPECT_EQ(nobody.code, 2) << nobody.out << nobody.err;
  EXPECT_NE(nobody.err.find("needs root"), std::string::npos) << nobody.err;
  EXPECT_EQ(snap(f), before);
}

// Runs `reap --yes --json` on the mount and calls act once reap holds
// victim (after its scan chose it, before its last checks). A few tries:
// the act must land inside that window. The caller starts fd_hogs() first.
struct Race {
  CliResult cli;
  json doc;
};
Race race_reap(const ReapMount &m, const std::string &victim, const std::string &control,
               const std::function<void()> &act) {
  Race race;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (!exists(victim))
      make_orphan(victim, 128 << 10);
    if (!exists(control))
      make_orphan(control, 64 << 10);
    bool acted = false;
    race.cli = run_watched({"reap", "--yes", "--json", "--min-age", "0", "--mount", m.dir()}, -1,
                           [&](pid_t pid) {
                             if (holds_o_path(pid, victim)) {
                               act();
                               acted = true;
                             }
                             return acted;
                           });
    if (acted) {
      race.doc = race.cli.json();
      return race;
    }
  }
  ADD_FAILURE() << "reap never held " << victim << " while running: " << race.cli.out
                << race.cli.err;
  return race;
}

TEST(ReapCli, TargetOpenedAtRemovalIsHeldAndExitsOne) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string victim = m.path("victim"), control = m.path("control");
  // reap's look at every process goes by ascending pid and lists the pids
  // when it starts: the opener exists already (a process started during
  // that look would not be in it), after the hog that makes the look long.
  const auto hogs = fd_hogs();
  int opened[2];
  ASSERT_EQ(pipe2(opened, O_CLOEXEC), 0);
  GatedFork opener = fork_gated("e2e-reap-opener", [&] {
    const int fd = open(victim.c_str(), O_RDONLY);
    const char c = fd >= 0 ? 'k' : 'f';
    if (write(opened[1], &c, 1) != 1 || fd < 0)
      return 1;
    for (;;)
      pause();
  });
  close(opened[1]);
  struct Stop {
    pid_t pid;
    ~Stop() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } stop{opener.pid};
  char reply = 0;
  const Race race = race_reap(m, victim, control, [&] {
    const char go = 1;
    if (write(opener.gate_fd, &go, 1) != 1 || read(opened[0], &reply, 1) != 1)
      reply = 0;
  });
  close(opener.gate_fd);
  close(opened[0]);
  ASSERT_EQ(reply, 'k') << "the opener could not open the file";
  EXPECT_EQ(race.cli.code, 1) << race.cli.out << race.cli.err;
  const auto segs = by_path(race.doc);
  ASSERT_TRUE(segs.count(victim) && segs.count(control)) << race.cli.out;
  EXPECT_EQ(segs.at(victim)["status"], "skipped");
  EXPECT_EQ(segs.at(victim)["reason"], "held");
  EXPECT_EQ(segs.at(victim)["holders"], json::array({opener.pid}));
  EXPECT_TRUE(exists(victim));
  EXPECT_EQ(segs.at(control)["status"], "freed");
  EXPECT_FALSE(exists(control));
  EXPECT_EQ(race.doc["skipped"], 1);
  EXPECT_EQ(race.doc["bytes_skipped"], resident(victim));
}

TEST(ReapCli, TargetRemovedBySomeoneElseIsGoneAndExitsZero) {
  SHMBPF_REQUIRE_ROOT();
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string victim = m.path("victim"), control = m.path("control");
  const auto hogs = fd_hogs();
  const Race race = race_reap(m, victim, control, [&] { unlink(victim.c_str()); });
  EXPECT_EQ(race.cli.code, 0) << race.cli.out << race.cli.err;
  const auto segs = by_path(race.doc);
  ASSERT_TRUE(segs.count(victim) && segs.count(control)) << race.cli.out;
  EXPECT_EQ(segs.at(victim)["status"], "gone");
  EXPECT_EQ(segs.at(victim)["reason"], "vanished");
  EXPECT_EQ(segs.at(control)["status"], "freed");
  EXPECT_FALSE(exists(control));
  EXPECT_EQ(race.doc["gone"], 1);
  EXPECT_EQ(race.doc["skipped"], 0);
}

TEST(ReapCli, SysvDetachedOrphanIsRemovedAttachedOnesAreNot) {
  SHMBPF_REQUIRE_ROOT();
  SegmentGuard guard;
  const key_t orphan_key = unique_key(0x10), attached_key = unique_key(0x11),
              lpid_key = unique_key(0x12);
  for (key_t k : {orphan_key, attached_key, lpid_key})
    ASSERT_NE(k, IPC_PRIVATE);
  const int orphan = orphan_segment(orphan_key, 1 << 20);
  ASSERT_GE(orphan, 0);
  guard.ids.push_back(orphan);
  // Attached by a live process.
  int attached = -1;
  Holder attacher([&] { return make_sysv_segment(attached_key, 64 << 10, true) >= 0; });
  ASSERT_TRUE(attacher.ok());
  attached = shmget(attached_key, 0, 0);
  ASSERT_GE(attached, 0);
  guard.ids.push_back(attached);
  // Its creator exited; a live process attached and detached it since.
  const int lpid = orphan_segment(lpid_key, 64 << 10);
  ASSERT_GE(lpid, 0);
  guard.ids.push_back(lpid);
  Holder toucher([&] {
    void *p = shmat(lpid, nullptr, 0);
    return p != reinterpret_cast<void *>(-1) && shmdt(p) == 0;
  });
  ASSERT_TRUE(toucher.ok());

  const std::string match = quoted("SYSV" + sysv_key_prefix() + "*");
  auto dry = run_shmbpf("reap --json --kind sysv --min-age 0 --match " + match);
  EXPECT_EQ(dry.code, 1) << dry.out << dry.err;
  auto r = run_shmbpf("reap --yes --json --kind sysv --min-age 0 --match " + match);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const json j = r.json();
  std::map<int, json> segs;
  for (const auto &s : j["segments"])
    segs.emplace(s["segment"]["shmid"].get<int>(), s);
  ASSERT_TRUE(segs.count(orphan) && segs.count(lpid)) << r.out;
  EXPECT_FALSE(segs.count(attached)) << "an attached segment is no orphan: " << r.out;
  EXPECT_EQ(segs.at(orphan)["status"], "freed");
  EXPECT_EQ(segs.at(orphan)["bytes"], 1 << 20);
  EXPECT_EQ(segs.at(orphan)["segment"]["kind"], "sysv");
  EXPECT_EQ(segs.at(orphan)["segment"]["sysv_key"], static_cast<uint32_t>(orphan_key));
  EXPECT_EQ(segs.at(lpid)["status"], "skipped");
  EXPECT_EQ(segs.at(lpid)["reason"], "last-attacher-alive");
  EXPECT_EQ(j["freed"], 1);
  EXPECT_EQ(j["skipped"], 1);

  EXPECT_FALSE(segment_exists(orphan));
  EXPECT_EQ(shmget(orphan_key, 0, 0), -1);
  EXPECT_TRUE(segment_exists(attached));
  EXPECT_TRUE(segment_exists(lpid));
  // ipcs agrees: the freed key is gone, the others are listed.
  char key_text[16];
  std::snprintf(key_text, sizeof key_text, "0x%08x", static_cast<unsigned>(orphan_key));
  FILE *p = popen("ipcs -m", "r");
  ASSERT_NE(p, nullptr);
  std::string ipcs;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    ipcs.append(buf, n);
  pclose(p);
  EXPECT_EQ(ipcs.find(key_text), std::string::npos) << ipcs;
  std::snprintf(key_text, sizeof key_text, "0x%08x", static_cast<unsigned>(attached_key));
  EXPECT_NE(ipcs.find(key_text), std::string::npos) << ipcs;
}

} // namespace
} // namespace shmbpf::test
