// `shmbpf serve --export-file` end to end: real files made and removed in
// /dev/shm by children whose pids are known, found in the NDJSON with their
// pid, path and inode; a real leak reported as an orphan and as gone once
// removed; mode 0600; logrotate's move and SIGHUP losing nothing; rotation
// by size keeping N backups of valid JSON lines; SIGTERM leaving the last
// events in the file; a ring buffer too small for a burst, its losses told
// in lost records; a file that takes nothing (a hung disk) holding up
// neither the loop nor SIGTERM for long; paths that cannot be written
// refused at start.
#include "background.hpp"
#include "export_records.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

unsigned mode_of(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(ServeExport, EventsOrphansReopenAndSigtermInTheFile) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const std::string file = (dir.path / "x.ndjson").string();
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", file});
  SHMBPF_SERVE_READY(serve, port);
  EXPECT_EQ(mode_of(file), 0600u);
  const std::string prefix = "/dev/shm/shmbpf-e2e-export-" + std::to_string(getpid()) + "-";

  // A file made and removed by a child: its create and its unlink, with the
  // child's pid and the file's inode.
  Shared<uint64_t> ino;
  bool ok = false;
  const std::string plain = prefix + "plain";
  const pid_t maker = run_child(
      [&] {
        *ino = make_file(plain, 4096);
        return *ino != 0 && unlink(plain.c_str()) == 0 ? 0 : 1;
      },
      ok);
  ASSERT_TRUE(ok);
  auto created = wait_record(
      file, [&](const json &j) { return is(j, "create", plain) && j["pid"] == maker; }, 20s);
  ASSERT_TRUE(created) << serve.err();
  EXPECT_EQ((*created)["ino"], *ino);
  EXPECT_EQ((*created)["kind"], "tmpfs");
  EXPECT_EQ((*created)["new"], true);
  for (const char *k : {"container_known", "container_id", "container_runtime", "container_name",
                        "pod_uid", "pod", "namespace", "time", "comm"})
    EXPECT_TRUE(created->contains(k)) << k;
  auto removed = wait_record(
      file, [&](const json &j) { return is(j, "unlink", plain) && j["pid"] == maker; }, 10s);
  ASSERT_TRUE(removed);
  EXPECT_EQ((*removed)["ino"], *ino);

  // A leak: made by a child that exits; nobody holds it.
  const std::string leak = prefix + "leak";
  struct Unlink {
    std::string path;
    ~Unlink() { unlink(path.c_str()); }
  } unlink_leak{leak};
  const pid_t leaker = run_child(
      [&] {
        *ino = make_file(leak, 8192);
        return *ino != 0 ? 0 : 1;
      },
      ok);
  ASSERT_TRUE(ok);
  auto orphan = wait_record(
      file, [&](const json &j) { return is(j, "orphan", leak); }, 20s);
  ASSERT_TRUE(orphan) << serve.err();
  EXPECT_EQ((*orphan)["ino"], *ino);
  EXPECT_EQ((*orphan)["kind"], "tmpfs");
  EXPECT_EQ((*orphan)["mountpoint"], "/dev/shm");
  EXPECT_EQ((*orphan)["creator_pid"], leaker);
  EXPECT_EQ((*orphan)["creator_known"], true);
  ASSERT_EQ(unlink(leak.c_str()), 0);
  auto gone = wait_record(
      file, [&](const json &j) { return is(j, "orphan_gone", leak); }, 20s);
  ASSERT_TRUE(gone) << serve.err();
  EXPECT_EQ((*gone)["ino"], *ino);
  EXPECT_EQ((*gone)["exists"], false);
  // Once each.
  size_t orphans = 0;
  for (const json &j : records_of(file))
    orphans += is(j, "orphan", leak);
  EXPECT_EQ(orphans, 1u);

  // logrotate moves the file away and sends SIGHUP while a child keeps
  // making and removing files: every one of them is in one file or the
  // other, and the fresh file is made with mode 0600. The child goes on
  // until the fresh file has one of its records (on a loaded machine the
  // signal is handled a while after it is sent), then says how many it made.
  constexpr int kMaxFiles = 20000;
  const std::string busy = prefix + "busy-";
  int stop[2], made[2];
  ASSERT_EQ(pipe(stop), 0);
  ASSERT_EQ(pipe(made), 0);
  const pid_t worker = ForkGuard::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    close(stop[1]);
    close(made[0]);
    fcntl(stop[0], F_SETFL, O_NONBLOCK);
    int n = 0;
    char c;
    for (; n < kMaxFiles && read(stop[0], &c, 1) != 0; ++n) { // 0: the test closed it
      const std::string p = busy + std::to_string(n);
      if (make_file(p, 0) == 0 || unlink(p.c_str()) != 0)
        _exit(1);
      usleep(5000);
    }
    _exit(write(made[1], &n, sizeof n) == sizeof n ? 0 : 2);
  }
  close(stop[0]);
  close(made[1]);
  auto of_worker = [&](const json &j) {
    return j.value("pid", 0) == worker && j.value("path", "").starts_with(busy);
  };
  // Moved once the first of them is in the file (not after a fixed time:
  // on a loaded machine the child may not have begun by then).
  ASSERT_TRUE(wait_record(file, of_worker, 20s)) << serve.err();
  const std::string moved = file + ".old";
  ASSERT_EQ(rename(file.c_str(), moved.c_str()), 0);
  std::this_thread::sleep_for(200ms);
  serve.signal(SIGHUP);
  const bool reopened = wait_record(file, of_worker, 20s).has_value();
  close(stop[1]);
  int n = 0;
  const bool told = read(made[0], &n, sizeof n) == sizeof n;
  close(made[0]);
  int st = 0;
  ASSERT_EQ(waitpid(worker, &st, 0), worker);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_TRUE(reopened) << "no record of the child in the fresh file\n" << serve.err();
  ASSERT_TRUE(told && n > 0);
  // The last of them in the new file, then count across both.
  const std::string last = busy + std::to_string(n - 1);
  ASSERT_TRUE(wait_record(
      file, [&](const json &j) { return is(j, "unlink", last) && j["pid"] == worker; }, 20s))
      << serve.err();
  EXPECT_EQ(mode_of(file), 0600u);
  size_t creates = 0, unlinks = 0, in_new = 0;
  for (const std::string &f : {moved, file})
    for (const json &j : records_of(f)) {
      if (j.value("pid", 0) != worker || !j.value("path", "").starts_with(busy))
        continue;
      creates += j["event"] == "create";
      unlinks += j["event"] == "unlink";
      in_new += f == file;
    }
  EXPECT_EQ(creates, static_cast<size_t>(n));
  EXPECT_EQ(unlinks, static_cast<size_t>(n));
  EXPECT_GT(in_new, 0u);
  EXPECT_LT(in_new, 2u * static_cast<size_t>(n)); // some went to the moved file

  // /metrics counts what was written, and promtool accepts the families.
  auto m = get(port, "/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_GE(metric(m->body, "shmbpf_export_records_total", {}).value_or(0), 2.0 * n);
  EXPECT_EQ(metric(m->body, "shmbpf_export_errors_total", {}), 0);
  EXPECT_EQ(metric(m->body, "shmbpf_export_dropped_records_total", {}), 0);
  expect_promtool_accepts(m->body);

  // A last file, and SIGTERM at once: its events are in the file at exit.
  const std::string final_path = prefix + "final";
  const pid_t finisher = run_child(
      [&] { return make_file(final_path, 0) != 0 && unlink(final_path.c_str()) == 0 ? 0 : 1; }, ok);
  ASSERT_TRUE(ok);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(20s), 0);
  bool final_create = false, final_unlink = false;
  for (const json &j : records_of(file)) {
    final_create = final_create || (is(j, "create", final_path) && j["pid"] == finisher);
    final_unlink = final_unlink || (is(j, "unlink", final_path) && j["pid"] == finisher);
  }
  EXPECT_TRUE(final_create && final_unlink) << serve.err();
  const std::string log = serve.err();
  for (const std::string &want :
       {"exporting events to " + file, std::string("SIGHUP: reopening the export file"),
        "export file " + file + " reopened", std::string("records exported")})
    EXPECT_NE(log.find(want), std::string::npos) << want << " not in\n" << log;
}

