// `shmbpf reap` against real Docker containers (a dockerd of the test's
// own, tests/e2e/dockerd.hpp), each with an IPC namespace of its own and
// Docker's default /dev/shm: one started with Docker's defaults (a tmpfs
// mounted in the container's namespace only), one with --ipc=shareable (a
// tmpfs that dockerd mounts on the host below its data root,
// containers/<id>/mounts/shm, and that is bind-mounted into the container:
// a scan finds its files through either mount). In each: orphaned files
// (written, then closed by a shell that exits), one in a directory, a file
// its main process holds, a System V segment that a live process keeps
// attached and one detached whose creator exited. Both containers and the
// host's /dev/shm have files of the same names, and segments of the same
// key.
//
// `reap --container` must free exactly that container's orphans, inside
// its own /dev/shm and IPC namespace, and leave the rest alone: the held
// file, the attached segment, the other container's files and the host's
// (inode and contents). Then the same from the library, with the container
// changed between the scan and the removal: a process of the container
// opens one orphan and attaches the other segment; each is skipped with its
// reason, and a control orphan is freed.
#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include "actions/reaper.hpp"
#include "live/clock.hpp"
#include "live/container_names.hpp"
#include "model/apply_scan.hpp"
#include "model/reap.hpp"
#include "sources/system_scan.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char *const kImage = "shmbpf-reap:test";
constexpr uint64_t kSegmentBytes = 64 * 1024; // what shm_actor sysv makes and fills

struct FileState {
  bool exists = false;
  uint64_t ino = 0;
  uint64_t bytes = 0; // st_blocks * 512, what du counts
  std::string text;
  bool operator==(const FileState &) const = default;
};

FileState file_state(const std::string &path) {
  FileState f;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return f;
  f.exists = true;
  f.ino = st.st_ino;
  f.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  f.text = text.str();
  return f;
}

// The names, below /dev/shm, of the orphans each container leaves: the
// host has files of the same names.
std::vector<std::string> orphan_names(const std::string &prefix) {
  return {prefix + "-a", prefix + "-b", prefix + "-dir/c"};
}

// The host's /dev/shm files (and segment) with the containers' names and
// key, removed whatever the test did.
class HostTwins {
public:
  HostTwins(const std::string &prefix, key_t key) : prefix_(prefix) {
    std::filesystem::create_directory("/dev/shm/" + prefix_ + "-dir");
    for (const std::string &rel : orphan_names(prefix_)) {
      std::ofstream out("/dev/shm/" + rel);
      out << "the host's own " << rel << "\n";
    }
    shmid_ = ::shmget(key, 8192, IPC_CREAT | IPC_EXCL | 0600);
  }
  ~HostTwins() {
    std::error_code ec;
    for (const std::string &rel : orphan_names(prefix_))
      std::filesystem::remove("/dev/shm/" + rel, ec);
    std::filesystem::remove("/dev/shm/" + prefix_ + "-dir", ec);
    if (shmid_ >= 0)
      ::shmctl(shmid_, IPC_RMID, nullptr);
  }
  HostTwins(const HostTwins &) = delete;
  HostTwins &operator=(const HostTwins &) = delete;

  int shmid() const { return shmid_; }

private:
  std::string prefix_;
  int shmid_ = -1;
};

// A container as the host sees it, and what it was given.
struct Box {
  std::string name;
  std::string options; // of `docker run`
  std::string id;
  std::string proc; // /proc/<pid> of its main process
  std::string root; // proc + "/root": its mount namespace's view
  uint32_t mntns = 0;
  int attached = -1;                        // shmid of the segment a live process keeps attached
  int detached = -1;                        // shmid of the orphaned segment
  std::map<std::string, FileState> orphans; // by name below /dev/shm, before any reap
  uint64_t orphan_bytes = 0;
  FileState held; // the file its main process holds
};

int shmid_in_output(const std::string &out) {
  const auto at = out.find("shmid ");
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 6);
}

// What a process of the container sees: the names in its /dev/shm and in
// the orphans' directory, and the shmids of its IPC namespace
// (/proc/sysvipc/shm lists the reader's); one `docker exec`.
struct Inside {
  bool ok = false;
  std::set<std::string> names;
  std::set<int> shmids;
};

