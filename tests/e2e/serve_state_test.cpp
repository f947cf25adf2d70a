// `serve --state-dir` end to end: a /dev/shm file and a SysV segment made
// by a process of a docker-named cgroup that then exits keep their creator,
// age and container across a restart of the daemon (the cgroup gone meanwhile);
// SIGTERM saves the state; a state directory that cannot be made is one
// line and status 2.
#include "background.hpp"
#include "docker_cgroup.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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

// The one segment at path in the daemon's /v1/segments, or null.
json segment_at(const std::string &sock, const std::string &path) {
  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get(("/v1/segments?match=" + path).c_str());
  if (!r || r->status != 200)
    return nullptr;
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j["segments"].size() != 1)
    return nullptr;
  return j["segments"][0];
}

// Polls until the segment at path has a known creator and a container.
json wait_for_creator(const std::string &sock, const std::string &path) {
  const auto deadline = Clock::now() + 20s;
  json s;
  while (Clock::now() < deadline) {
    s = segment_at(sock, path);
    if (s.is_object() && s["creator"].is_object() && s["container"].is_object())
      return s;
    std::this_thread::sleep_for(200ms);
  }
  return s;
}

std::vector<std::string> serve_args(int port, const std::string &dir) {
  return {"serve",       "--listen",      "127.0.0.1:" + std::to_string(port),
          "--socket",    dir + "/s.sock", "--state-dir",
          dir + "/state"};
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
  auto first = std::make_unique<ShmbpfProcess>(serve_args(port, dir.path));
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
  EXPECT_TRUE(header.starts_with("shmbpf-state 2 =")) << header;
}

TEST(ServeState, NoStateAndStateDirExcludeEachOther) {
  auto r = run_shmbpf("serve --no-state --state-dir /tmp/x");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

} // namespace
} // namespace shmbpf::test