TEST(ServeExport, RotationKeepsTheNewestBackupsOfWholeLines) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const std::string file = (dir.path / "r.ndjson").string();
  const std::vector<std::string> files = {file + ".2", file + ".1", file}; // oldest first
  const int port = free_port();
  // 0.05 MiB: some 80 records a file, a few rotations for the workload.
  constexpr size_t kLimit = 52429;
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", file,
                       "--export-file-max-size-mb", "0.05", "--export-file-max-backups", "2"});
  SHMBPF_SERVE_READY(serve, port);
  const std::string prefix = "/dev/shm/shmbpf-e2e-rotate-" + std::to_string(getpid()) + "-";
  bool ok = false;
  // When the child starts its last unlink (CLOCK_BOOTTIME, as records'
  // ts_ns): every record after that is newer than all of the child's but one.
  auto *last_ns = static_cast<uint64_t *>(
      mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(last_ns, MAP_FAILED);
  run_child(
      [&] {
        for (int i = 0; i < 200; ++i) {
          const std::string p = prefix + std::to_string(i);
          if (make_file(p, 0) == 0)
            return 1;
          timespec now{};
          clock_gettime(CLOCK_BOOTTIME, &now);
          *last_ns = uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
          if (unlink(p.c_str()) != 0)
            return 1;
        }
        return 0;
      },
      ok);
  ASSERT_TRUE(ok);
  const uint64_t child_last_ns = *last_ns;
  munmap(last_ns, sizeof(uint64_t));
  // The child's files by number, in the order the kept files hold them.
  auto numbers = [&] {
    std::vector<int> out;
    for (const std::string &f : files)
      for (const json &j : records_of(f))
        if (j.value("path", "").starts_with(prefix))
          out.push_back(std::stoi(j.value("path", "").substr(prefix.size())));
    return out;
  };
  // Other processes' events keep coming: the last one may be in any file.
  const auto deadline = Clock::now() + 20s;
  while (Clock::now() < deadline) {
    const std::vector<int> n = numbers();
    if (std::count(n.begin(), n.end(), 199) == 2)
      break;
    std::this_thread::sleep_for(200ms);
  }
  auto m = get(port, "/metrics");
  ASSERT_TRUE(m);
  EXPECT_GE(metric(m->body, "shmbpf_export_rotations_total", {}).value_or(0), 3);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(20s), 0);

  EXPECT_FALSE(fs::exists(file + ".3"));
  for (const std::string &f : files) {
    ASSERT_TRUE(fs::exists(f)) << f;
    EXPECT_EQ(mode_of(f), 0600u) << f;
    std::ifstream in(f, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    const std::string text = s.str();
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_EQ(text.back(), '\n') << f;
    // Every line JSON (records_of fails the test otherwise), and past the
    // limit only as far as one record longer than it goes.
    const size_t lines = records_of(f).size();
    EXPECT_GT(lines, 0u);
    if (lines > 1) {
      EXPECT_LE(text.size(), kLimit) << f;
    }
  }
  // The newest records in the newest file, in order, ending with the last
  // file's create and unlink.
  const std::vector<int> n = numbers();
  if (n.empty()) {
    // Other tests running meanwhile (ctest -j) made more events after the
    // child than the kept files hold: then every record kept must be newer
    // than the child's last unlink began, since rotation drops the oldest.
    uint64_t oldest = UINT64_MAX;
    for (const std::string &f : files)
      for (const json &j : records_of(f))
        oldest = std::min<uint64_t>(oldest, j.value("ts_ns", uint64_t{0}));
    EXPECT_GE(oldest, child_last_ns) << "the child's records were dropped for older ones";
    return;
  }
  ASSERT_GE(n.size(), 2u);
  EXPECT_TRUE(std::is_sorted(n.begin(), n.end()));
  EXPECT_EQ(std::count(n.begin(), n.end(), 199), 2) << serve.err();
  EXPECT_LT(n.front(), 190); // more than the last few: rotation kept older ones
}

