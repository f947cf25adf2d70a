// `shmbpf serve`'s unix socket end to end: the daemon with its socket in a
// temporary directory, a real /dev/shm leak (its creator exited) listed by
// /v1/leaks with the fields of `leaks --json`, and by `ls`, `leaks` and
// `top --server` run against it; the socket's mode and group deciding who
// connects; segment names kept off TCP; a stuck client not stopping the
// daemon; bad socket paths and flags refused with status 2.
#include "background.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

// The socket's group in these tests: Debian's "users", which has no
// members by default (serve takes only a gid some group has).
constexpr gid_t kApiGroup = 100;

// A directory for the socket that anyone may enter (the socket's own mode
// decides who connects), removed at the end.
struct SocketDir {
  std::string path;
  SocketDir() {
    char tmpl[] = "/tmp/shmbpf-e2e-sock-XXXXXX";
    path = mkdtemp(tmpl);
    chmod(path.c_str(), 0755);
  }
  ~SocketDir() { std::filesystem::remove_all(path); }
  std::string sock() const { return path + "/shmbpf.sock"; }
};

struct SocketReply {
  int status = 0;
  std::string body;
  std::string leaking;
};

std::optional<SocketReply> get_unix(const std::string &sock, const std::string &target) {
  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(20, 0);
  auto r = c.Get(target.c_str());
  if (!r)
    return std::nullopt;
  return SocketReply{r->status, r->body, r->get_header_value("Shmbpf-Leaking")};
}

// A file whose creator has exited and that nobody holds: an orphan as soon
// as the daemon has seen the creator go, if it is shared memory.
void leave_file(const std::string &path) {
  GatedFork child = fork_gated("e2e-leaker", [&] {
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || write(fd, "leak", 4) != 4)
      return 1;
    close(fd);
    return 0;
  });
  EXPECT_EQ(write(child.gate_fd, "x", 1), 1);
  close(child.gate_fd);
  int st = 0;
  EXPECT_EQ(waitpid(child.pid, &st, 0), child.pid);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the leaker failed: " << st;
}

// Such a file in /dev/shm.
std::string make_leak(const std::string &tag) {
  const std::string path = "/dev/shm/e2e-sock-" + tag + "-" + std::to_string(getpid());
  leave_file(path);
  return path;
}

struct Unlink {
  std::vector<std::string> paths;
  ~Unlink() {
    for (const auto &p : paths)
      unlink(p.c_str());
  }
};

// Polls /v1/leaks (orphans of any age matching path) until it lists path.
std::optional<json> wait_for_orphan(const std::string &sock, const std::string &path,
                                    std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    auto r = get_unix(sock, "/v1/leaks?min_age=0&match=" + path);
    if (r && r->status == 200) {
      auto j = json::parse(r->body, nullptr, false);
      if (!j.is_discarded() && j["orphan_count"] == 1)
        return j;
    }
    std::this_thread::sleep_for(200ms);
  }
  return std::nullopt;
}

// The names of an object's fields.
std::set<std::string> keys_of(const json &j) {
  std::set<std::string> out;
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      out.insert(it.key());
  return out;
}

// The child runs as nobody, with the given supplementary groups only.
std::function<void()> as_nobody(std::vector<gid_t> groups) {
  return [groups] {
    const gid_t nobody = 65534;
    if (setgroups(groups.size(), groups.data()) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0)
      _exit(126);
  };
}