Inside look_inside(const Dockerd &d, const Box &b, const std::string &prefix) {
  const Ran r = d.docker("exec " + b.name + " sh -c 'ls -1a /dev/shm /dev/shm/" + prefix +
                         "-dir; echo @sysv; cat /proc/sysvipc/shm'");
  Inside in;
  in.ok = r.code == 0;
  bool sysv = false, header = false;
  for (const std::string &line : lines_of(r.out)) {
    if (line == "@sysv") {
      sysv = header = true;
    } else if (sysv && header) {
      header = false;
    } else if (sysv) {
      std::istringstream f(line);
      long key = 0;
      int shmid = -1;
      if (f >> key >> shmid)
        in.shmids.insert(shmid);
    } else if (!line.empty() && !line.ends_with(":") && line != "." && line != "..") {
      in.names.insert(line);
    }
  }
  return in;
}

// How a box starts: its main process holds a file, and a child of it
// keeps a segment attached.
std::string run_command(const Dockerd &d, const Box &b, const std::string &held, key_t key) {
  return d.cli() + " run -d --network none --name " + b.name + " " + b.options + " " + kImage +
         " /bin/sh -c '/bin/shm_actor sysv " + std::to_string(key) +
         " 0600 & exec /bin/shm_actor hold " + held + " 0600'";
}

// Once a started box is ready, leaves its orphans: files written by a shell
// that exits, and a segment whose creator detached and exited. "" or what
// failed.
std::string set_up_box(const Dockerd &d, Box &b, const std::string &prefix, key_t detached_key) {
  const std::string held = "/dev/shm/" + prefix + "-held";
  b.id = d.id_of(b.name);
  std::string log;
  for (int i = 0; i < 100; ++i) {
    log = d.docker("logs " + b.name).out;
    if (log.find("held " + held) != std::string::npos && log.find("shmid ") != std::string::npos)
      break;
    std::this_thread::sleep_for(100ms);
  }
  b.attached = shmid_in_output(log);
  const pid_t pid = d.pid_of(b.name);
  if (b.id.size() != 64 || pid <= 0 || b.attached < 0 || log.find("held ") == std::string::npos)
    return b.name + " not ready: " + log;
  b.proc = "/proc/" + std::to_string(pid);
  b.root = b.proc + "/root";
  b.mntns = ns_inode((b.proc + "/ns/mnt").c_str());
  if (ns_inode((b.proc + "/ns/ipc").c_str()) == ns_inode("/proc/self/ns/ipc"))
    return b.name + " shares the host's IPC namespace";

  const std::string shm = "/dev/shm/" + prefix;
  const Ran left =
      d.docker("exec " + b.name + " sh -c 'dd if=/dev/zero of=" + shm +
               "-a bs=4096 count=3 2>/dev/null && echo " + b.name + " > " + shm + "-b && mkdir " +
               shm + "-dir && echo " + b.name + " > " + shm +
               "-dir/c && /bin/shm_actor sysv-leave " + std::to_string(detached_key) + " 0600'");
  b.detached = shmid_in_output(left.out);
  if (left.code != 0 || b.detached < 0)
    return b.name + ": " + left.out;

  for (const std::string &rel : orphan_names(prefix)) {
    FileState f = file_state(b.root + "/dev/shm/" + rel);
    if (!f.exists)
      return b.name + ": no " + rel;
    b.orphan_bytes += f.bytes;
    b.orphans[rel] = std::move(f);
  }
  b.held = file_state(b.root + held);
  return b.held.exists ? "" : b.name + ": no " + held;
}