TEST(ServeExport, WhatTheKernelLostIsCountedInLostRecords) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const std::string file = (dir.path / "l.ndjson").string();
  const int port = free_port();
  // The smallest ring buffer: a page, a dozen records.
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", file,
                       "--ring-buffer-size", "4096"});
  SHMBPF_SERVE_READY(serve, port);
  const std::string prefix = "/dev/shm/shmbpf-e2e-lost-" + std::to_string(getpid()) + "-";
  bool ok = false;
  run_child(
      [&] {
        for (int i = 0; i < 3000; ++i) {
          const std::string p = prefix + std::to_string(i);
          const int fd = open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
          if (fd < 0)
            return 1;
          close(fd);
          unlink(p.c_str());
        }
        return 0;
      },
      ok);
  ASSERT_TRUE(ok);
  // The lost records add up to what /metrics says the kernel lost.
  double lost = 0;
  uint64_t told = 0;
  size_t records = 0;
  const auto deadline = Clock::now() + 20s;
  do {
    std::this_thread::sleep_for(300ms);
    auto m = get(port, "/metrics");
    ASSERT_TRUE(m && m->status == 200);
    lost = metric(m->body, "shmbpf_events_lost_total", {}).value_or(0);
    told = 0;
    records = 0;
    for (const json &j : records_of(file))
      if (j.value("event", "") == "lost") {
        ++records;
        told += j["count"].get<uint64_t>();
        EXPECT_EQ(j["total"].get<uint64_t>(), told);
        EXPECT_GT(j["count"].get<uint64_t>(), 0u);
      }
  } while ((lost == 0 || static_cast<double>(told) != lost) && Clock::now() < deadline);
  EXPECT_GT(lost, 0) << "no loss with a 4 KiB ring buffer";
  EXPECT_EQ(static_cast<double>(told), lost);
  EXPECT_GE(records, 1u);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(20s), 0);
}