TEST(ServeSocket, TheLeakThroughTheSocketAndEveryClient) {
  SHMBPF_REQUIRE_ROOT();
  SocketDir dir;
  const std::string sock = dir.sock();
  const int port = free_port();
  ShmbpfProcess serve({"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port),
                       "--socket", sock, "--socket-group", std::to_string(kApiGroup)});
  SHMBPF_SERVE_READY(serve, port);
  Unlink cleanup;

  // The socket: owner and group may connect, nobody else.
  struct stat st {};
  ASSERT_EQ(lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, kApiGroup);

  const std::string path = make_leak("api");
  cleanup.paths.push_back(path);
  auto api = wait_for_orphan(sock, path, 20s);
  ASSERT_TRUE(api) << "the daemon never listed " << path << "; stderr: " << serve.err();
  EXPECT_EQ((*api)["orphans"][0]["path"], path);
  EXPECT_EQ((*api)["orphans"][0]["orphan"], true);
  EXPECT_EQ((*api)["orphans"][0]["creator"]["exited"], true) << (*api).dump();
  EXPECT_EQ((*api)["by_mount"][0]["mount"], "/dev/shm");

  // The same document as `leaks --json` run here, field for field (what
  // differs is what a scan cannot know: the creator the daemon saw).
  auto direct = run_shmbpf("leaks --json --min-age 0 --match '" + path + "'");
  EXPECT_EQ(direct.code, 1) << direct.err;
  const json dj = direct.json();
  ASSERT_EQ(dj["orphan_count"], 1) << direct.out;
  EXPECT_EQ(keys_of(*api), keys_of(dj));
  EXPECT_EQ(keys_of((*api)["orphans"][0]), keys_of(dj["orphans"][0]));
  EXPECT_EQ(keys_of((*api)["by_mount"][0]), keys_of(dj["by_mount"][0]));
  for (const char *same : {"path", "kind", "dev", "ino", "state", "mount", "orphan"})
    EXPECT_EQ((*api)["orphans"][0][same], dj["orphans"][0][same]) << same;

  // ls, leaks and top read the daemon's model, and say the same.
  auto ls = run_shmbpf("ls --server " + sock + " --json --match '" + path + "'");
  EXPECT_EQ(ls.code, 0) << ls.err;
  const json lj = ls.json();
  ASSERT_EQ(lj["segments"].size(), 1u) << ls.out;
  EXPECT_EQ(lj["segments"][0]["path"], path);
  auto ls_direct = run_shmbpf("ls --json --match '" + path + "'");
  const json ldj = ls_direct.json();
  ASSERT_EQ(ldj["segments"].size(), 1u) << ls_direct.out;
  EXPECT_EQ(keys_of(lj), keys_of(ldj));
  EXPECT_EQ(keys_of(lj["segments"][0]), keys_of(ldj["segments"][0]));
  auto ls_text = run_shmbpf("ls --server " + sock + " --match '" + path + "'");
  EXPECT_EQ(ls_text.code, 0) << ls_text.err;
  EXPECT_NE(ls_text.out.find("PATH"), std::string::npos) << ls_text.out;
  EXPECT_NE(ls_text.out.find(path), std::string::npos) << ls_text.out;
  auto by_mount = run_shmbpf("ls --server " + sock + " --by mount --json");
  EXPECT_EQ(by_mount.code, 0) << by_mount.err;
  EXPECT_TRUE(by_mount.json()["mounts"].is_array()) << by_mount.out;
  // The mount and container tables, whose columns relate rows to processes
  // and mounts, and the containers' document: the host is a row of each.
  auto mounts_text = run_shmbpf("ls --server " + sock + " --by mount");
  EXPECT_EQ(mounts_text.code, 0) << mounts_text.err;
  EXPECT_NE(mounts_text.out.find("MOUNTPOINT"), std::string::npos) << mounts_text.out;
  EXPECT_NE(mounts_text.out.find("/dev/shm "), std::string::npos) << mounts_text.out;
  auto ctrs = run_shmbpf("ls --server " + sock + " --by container --json");
  EXPECT_EQ(ctrs.code, 0) << ctrs.err;
  const json cj = ctrs.json();
  ASSERT_TRUE(cj["containers"].is_array()) << ctrs.out;
  ASSERT_FALSE(cj["containers"].empty()) << ctrs.out;
  EXPECT_EQ(cj["containers"][0]["host"], true) << ctrs.out;
  EXPECT_GE(cj["containers"][0]["segments"].get<int>(), 1) << ctrs.out;
  auto ctrs_text = run_shmbpf("ls --server " + sock + " --by container");
  EXPECT_EQ(ctrs_text.code, 0) << ctrs_text.err;
  EXPECT_NE(ctrs_text.out.find("SHM MOUNT %"), std::string::npos) << ctrs_text.out;
  EXPECT_NE(ctrs_text.out.find("\nhost "), std::string::npos) << ctrs_text.out;

  auto leaks = run_shmbpf("leaks --server " + sock + " --min-age 0 --match '" + path + "'");
  EXPECT_EQ(leaks.code, 1) << leaks.out << leaks.err; // 1: leaks found
  EXPECT_NE(leaks.out.find(path), std::string::npos) << leaks.out;
  auto clean = run_shmbpf("leaks --server " + sock + " --match '/dev/shm/no-such-*'");
  EXPECT_EQ(clean.code, 0) << clean.out << clean.err;

  auto top = run_shmbpf("top --server " + sock + " -b -n 1 --by segments");
  EXPECT_EQ(top.code, 0) << top.err;
  EXPECT_NE(top.out.find("view: segments"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find(path), std::string::npos) << top.out;
  auto top_json = run_shmbpf("top --server " + sock + " -b --json -n 2 -d 0.2 --by segments");
  EXPECT_EQ(top_json.code, 0) << top_json.err;
  const auto frames = lines_of(top_json.out);
  ASSERT_EQ(frames.size(), 2u) << top_json.out;
  EXPECT_NE(frames[1].find(path), std::string::npos) << frames[1];

  // A member of the socket's group, not root, reads; anyone else cannot.
  ShmbpfProcess member({"ls", "--server", sock, "--json", "--match", path}, as_nobody({kApiGroup}));
  expect_exit_code(member.wait(30s), 0);
  const json mj = json::parse(member.out(), nullptr, false);
  ASSERT_FALSE(mj.is_discarded()) << member.out() << member.err();
  EXPECT_EQ(mj["segments"][0]["path"], path);
  ShmbpfProcess member_top({"top", "--server", sock, "-b", "-n", "1"}, as_nobody({kApiGroup}));
  expect_exit_code(member_top.wait(30s), 0);
  EXPECT_NE(member_top.out().find("view: processes"), std::string::npos) << member_top.err();
  ShmbpfProcess stranger({"ls", "--server", sock}, as_nobody({}));
  expect_exit_code(stranger.wait(30s), 2);
  EXPECT_EQ(stranger.out(), "");
  EXPECT_NE(stranger.err().find("Permission denied"), std::string::npos) << stranger.err();
  EXPECT_EQ(lines_of(stranger.err()).size(), 1u) << stranger.err();

  // Names and paths stay off TCP.
  auto metrics = get(port, "/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  const std::string name = path.substr(path.rfind('/') + 1);
  EXPECT_EQ(metrics->body.find(name), std::string::npos);
  for (const char *p : {"/v1/leaks", "/v1/segments?match=*", "/v1/top?view=segments"}) {
    auto r = get(port, p);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << p;
    EXPECT_EQ(r->body.find(name), std::string::npos) << p;
  }

  // A bad request is named.
  auto bad = get_unix(sock, "/v1/segments?pid=zero");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("pid"), std::string::npos) << bad->body;

  // The socket is gone with the daemon.
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
  EXPECT_NE(lstat(sock.c_str(), &st), 0) << "the socket outlived the daemon";
  auto gone = run_shmbpf("ls --server " + sock);
  EXPECT_EQ(gone.code, 2);
  EXPECT_NE(gone.err.find("no shmbpf serve at " + sock), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find("start it with sudo shmbpf serve"), std::string::npos) << gone.err;
}

// One orphan everywhere (docs/LEAKS.md): the sum of /metrics'
// shmbpf_orphaned_segments is the daemon's leaks orphan_count; a pid file
// left on another tmpfs is in neither, and only --all-mounts lists it.
TEST(ServeSocket, MetricsCountTheOrphansLeaksLists) {
  SHMBPF_REQUIRE_ROOT();
  TestTmpfs run("shmbpf-e2e-run");
  ASSERT_EQ(run.mount("size=1m"), "");
  SocketDir dir;
  const std::string sock = dir.sock();
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);
  Unlink cleanup;
  const std::string pidfile = run.dir() + "/daemon.pid";
  leave_file(pidfile);
  cleanup.paths.push_back(pidfile);
  const std::string path = make_leak("count");
  cleanup.paths.push_back(path);
  ASSERT_TRUE(wait_for_orphan(sock, path, 20s)) << serve.err();

  // Tests beside this one make and remove orphans: the same count read
  // between two equal scrapes is one moment's.
  auto orphaned = [&]() -> std::optional<double> {
    auto r = get(port, "/metrics");
    return r ? metric(r->body, "shmbpf_orphaned_segments", {}) : std::nullopt;
  };
  auto leaks_count = [&](const std::string &query) -> std::optional<json> {
    auto r = get_unix(sock, "/v1/leaks?min_age=0" + query);
    if (!r || r->status != 200)
      return std::nullopt;
    auto j = json::parse(r->body, nullptr, false);
    return j.is_discarded() ? std::nullopt : std::optional<json>(j);
  };
  bool agreed = false;
  std::string last;
  for (auto deadline = Clock::now() + 30s; !agreed && Clock::now() < deadline;) {
    const auto before = orphaned();
    const auto leaks = leaks_count("");
    const auto after = orphaned();
    if (before && leaks && after && *before == *after) {
      agreed = *before == (*leaks)["orphan_count"].get<double>();
      last = std::to_string(*before) + " in /metrics, " + (*leaks)["orphan_count"].dump() +
             " in /v1/leaks";
    }
    if (!agreed)
      std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(agreed) << last;
  const auto in_run = leaks_count("&match=" + pidfile);
  ASSERT_TRUE(in_run);
  EXPECT_EQ((*in_run)["orphan_count"], 0) << in_run->dump();
  const auto all = leaks_count("&match=" + pidfile + "&all_mounts=1");
  ASSERT_TRUE(all);
  EXPECT_EQ((*all)["orphan_count"], 1) << all->dump();
  auto r = get(port, "/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(
      metric(r->body, "shmbpf_orphaned_segments", {"mountpoint=\"" + run.dir() + "\""}).value_or(0),
      0)
      << r->body;
}

TEST(ServeSocket, StuckClientsDoNotStopTheDaemon) {
  SHMBPF_REQUIRE_ROOT();
  SocketDir dir;
  const std::string sock = dir.sock();
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);
  Unlink cleanup;

  // More stuck clients than the server has threads (4): each connects and
  // sends half a request, then nothing, and holds a thread until the
  // server's read timeout (5 s) cuts it off.
  std::vector<int> stuck;
  for (int i = 0; i < 6; ++i) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0) << strerror(errno);
    const char half[] = "GET /v1/segments HTTP/1.1\r\nHost: loc";
    ASSERT_EQ(write(fd, half, sizeof half - 1), static_cast<ssize_t>(sizeof half - 1));
    stuck.push_back(fd);
  }
  const std::string path = make_leak("stuck");
  cleanup.paths.push_back(path);
  // The consumer kept going: the event loop's heartbeat is fresh, and the
  // leak made while the clients hang is listed once a thread is free.
  auto health = get(port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  const auto asked = Clock::now();
  auto api = wait_for_orphan(sock, path, 60s);
  EXPECT_TRUE(api) << "the daemon never listed " << path << " ("
                   << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - asked).count()
                   << " s); stderr: " << serve.err();
  for (int fd : stuck)
    close(fd);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