// reap's JSON: every row is the box's, named as Docker names it, with
// status; the files named as the container sees them, each with the bytes
// du counted; exactly the box's orphans.
void check_rows(const json &doc, const Box &b, const char *status) {
  std::set<std::string> paths, want;
  std::set<int> shmids;
  for (const auto &[rel, f] : b.orphans)
    want.insert("/dev/shm/" + rel);
  for (const json &row : doc["segments"]) {
    const json &seg = row["segment"];
    EXPECT_EQ(row["status"], status) << row.dump(2);
    ASSERT_TRUE(seg["container"].is_object()) << row.dump(2);
    EXPECT_EQ(seg["container"]["id"], b.id) << row.dump(2);
    EXPECT_EQ(seg["container"]["name"], b.name) << row.dump(2);
    if (seg["kind"] == "sysv") {
      shmids.insert(seg["shmid"].get<int>());
      EXPECT_EQ(row["bytes"], kSegmentBytes) << row.dump(2);
      continue;
    }
    const std::string path = seg["path"].get<std::string>();
    paths.insert(path);
    if (auto it = b.orphans.find(path.substr(std::min<size_t>(path.size(), 9)));
        it != b.orphans.end()) {
      EXPECT_EQ(row["bytes"], it->second.bytes) << row.dump(2);
      EXPECT_EQ(seg["ino"], it->second.ino) << row.dump(2);
    }
  }
  EXPECT_EQ(paths, want) << doc.dump(2);
  EXPECT_EQ(shmids, std::set<int>{b.detached}) << doc.dump(2);
}

// The box's orphans are all there, or all gone; what else it has is there.
void check_box(const Dockerd &d, const Box &b, const std::string &prefix, bool reaped) {
  SCOPED_TRACE(b.name);
  for (const auto &[rel, before] : b.orphans) {
    const FileState now = file_state(b.root + "/dev/shm/" + rel);
    if (reaped)
      EXPECT_FALSE(now.exists) << rel;
    else
      EXPECT_EQ(now, before) << rel;
  }
  std::set<std::string> names = {prefix + "-held", prefix + "-dir"};
  if (!reaped)
    names.insert({prefix + "-a", prefix + "-b", "c"});
  const Inside inside = look_inside(d, b, prefix);
  ASSERT_TRUE(inside.ok);
  EXPECT_EQ(inside.names, names);
  EXPECT_EQ(file_state(b.root + "/dev/shm/" + prefix + "-held").ino, b.held.ino);
  EXPECT_EQ(inside.shmids.count(b.attached), 1u);
  EXPECT_EQ(inside.shmids.count(b.detached), reaped ? 0u : 1u);
}

// A program run in a container by `docker exec`, kept running (the exec'd
// process outlives the client; the container's removal ends it).
std::unique_ptr<ChildProcess> exec_in(const Dockerd &d, const DockerPrograms &programs,
                                      const Box &b, const std::vector<std::string> &command) {
  std::vector<std::string> args = {"-H", "unix://" + d.dir() + "/docker.sock", "exec", b.name};
  args.insert(args.end(), command.begin(), command.end());
  return std::make_unique<ChildProcess>(programs.docker, args);
}