// A FUSE mount (bindfs) whose daemon is stopped: every write to a file on
// it waits, as on a hung disk (serve refuses a FIFO: tests/attack).
class HungDisk {
public:
  explicit HungDisk(const fs::path &dir) : src_(dir / "src"), mnt_(dir / "mnt") {
    fs::create_directories(src_);
    fs::create_directories(mnt_);
    mounted_ = std::system(("bindfs " + src_.string() + " " + mnt_.string()).c_str()) == 0;
  }
  ~HungDisk() {
    resume();
    // Best effort: nothing to do when it fails.
    if (std::system(("umount -l " + mnt_.string() + " 2>/dev/null").c_str()) != 0) {
    }
  }
  bool mounted() const { return mounted_; }
  const fs::path &dir() const { return mnt_; }
  // The daemon stops answering: what is written waits.
  bool hang() {
    const std::string pid =
        run_out("pgrep -f -x 'bindfs " + src_.string() + " " + mnt_.string() + "'");
    pid_ = std::atoi(pid.c_str());
    return pid_ > 0 && kill(pid_, SIGSTOP) == 0;
  }
  void resume() {
    if (pid_ > 0)
      kill(pid_, SIGCONT);
  }

private:
  static std::string run_out(const std::string &cmd) {
    std::string out;
    if (FILE *p = popen(cmd.c_str(), "r")) {
      char buf[64];
      while (fgets(buf, sizeof buf, p))
        out += buf;
      pclose(p);
    }
    return out;
  }
  fs::path src_, mnt_;
  bool mounted_ = false;
  pid_t pid_ = 0;
};