TEST(ServeSocket, UnusableSocketsAreRefusedWithNothingStarted) {
  SHMBPF_REQUIRE_ROOT();
  SocketDir dir;
  const std::string file = dir.path + "/plain-file";
  std::ofstream(file) << "not a socket\n";
  for (const std::string &bad : {dir.path + "/missing/dir/x.sock", file, file + "/x.sock"}) {
    const int port = free_port();
    ShmbpfProcess serve(
        {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", bad});
    expect_exit_code(serve.wait(30s), 2);
    const auto lines = lines_of(serve.err());
    ASSERT_EQ(lines.size(), 1u) << serve.err();
    EXPECT_TRUE(lines[0].starts_with("shmbpf: socket " + bad)) << lines[0];
    EXPECT_FALSE(get(port, "/healthz")) << "TCP still answers after " << bad;
  }
  struct stat st {};
  ASSERT_EQ(lstat(file.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "a file that is not a socket was replaced";

  // A live daemon's socket is refused; that daemon keeps it.
  const int port = free_port();
  ShmbpfProcess first({"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port),
                       "--socket", dir.sock()});
  SHMBPF_SERVE_READY(first, port);
  ShmbpfProcess second({"serve", "--no-state", "--listen",
                        "127.0.0.1:" + std::to_string(free_port()), "--socket", dir.sock()});
  expect_exit_code(second.wait(30s), 2);
  EXPECT_NE(second.err().find("listens there already"), std::string::npos) << second.err();
  auto still = get_unix(dir.sock(), "/readyz");
  ASSERT_TRUE(still) << "the first daemon lost its socket";
  EXPECT_EQ(still->status, 200);
  first.signal(SIGTERM);
  expect_exit_code(first.wait(30s), 0);
}

TEST(ServeSocket, BadFlagsAreOneLineAndStatusTwo) {
  const std::string long_path = "/tmp/" + std::string(120, 's') + ".sock";
  for (const std::string &args :
       {"serve --socket " + long_path, std::string("serve --socket-group no-such-group-shmbpf"),
        std::string("serve --no-socket --socket /tmp/x.sock"), "ls --server " + long_path,
        std::string("leaks --server /tmp/x.sock --runtime-root docker=/tmp"),
        std::string("top --server /tmp/x.sock --ring-buffer-size 1048576"),
        std::string("ls --server /tmp/x.sock extra")}) {
    auto r = run_shmbpf(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << args << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("shmbpf: ")) << r.err;
  }
  SocketDir dir;
  // No daemon at the socket: the same for every client.
  for (const char *cmd : {"ls", "leaks", "top -b -n 1"}) {
    auto r = run_shmbpf(std::string(cmd) + " --server " + dir.sock());
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_NE(r.err.find("no shmbpf serve at " + dir.sock()), std::string::npos) << r.err;
  }
  for (const char *cmd : {"serve", "ls", "leaks", "top"}) {
    auto help = run_shmbpf(std::string(cmd) + " --help");
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.out.find(cmd == std::string("serve") ? "--socket" : "--server"),
              std::string::npos)
        << help.out;
    EXPECT_NE(help.out.find("/run/shmbpf/shmbpf.sock"), std::string::npos) << help.out;
  }
}

} // namespace
} // namespace shmbpf::test