// The library's stages on one box: scan, plan, then a process of the
// container opens one orphan and attaches an orphaned segment before the
// removal; a control orphan must be freed.
void race_in(const Dockerd &d, const DockerPrograms &programs, const Box &b,
             const std::string &prefix, key_t key) {
  SCOPED_TRACE(b.name);
  const std::string opened = "/dev/shm/" + prefix + "-race-opened";
  const std::string control = "/dev/shm/" + prefix + "-race-control";
  const Ran made = d.docker("exec " + b.name + " sh -c 'echo race > " + opened +
                            " && echo race > " + control + "'");
  ASSERT_EQ(made.code, 0) << made.out;
  const Ran left =
      d.docker("exec " + b.name + " /bin/shm_actor sysv-leave " + std::to_string(key) + " 0600");
  const int shmid = shmid_in_output(left.out);
  ASSERT_GE(shmid, 0) << left.out;

  const EngineConfig cfg = engine_config_now();
  Engine engine(cfg);
  bootstrap(engine, scan_system());
  RuntimeRoots roots;
  roots.docker = d.data_root();
  name_containers(engine, roots);
  ReapFilter filter;
  filter.min_age_s = 0;
  filter.container = b.name;
  const ReapPlan plan = plan_reap(engine, cfg.start_ns, filter);
  std::set<std::string> planned;
  for (const ReapTarget &t : plan.targets)
    planned.insert(t.segment.kind == Kind::sysv
                       ? "shmid " + std::to_string(t.segment.key.ino_or_shmid)
                       : t.segment.path);
  ASSERT_EQ(planned, (std::set<std::string>{opened, control, "shmid " + std::to_string(shmid)}));

  const auto holder = exec_in(d, programs, b, {"/bin/shm_actor", "hold", opened, "0600"});
  const auto attacher =
      exec_in(d, programs, b, {"/bin/shm_actor", "attach", std::to_string(shmid)});
  ASSERT_TRUE(holder->wait_output("held ", 10s)) << holder->out() << holder->err();
  ASSERT_TRUE(attacher->wait_output("attached ", 10s)) << attacher->out() << attacher->err();
  const FileState opened_before = file_state(b.root + opened);

  const std::vector<ReapOutcome> outcomes = reap(plan, true);
  ASSERT_EQ(outcomes.size(), 3u);
  for (const ReapOutcome &o : outcomes) {
    const SegmentInfo &s = o.target.segment;
    SCOPED_TRACE(s.path);
    EXPECT_EQ(s.container.id, b.id);
    if (s.kind == Kind::sysv) {
      EXPECT_EQ(o.status, ReapStatus::skipped);
      EXPECT_EQ(o.reason, ReapSkip::attached) << o.detail;
    } else if (s.path == opened) {
      EXPECT_EQ(o.status, ReapStatus::skipped);
      EXPECT_EQ(o.reason, ReapSkip::held) << o.detail;
      EXPECT_FALSE(o.holders.empty());
      for (uint32_t pid : o.holders) // the holder runs in the container
        EXPECT_EQ(ns_inode(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str()), b.mntns) << pid;
    } else {
      EXPECT_EQ(o.status, ReapStatus::freed) << to_string(o.reason) << ": " << o.detail;
    }
  }
  EXPECT_FALSE(file_state(b.root + control).exists);
  const FileState opened_after = file_state(b.root + opened);
  EXPECT_TRUE(opened_after.exists);
  EXPECT_EQ(opened_after.ino, opened_before.ino);
  const Inside inside = look_inside(d, b, prefix);
  ASSERT_TRUE(inside.ok);
  EXPECT_EQ(inside.shmids.count(shmid), 1u);
  EXPECT_EQ(inside.shmids.count(b.attached), 1u);
}

