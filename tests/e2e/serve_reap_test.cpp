// `shmbpf serve --reap` and the reap command's records, end to end: a real
// orphan on a tmpfs of the test's own is freed by the daemon on its own
// (logged, exported, counted in /metrics, which promtool still accepts)
// while a held file next to it stays; the reap command run next to a
// daemon puts its removals in that daemon's export through the socket,
// which takes such records only with root's token.
#include "background.hpp"
#include "daemon/api_client.hpp"
#include "daemon/unix_socket.hpp"
#include "export_records.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace shmbpf::test {
namespace {

// A tmpfs of the test's own at <dir>/dev/shm (so that it counts as shared
// memory), unmounted at the end.
struct OwnShm {
  TempDir dir;
  std::string mnt;
  bool ok = false;
  OwnShm() : mnt((dir.path / "dev" / "shm").string()) {
    std::filesystem::create_directories(mnt);
    ok = mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m") == 0;
  }
  ~OwnShm() {
    if (ok)
      umount2(mnt.c_str(), MNT_DETACH);
  }
};

bool exists(const std::string &path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST(ServeReap, TheDaemonFreesOrphansAndRecordsIt) {
  SHMBPF_REQUIRE_ROOT();
  OwnShm shm;
  ASSERT_TRUE(shm.ok) << strerror(errno);
  const std::string orphan = shm.mnt + "/left-behind", held = shm.mnt + "/in-use";
  bool ok = false;
  run_child([&] { return make_file(orphan, 65536) ? 0 : 1; }, ok);
  ASSERT_TRUE(ok);
  struct stat before {};
  ASSERT_EQ(stat(orphan.c_str(), &before), 0);
  ASSERT_NE(make_file(held, 4096), 0u);
  const int held_fd = open(held.c_str(), O_RDONLY); // the test holds it
  ASSERT_GE(held_fd, 0);

  const std::string file = (shm.dir.path / "x.ndjson").string();
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", file, "--reap",
                       "--reap-interval", "1", "--reap-min-age", "0", "--reap-match",
                       shm.mnt + "/*"});
  SHMBPF_SERVE_READY(serve, port);
  auto record = wait_record(
      file, [&](const json &j) { return is(j, "reap", orphan); }, 20s);
  close(held_fd);
  ASSERT_TRUE(record) << serve.err();
  EXPECT_EQ((*record)["status"], "freed");
  EXPECT_EQ((*record)["by"], "serve");
  EXPECT_EQ((*record)["by_pid"], serve.pid());
  EXPECT_EQ((*record)["ino"], before.st_ino);
  EXPECT_EQ((*record)["bytes"], static_cast<uint64_t>(before.st_blocks) * 512);
  EXPECT_EQ((*record)["mountpoint"], shm.mnt);
  EXPECT_EQ((*record)["reason"], nullptr);
  EXPECT_FALSE(exists(orphan));
  EXPECT_TRUE(exists(held)) << "a held file is never reaped";

  const auto metrics = get(port, "/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_GE(metric(metrics->body, "shmbpf_reaped_segments_total", {}).value_or(0), 1.0);
  EXPECT_GE(metric(metrics->body, "shmbpf_reaped_bytes_total", {}).value_or(0),
            static_cast<double>(before.st_blocks) * 512);
  EXPECT_TRUE(metric(metrics->body, "shmbpf_reap_skipped_total", {"reason=\"held\""}));
  expect_promtool_accepts(metrics->body);
  EXPECT_NE(serve.err().find("reaped " + orphan), std::string::npos) << serve.err();
}

TEST(ServeReap, TheReapCommandsRemovalsGoToTheDaemonsExport) {
  SHMBPF_REQUIRE_ROOT();
  OwnShm shm;
  ASSERT_TRUE(shm.ok) << strerror(errno);
  const std::string orphan = shm.mnt + "/psm_left_behind";
  ASSERT_NE(make_file(orphan, 8192), 0u);
  const std::string file = (shm.dir.path / "x.ndjson").string();
  const std::string socket = (shm.dir.path / "api.sock").string();
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--no-state", "--socket", socket, "--listen",
                       "127.0.0.1:" + std::to_string(port), "--export-file", file});
  SHMBPF_SERVE_READY(serve, port);
  struct stat token {};
  ASSERT_EQ(stat((socket + ".token").c_str(), &token), 0);
  EXPECT_EQ(token.st_mode & 07777, 0600u);

  auto r = run_shmbpf("reap --yes --min-age 0 --mount '" + shm.mnt + "' --daemon-socket '" +
                      socket + "' --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["freed"], 1);
  EXPECT_FALSE(exists(orphan));
  auto record = wait_record(
      file, [&](const json &j) { return is(j, "reap", orphan); }, 10s);
  ASSERT_TRUE(record) << r.err << serve.err();
  EXPECT_EQ((*record)["status"], "freed");
  EXPECT_EQ((*record)["by"], "reap");
  EXPECT_NE((*record)["by_pid"], serve.pid());

  // Without root's token the socket takes no record.
  const PostReply forged = api_post(
      socket, "/v1/reaped", "{\"event\":\"reap\",\"path\":\"/forged\"}\n", std::string(32, '0'));
  EXPECT_EQ(forged.status, 403) << forged.body;
  // With it, only records reap writes, of files on a mount the daemon
  // knows: not a line of text, not reap's own record made to say it freed
  // /etc/passwd.
  const std::string root_token = read_socket_token(socket);
  ASSERT_FALSE(root_token.empty());
  std::string passwd; // reap's record as the export has it, its member order too
  std::ifstream in(file);
  for (std::string line; std::getline(in, line) && passwd.empty();)
    if (line.starts_with("{\"event\":\"reap\"") && line.find(orphan) != std::string::npos)
      passwd = line + "\n";
  ASSERT_FALSE(passwd.empty());
  ASSERT_EQ(api_post(socket, "/v1/reaped", passwd, root_token).status, 200) << "taken as it is";
  for (const auto &[from, to] :
       {std::pair<std::string, std::string>{orphan, "/etc/passwd"}, {shm.mnt, "/etc"}})
    passwd.replace(passwd.find(from), from.size(), to);
  for (const std::string &body : {std::string("freed /etc/passwd\n"), passwd}) {
    const PostReply refused = api_post(socket, "/v1/reaped", body, root_token);
    EXPECT_EQ(refused.status, 400) << body << refused.body;
  }
  std::this_thread::sleep_for(500ms);
  for (const json &j : records_of(file)) {
    EXPECT_NE(j.value("path", ""), "/forged");
    EXPECT_NE(j.value("path", ""), "/etc/passwd");
  }

  serve.signal(SIGTERM);
  ASSERT_TRUE(serve.wait(10s));
  EXPECT_FALSE(exists(socket + ".token")) << "the daemon removes its token at the end";
}

} // namespace
} // namespace shmbpf::test