TEST(ServeExport, AStuckFileNeitherStallsTheLoopNorHoldsUpSigtermForever) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  HungDisk disk(dir.path);
  ASSERT_TRUE(disk.mounted()) << "bindfs (scripts/deps.sh --tests)";
  const std::string stuck = (disk.dir() / "stuck.ndjson").string();
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", stuck});
  SHMBPF_SERVE_READY(serve, port);
  // Whatever happens below, the disk answers again before serve is waited
  // for (its writer cannot end before).
  struct Resume {
    HungDisk &disk;
    ~Resume() { disk.resume(); }
  } resume{disk};
  ASSERT_TRUE(disk.hang());
  auto unlinks = [&] {
    auto m = get(port, "/metrics");
    return m ? metric(m->body, "shmbpf_events_total", {"event=\"unlink\""}).value_or(0) : -1;
  };
  const double before = unlinks();
  constexpr int kFiles = 500;
  const std::string prefix = "/dev/shm/shmbpf-e2e-stuck-" + std::to_string(getpid()) + "-";
  bool ok = false;
  run_child(
      [&] {
        for (int i = 0; i < kFiles; ++i) {
          const std::string p = prefix + std::to_string(i);
          if (make_file(p, 0) == 0 || unlink(p.c_str()) != 0)
            return 1;
        }
        return 0;
      },
      ok);
  ASSERT_TRUE(ok);
  // The loop applies every event all the same, and stays healthy.
  const auto deadline = Clock::now() + 20s;
  while (unlinks() < before + kFiles && Clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  EXPECT_GE(unlinks(), before + kFiles);
  auto health = get(port, "/healthz");
  EXPECT_TRUE(health && health->status == 200);
  auto m = get(port, "/metrics");
  ASSERT_TRUE(m);
  EXPECT_LT(metric(m->body, "shmbpf_export_records_total", {}).value_or(0), kFiles);

  // SIGTERM waits for the file a while, then gives up, says why and exits
  // 1. A thread in a write the kernel has handed to the stopped daemon
  // cannot end, as on a hung hard NFS mount, so the process ends once the
  // disk answers again.
  const auto stop = Clock::now();
  serve.signal(SIGTERM);
  const std::string gave_up = "the export file took nothing for 10 s";
  while (serve.err().find(gave_up) == std::string::npos && Clock::now() - stop < 30s)
    std::this_thread::sleep_for(200ms);
  EXPECT_NE(serve.err().find(gave_up), std::string::npos) << serve.err();
  EXPECT_GE(Clock::now() - stop, 9s);
  disk.resume();
  expect_exit_code(serve.wait(20s), 1);
}

TEST(ServeExport, APathThatCannotBeWrittenIsRefusedAtStart) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  for (const std::string &bad : {(dir.path / "no-such-dir" / "x.ndjson").string(),
                                 std::string("/proc/x"), dir.path.string()}) {
    const int port = free_port();
    ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                         "127.0.0.1:" + std::to_string(port), "--export-file", bad});
    expect_exit_code(serve.wait(30s), 2);
    const auto lines = lines_of(serve.err());
    ASSERT_EQ(lines.size(), 1u) << serve.err();
    EXPECT_TRUE(lines[0].starts_with("shmbpf: --export-file: cannot open " + bad)) << lines[0];
    EXPECT_EQ(serve.out(), "");
  }
}

TEST(ServeExport, BadExportFlagsAreOneLineAndStatusTwo) {
  for (const char *args :
       {"serve --export-file-max-size-mb 5",
        "serve --export-file /tmp/x --export-file-max-size-mb -1",
        "serve --export-file /tmp/x --export-file-max-size-mb abc",
        "serve --export-file /tmp/x --export-file-max-size-mb nan",
        "serve --export-file /tmp/x --export-file-max-backups -1",
        "serve --export-file /tmp/x --export-file-max-backups 5000", "serve --export-file ''"}) {
    auto r = run_shmbpf(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << args << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("shmbpf: ")) << r.err;
  }
  auto help = run_shmbpf("serve --help");
  EXPECT_EQ(help.code, 0);
  for (const char *flag :
       {"--export-file", "--export-file-max-size-mb", "--export-file-max-backups"})
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
}

} // namespace
} // namespace shmbpf::test