TEST(ReapDocker, FreesAContainersOrphansInItsOwnShm) {
  SHMBPF_REQUIRE_ROOT();
  const DockerPrograms programs;
  SHMBPF_REQUIRE_DOCKER(programs);

  // Names and keys of this run's own: the host and both containers have
  // them.
  const std::string prefix = "reap-docker-" + std::to_string(getpid());
  const key_t attached_key = static_cast<key_t>(0x5ead0000 + (getpid() & 0xffff) * 4);
  const key_t detached_key = attached_key + 1, race_key = attached_key + 2;
  HostTwins host(prefix, detached_key);
  ASSERT_GE(host.shmid(), 0) << "shmget on the host: " << std::strerror(errno);
  std::map<std::string, FileState> host_before;
  for (const std::string &rel : orphan_names(prefix))
    host_before[rel] = file_state("/dev/shm/" + rel);

  Dockerd d(programs);
  ASSERT_TRUE(d.wait_ready(30s)) << d.log();
  const Ran imported = d.import_image(kImage, {"sh", "cat", "dd", "ls", "mkdir", "echo"},
                                      {{SHMBPF_SHM_ACTOR, "/bin/shm_actor"}});
  ASSERT_EQ(imported.code, 0) << imported.out;
  Box plain, shareable;
  plain.name = "reap-plain";
  shareable.name = "reap-shareable";
  shareable.options = "--ipc=shareable";
  // Both start at once.
  const std::string held = "/dev/shm/" + prefix + "-held";
  const Ran started = sh(run_command(d, plain, held, attached_key) + " & " +
                         run_command(d, shareable, held, attached_key) + " & wait");
  for (Box *b : {&plain, &shareable}) {
    const std::string error = set_up_box(d, *b, prefix, detached_key);
    ASSERT_EQ(error, "") << started.out << d.log();
  }
  // The layouts this test is about: the plain box's /dev/shm is in its
  // namespace only, the shareable one's is mounted on the host as well.
  const Ran mounts = sh("grep ' " + d.data_root() + "/containers/' /proc/self/mountinfo");
  EXPECT_EQ(mounts.out.find(plain.id + "/mounts/shm"), std::string::npos) << mounts.out;
  EXPECT_NE(mounts.out.find(shareable.id + "/mounts/shm"), std::string::npos) << mounts.out;

  const std::string roots = " --runtime-root docker=" + d.data_root();
  const auto reap_cli = [&](const std::string &container, const std::string &more) {
    return run_shmbpf("reap --json --min-age 0 --container " + container + more + roots);
  };
  for (const Box *b : {&plain, &shareable}) {
    SCOPED_TRACE("dry run of " + b->name);
    const CliResult dry = reap_cli(b->name, "");
    ASSERT_EQ(dry.code, 0) << dry.out << dry.err;
    const json doc = dry.json();
    EXPECT_EQ(doc["dry_run"], true);
    EXPECT_EQ(doc["selected"], 4);
    EXPECT_EQ(doc["would_free"], 4);
    EXPECT_EQ(doc["bytes_would_free"], b->orphan_bytes + kSegmentBytes) << doc.dump(2);
    check_rows(doc, *b, "would-free");
  }
  {
    SCOPED_TRACE("the host's files of the same names are the host's");
    const CliResult twins = reap_cli("host", " --match '/dev/shm/" + prefix + "-*'");
    ASSERT_EQ(twins.code, 0) << twins.out << twins.err;
    const json doc = twins.json();
    std::set<std::string> paths, want;
    for (const auto &[rel, f] : host_before)
      want.insert("/dev/shm/" + rel);
    for (const json &row : doc["segments"]) {
      const json &seg = row["segment"];
      EXPECT_TRUE(seg["container"].is_null()) << row.dump(2);
      const std::string path = seg["path"].get<std::string>();
      paths.insert(path);
      if (auto it = host_before.find(path.substr(std::min<size_t>(path.size(), 9)));
          it != host_before.end()) {
        EXPECT_EQ(seg["ino"], it->second.ino) << row.dump(2);
      }
    }
    EXPECT_EQ(paths, want) << doc.dump(2);
  }
  check_box(d, plain, prefix, false);
  check_box(d, shareable, prefix, false);

  // The plain box by name, then the shareable one by a prefix of its id.
  for (const Box *b : {&plain, &shareable}) {
    SCOPED_TRACE("--yes on " + b->name);
    const CliResult yes = reap_cli(b == &plain ? b->name : b->id.substr(0, 12), " --yes");
    ASSERT_EQ(yes.code, 0) << yes.out << yes.err;
    const json doc = yes.json();
    EXPECT_EQ(doc["dry_run"], false);
    EXPECT_EQ(doc["selected"], 4);
    EXPECT_EQ(doc["freed"], 4);
    EXPECT_EQ(doc["bytes_freed"], b->orphan_bytes + kSegmentBytes) << doc.dump(2);
    check_rows(doc, *b, "freed");
    check_box(d, plain, prefix, true);
    check_box(d, shareable, prefix, b == &shareable);
  }
  {
    SCOPED_TRACE("the host's twins");
    for (const auto &[rel, before] : host_before)
      EXPECT_EQ(file_state("/dev/shm/" + rel), before) << rel;
    struct shmid_ds ds {};
    ASSERT_EQ(::shmctl(host.shmid(), IPC_STAT, &ds), 0) << std::strerror(errno);
    EXPECT_EQ(ds.shm_perm.__key, detached_key);
  }

  race_in(d, programs, plain, prefix, race_key);
  race_in(d, programs, shareable, prefix, race_key);
  for (const auto &[rel, before] : host_before)
    EXPECT_EQ(file_state("/dev/shm/" + rel), before) << rel;
}

} // namespace
} // namespace shmbpf::test
