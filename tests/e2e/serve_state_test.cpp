// `serve --state-dir` end to end: a /dev/shm file and a SysV segment made
// by a process of a docker-named cgroup that then exits keep their creator,
// age and container across a restart of the daemon (the cgroup gone meanwhile);
// SIGTERM saves the state; a file that a new one replaces at the same
// device and inode number while the daemon is stopped does not inherit its
// creator; a state directory that cannot be made is one line and status 2.
#include "background.hpp"
#include "docker_cgroup.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include "facts/dev.hpp"
#include "model/state.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-e2e-state-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// The daemon's answer to GET path on its unix socket, parsed; null when
// there is none or it is not 200.
json get_json(const std::string &sock, const std::string &path) {
  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get(path.c_str());
  if (!r || r->status != 200)
    return nullptr;
  json j = json::parse(r->body, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

// The one segment at path in the daemon's /v1/segments, or null.
json segment_at(const std::string &sock, const std::string &path) {
  const json j = get_json(sock, "/v1/segments?match=" + path);
  if (!j.is_object() || j["segments"].size() != 1)
    return nullptr;
  return j["segments"][0];
}

// Polls until the segment at path has a known creator and (unless made on
// the host) a container.
json wait_for_creator(const std::string &sock, const std::string &path, bool in_container = true) {
  const auto deadline = Clock::now() + 20s;
  json s;
  while (Clock::now() < deadline) {
    s = segment_at(sock, path);
    if (s.is_object() && s["creator"].is_object() && (!in_container || s["container"].is_object()))
      return s;
    std::this_thread::sleep_for(200ms);
  }
  return s;
}

// The full hook set where a test needs what only it sees (a System V
// segment's creator from its shmget); the daemon's default otherwise.
std::vector<std::string> serve_args(int port, const std::string &dir, bool full = false) {
  std::vector<std::string> args = {
      "serve",       "--listen",      "127.0.0.1:" + std::to_string(port),
      "--socket",    dir + "/s.sock", "--state-dir",
      dir + "/state"};
  if (full)
    args.insert(args.end(), {"--hooks", "full"});
  return args;
}

TEST(ServeState, ACreatorSurvivesARestart) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  auto cgroup = std::make_unique<DockerCgroup>("shmbpf-e2e-state.slice");
  ASSERT_EQ(cgroup->create(), "") << "cannot create a cgroup v2 directory";
  const std::string id = cgroup->id();
  const std::string path = "/dev/shm/e2e-state-" + std::to_string(getpid());
  struct Unlink {
    std::string p;
    ~Unlink() { unlink(p.c_str()); }
  } unlink_after{path};
  // And a SysV segment under a key of this test's own.
  const key_t key = static_cast<key_t>(0x5e000000u | (static_cast<unsigned>(getpid()) & 0xffffu));
  char sysv_name[16];
  snprintf(sysv_name, sizeof sysv_name, "SYSV%08x", static_cast<unsigned>(key));
  struct Rmid {
    key_t key;
    ~Rmid() {
      const int id = shmget(key, 0, 0);
      if (id >= 0)
        shmctl(id, IPC_RMID, nullptr);
    }
  } rmid_after{key};

  int port = free_port();
  auto first = std::make_unique<ShmbpfProcess>(serve_args(port, dir.path, true));
  SHMBPF_SERVE_READY(*first, port);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    prctl(PR_SET_NAME, "e2e-stater");
    if (!cgroup->enter())
      _exit(3);
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || write(fd, "state", 5) != 5)
      _exit(4);
    if (shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600) < 0)
      _exit(5);
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child: status " << st;

  const json before = wait_for_creator(dir.path + "/s.sock", path);
  ASSERT_TRUE(before.is_object() && before["creator"].is_object()) << before.dump();
  EXPECT_EQ(before["creator"]["pid"], child);
  EXPECT_EQ(before["creator"]["comm"], "e2e-stater");
  EXPECT_EQ(before["container"]["id"], id);
  EXPECT_EQ(before["existed_before"], false);
  const json sysv_before = wait_for_creator(dir.path + "/s.sock", sysv_name);
  ASSERT_TRUE(sysv_before.is_object() && sysv_before["creator"].is_object()) << sysv_before.dump();
  EXPECT_EQ(sysv_before["creator"]["comm"], "e2e-stater");

  first->signal(SIGTERM);
  expect_exit_code(first->wait(30s), 0);
  EXPECT_NE(first->err().find("state saved"), std::string::npos) << first->err();
  struct stat sb {};
  ASSERT_EQ(stat((dir.path + "/state/state").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir.path + "/state").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
  first.reset();
  // The container's cgroup is gone: only the saved state can name it now.
  cgroup.reset();

  port = free_port();
  ShmbpfProcess second(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(second, port);
  const json after = segment_at(dir.path + "/s.sock", path);
  ASSERT_TRUE(after.is_object()) << "the file is missing after the restart";
  ASSERT_TRUE(after["creator"].is_object()) << after.dump();
  EXPECT_EQ(after["creator"]["pid"], child);
  EXPECT_EQ(after["creator"]["comm"], "e2e-stater");
  EXPECT_EQ(after["creator"]["exited"], true);
  EXPECT_EQ(after["existed_before"], false);
  ASSERT_TRUE(after["container"].is_object()) << after.dump();
  EXPECT_EQ(after["container"]["id"], id);
  // Its age still counts from its creation.
  EXPECT_GE(after["age_s"].get<double>(), before["age_s"].get<double>());
  // The SysV segment's creator pid is in /proc/sysvipc/shm; its comm and
  // container only in the saved state.
  const json sysv_after = segment_at(dir.path + "/s.sock", sysv_name);
  ASSERT_TRUE(sysv_after.is_object() && sysv_after["creator"].is_object()) << sysv_after.dump();
  EXPECT_EQ(sysv_after["creator"]["pid"], child);
  EXPECT_EQ(sysv_after["creator"]["comm"], "e2e-stater");
  EXPECT_EQ(sysv_after["existed_before"], false);
  ASSERT_TRUE(sysv_after["container"].is_object()) << sysv_after.dump();
  EXPECT_EQ(sysv_after["container"]["id"], id);

  // A new file at the path is another segment: nothing saved applies.
  ASSERT_EQ(unlink(path.c_str()), 0);
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  second.signal(SIGTERM);
  expect_exit_code(second.wait(30s), 0);
  port = free_port();
  ShmbpfProcess third(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(third, port);
  const json renewed = segment_at(dir.path + "/s.sock", path);
  ASSERT_TRUE(renewed.is_object());
  // The test process made it while a daemon ran: its creator, not the child.
  ASSERT_TRUE(renewed["creator"].is_object()) << renewed.dump();
  EXPECT_EQ(renewed["creator"]["pid"], getpid());
  third.signal(SIGTERM);
  expect_exit_code(third.wait(30s), 0);
}

// Runs body in a child named comm and waits for it: true when it exited 0.
template <class Fn> bool in_child(const char *comm, Fn &&body) {
  const pid_t child = fork();
  if (child < 0)
    return false;
  if (child == 0) {
    prctl(PR_SET_NAME, comm);
    _exit(body() ? 0 : 1);
  }
  int st = 0;
  return waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool make_file(const std::string &path) {
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  const bool ok = fd >= 0 && write(fd, "x", 1) == 1;
  if (fd >= 0)
    close(fd);
  return ok;
}

// Small tmpfs mounts of the test's own, detached at the end.
struct Mounts {
  std::vector<std::string> points;
  bool add(const std::string &dir) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return false;
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m,nr_inodes=16") != 0)
      return false;
    points.push_back(dir);
    return true;
  }
  ~Mounts() {
    for (auto it = points.rbegin(); it != points.rend(); ++it)
      umount2(it->c_str(), MNT_DETACH);
  }
};

// The rule: an inode number reused by a new file is never given the
// old file's creator. tmpfs (6.18 as before) numbers one filesystem's
// inodes from a counter that does not go back (it wraps only after 2^32
// with inode32), so the reuse a restart meets is a new tmpfs that gets the
// old one's device number (the kernel hands out the lowest free one): a
// container's /dev/shm made again, a remount. Its first file then has the
// old first file's inode number too: the same (dev, ino), the same path,
// another file.
TEST(ServeState, AReusedInodeNumberIsNotGivenTheOldCreator) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  Mounts mounts;
  const std::string fs = dir.path + "/fs";
  ASSERT_TRUE(mounts.add(fs)) << fs << ": " << strerror(errno);
  const std::string path = fs + "/seg";
  // A file that stays: proves that this restart did restore what it could.
  const std::string kept = "/dev/shm/e2e-state-kept-" + std::to_string(getpid());
  struct Unlink {
    std::string p;
    ~Unlink() { unlink(p.c_str()); }
  } unlink_after{kept};

  int port = free_port();
  auto first = std::make_unique<ShmbpfProcess>(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(*first, port);
  ASSERT_TRUE(in_child("e2e-old-owner", [&] { return make_file(path) && make_file(kept); }));
  const json before = wait_for_creator(dir.path + "/s.sock", path, false);
  ASSERT_TRUE(before.is_object() && before["creator"].is_object()) << before.dump();
  ASSERT_EQ(before["creator"]["comm"], "e2e-old-owner");
  const json kept_before = wait_for_creator(dir.path + "/s.sock", kept, false);
  ASSERT_TRUE(kept_before.is_object() && kept_before["creator"].is_object()) << kept_before.dump();
  struct stat old_st {};
  ASSERT_EQ(stat(path.c_str(), &old_st), 0);
  first->signal(SIGTERM);
  expect_exit_code(first->wait(30s), 0);
  first.reset();

  // The saved state does hold the old file under its (dev, ino).
  std::ifstream in(dir.path + "/state/state");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<SavedState> saved = parse_state(text);
  ASSERT_TRUE(saved) << saved.error();
  const SegmentKey old_key = SegmentKey::file(kernel_dev(old_st.st_dev), old_st.st_ino);
  bool saved_old = false;
  for (const SavedSegment &s : saved->segments)
    saved_old = saved_old || (s.key == old_key && s.creation.comm == "e2e-old-owner");
  ASSERT_TRUE(saved_old) << text;

  // With the daemon stopped: the file is deleted, its tmpfs unmounted, and
  // new ones mounted in its place until one gets the same device number. A
  // lower free number is taken first: those stay, hidden under the next.
  // A higher one means that another mount (a test beside this one mounting
  // a tmpfs or tracefs) holds the number for now: it is let go, and the
  // next one tried a little later.
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(umount2(fs.c_str(), 0), 0) << strerror(errno);
  mounts.points.pop_back();
  bool same_dev = false;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  for (int lower = 0; lower < 64 && !same_dev && std::chrono::steady_clock::now() < give_up;) {
    ASSERT_TRUE(mounts.add(fs)) << strerror(errno);
    struct stat st {};
    ASSERT_EQ(stat(fs.c_str(), &st), 0);
    same_dev = st.st_dev == old_st.st_dev;
    if (same_dev)
      break;
    if (major(st.st_dev) == major(old_st.st_dev) && minor(st.st_dev) < minor(old_st.st_dev)) {
      ++lower;
      continue;
    }
    ASSERT_EQ(umount2(fs.c_str(), 0), 0) << strerror(errno);
    mounts.points.pop_back();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(same_dev) << "no new tmpfs got device " << major(old_st.st_dev) << ":"
                        << minor(old_st.st_dev) << " back";
  ASSERT_TRUE(in_child("e2e-newcomer", [&] { return make_file(path); }));
  struct stat new_st {};
  ASSERT_EQ(stat(path.c_str(), &new_st), 0);
  ASSERT_EQ(new_st.st_dev, old_st.st_dev);
  ASSERT_EQ(new_st.st_ino, old_st.st_ino) << "the new file did not get the old inode number";

  port = free_port();
  ShmbpfProcess second(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(second, port);
  const json kept_after = segment_at(dir.path + "/s.sock", kept);
  ASSERT_TRUE(kept_after.is_object() && kept_after["creator"].is_object()) << kept_after.dump();
  EXPECT_EQ(kept_after["creator"]["comm"], "e2e-old-owner");
  const json after = segment_at(dir.path + "/s.sock", path);
  ASSERT_TRUE(after.is_object()) << "the new file is missing";
  EXPECT_EQ(after["existed_before"], true) << after.dump();
  EXPECT_FALSE(after["creator"].is_object() && after["creator"]["comm"] == "e2e-old-owner")
      << after.dump();
  second.signal(SIGTERM);
  expect_exit_code(second.wait(30s), 0);
  EXPECT_NE(second.err().find(" segments keep the creator a previous run saw"), std::string::npos)
      << second.err();
}

// The daemon's /v1/mounts row of mountpoint, or null.
json mount_at(const std::string &sock, const std::string &mountpoint) {
  const json j = get_json(sock, "/v1/mounts");
  if (j.is_object())
    for (const json &m : j["mounts"])
      if (m["mountpoint"] == mountpoint)
        return m;
  return nullptr;
}

// The most a mount held is kept across a restart while it is the same
// filesystem: right-sizing from a peak that a restart of the daemon forgot
// would size too small.
TEST(ServeState, AMountsPeakSurvivesARestart) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  Mounts mounts;
  const std::string fs = dir.path + "/fs";
  ASSERT_TRUE(mounts.add(fs)) << fs << ": " << strerror(errno);
  constexpr uint64_t kFilled = 512 * 1024;
  const std::string file = fs + "/filler";

  int port = free_port();
  auto first = std::make_unique<ShmbpfProcess>(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(*first, port);
  {
    const int fd = open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fallocate(fd, 0, 0, kFilled), 0) << strerror(errno);
    close(fd);
  }
  json m;
  for (const auto deadline = Clock::now() + 20s; Clock::now() < deadline;) {
    m = mount_at(dir.path + "/s.sock", fs);
    if (m.is_object() && m["peak_used_bytes"].get<uint64_t>() >= kFilled)
      break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(m.is_object() && m["peak_used_bytes"].get<uint64_t>() >= kFilled) << m.dump();
  ASSERT_EQ(unlink(file.c_str()), 0);
  first->signal(SIGTERM);
  expect_exit_code(first->wait(30s), 0);
  first.reset();

  port = free_port();
  ShmbpfProcess second(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(second, port);
  m = mount_at(dir.path + "/s.sock", fs);
  ASSERT_TRUE(m.is_object()) << "the mount is missing after the restart";
  EXPECT_LT(m["used_bytes"].get<uint64_t>(), kFilled);
  EXPECT_GE(m["peak_used_bytes"].get<uint64_t>(), kFilled) << m.dump();
  second.signal(SIGTERM);
  expect_exit_code(second.wait(30s), 0);
  EXPECT_NE(second.err().find(" mounts keep their peak"), std::string::npos) << second.err();
  EXPECT_EQ(second.err().find(" 0 mounts keep their peak"), std::string::npos) << second.err();
}

TEST(ServeState, AStateDirThatCannotBeMadeIsOneLineAndStatusTwo) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const std::string file = dir.path + "/a-file";
  close(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--listen", "127.0.0.1:" + std::to_string(port), "--socket",
                       dir.path + "/s.sock", "--state-dir", file + "/state"});
  expect_exit_code(serve.wait(30s), 2);
  const auto lines = lines_of(serve.err());
  ASSERT_EQ(lines.size(), 1u) << serve.err();
  EXPECT_TRUE(lines[0].starts_with("shmbpf: --state-dir: ")) << lines[0];
  EXPECT_NE(lines[0].find(file), std::string::npos) << lines[0];
  // Nothing was bound: no socket left, and the port is free.
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/s.sock"));
  EXPECT_FALSE(get(port, "/healthz"));
}

TEST(ServeState, AStateFileOfAnotherVersionIsLoggedAndIgnored) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_EQ(mkdir((dir.path + "/state").c_str(), 0700), 0);
  {
    std::ofstream f(dir.path + "/state/state");
    f << "shmbpf-state 99 =x\nfile 1 2 3\n";
  }
  const int port = free_port();
  ShmbpfProcess serve(serve_args(port, dir.path));
  SHMBPF_SERVE_READY(serve, port);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
  EXPECT_NE(serve.err().find("ignoring the saved state: " + dir.path + "/state/state: version 99"),
            std::string::npos)
      << serve.err();
  // Replaced by this run's state, which the next run can read.
  std::ifstream in(dir.path + "/state/state");
  std::string header;
  std::getline(in, header);
  EXPECT_TRUE(header.starts_with("shmbpf-state 3 =")) << header;
}

TEST(ServeState, NoStateAndStateDirExcludeEachOther) {
  auto r = run_shmbpf("serve --no-state --state-dir /tmp/x");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

} // namespace
} // namespace shmbpf::test
