// `shmbpf serve` end to end: the daemon on a free loopback port, ready once
// BPF is attached and the first scan applied; a /dev/shm leak (its creator,
// in a docker-named cgroup, exits and nobody holds the files) seen rising in
// /metrics under that container's labels; promtool's verdict on what is
// served; huge pages off in the daemon; SIGHUP survived, SIGTERM obeyed; a
// taken port and bad flags refused with one line and status 2.
#include "background.hpp"
#include "docker_cgroup.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

TEST(ServeCli, LeakRisesInMetricsPromtoolAgreesAndSigtermStops) {
  SHMBPF_REQUIRE_ROOT();
  DockerCgroup cgroup("shmbpf-e2e-serve.slice");
  ASSERT_EQ(cgroup.create(), "") << "cannot create a cgroup v2 directory";
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--no-socket"});
  SHMBPF_SERVE_READY(serve, port);

  // The daemon keeps its tables in small pages: huge ones, each resident
  // as a whole, cost it more memory per segment (docs/BENCHMARKS.md,
  // finding 27).
  std::ifstream status("/proc/" + std::to_string(serve.pid()) + "/status");
  std::string status_line, thp;
  while (std::getline(status, status_line))
    if (status_line.rfind("THP_enabled:", 0) == 0)
      std::istringstream(status_line.substr(12)) >> thp;
  EXPECT_EQ(thp, "0") << "transparent huge pages still on in the daemon";

  auto health = get(port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto landing = get(port, "/");
  ASSERT_TRUE(landing);
  EXPECT_NE(landing->body.find("href=\"/metrics\""), std::string::npos);
  auto missing = get(port, "/nothing-here");
  EXPECT_TRUE(missing && missing->status == 404);

  const std::string ctr = "container_id=\"docker://" + cgroup.id() + "\"";
  const std::vector<std::string> where = {ctr, "mountpoint=\"/dev/shm\"", "kind=\"tmpfs\""};
  auto first = get(port, "/metrics");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  EXPECT_EQ(first->content_type, "text/plain; version=0.0.4; charset=utf-8");
  const double before = metric(first->body, "shmbpf_orphaned_segments", where).value_or(0);
  EXPECT_EQ(before, 0);

  // A client stuck halfway through its request holds one of the server's
  // threads until the read timeout, and nothing else: the leak below must
  // still reach /metrics.
  const int stuck = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stuck, reinterpret_cast<sockaddr *>(&to), sizeof to), 0);
  const std::string half = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(write(stuck, half.data(), half.size()), static_cast<ssize_t>(half.size()));
  struct Close {
    int fd;
    ~Close() { close(fd); }
  } close_stuck{stuck};

  // The leak: three 1 MiB files in /dev/shm, written, closed, their creator
  // (in the container's cgroup) gone.
  const std::string prefix = "/dev/shm/shmbpf-e2e-serve-" + std::to_string(getpid()) + "-";
  struct Unlink {
    std::string prefix;
    ~Unlink() {
      for (int i = 0; i < 3; ++i)
        unlink((prefix + std::to_string(i)).c_str());
    }
  } unlink_after{prefix};
  const std::string data(kMiB, 'l');
  const std::vector<std::string> paths = {prefix + "0", prefix + "1", prefix + "2"};
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!cgroup.enter())
      _exit(3);
    for (const std::string &path : paths) {
      int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 || write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()))
        _exit(4);
      close(fd);
    }
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "leaking child: status " << st;

  // Sizes come from the re-stat of touched files (writes send no event),
  // the container from resolving its cgroup: both within a few seconds.
  std::string text;
  double orphans = 0, bytes = 0;
  const auto deadline = Clock::now() + 20s;
  while (Clock::now() < deadline) {
    auto r = get(port, "/metrics");
    ASSERT_TRUE(r);
    text = r->body;
    orphans = metric(text, "shmbpf_orphaned_segments", where).value_or(0);
    bytes = metric(text, "shmbpf_orphaned_bytes", where).value_or(0);
    if (orphans == before + 3 && bytes == 3.0 * kMiB)
      break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(orphans, before + 3) << text;
  EXPECT_EQ(bytes, 3.0 * kMiB) << text;
  EXPECT_EQ(metric(text, "shmbpf_segments", where), 3) << text;
  // Host-wide sums contain them too.
  EXPECT_GE(metric(text, "shmbpf_orphaned_segments", {}).value_or(0), 3);
  // Never a path or a pid.
  EXPECT_EQ(text.find("shmbpf-e2e-serve-"), std::string::npos);
  EXPECT_EQ(text.find("pid=\""), std::string::npos);
  EXPECT_EQ(text.find("path=\""), std::string::npos);
  EXPECT_EQ(metric(text, "shmbpf_build_info", {"version=\""}), 1);
  EXPECT_GE(metric(text, "shmbpf_events_total", {"event=\"create\""}).value_or(0), 3);
  EXPECT_GE(metric(text, "shmbpf_bpf_program_attached", {}).value_or(0), 1);

  // promtool, Prometheus' own linter, on exactly what was served.
  expect_promtool_accepts(text);

  // SIGHUP is for reopening files, not for stopping.
  serve.signal(SIGHUP);
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(serve.exited()) << serve.err();
  auto alive = get(port, "/healthz");
  EXPECT_TRUE(alive && alive->status == 200);

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(10s), 0);
  // Every line of the log is stamped; the notable things are there.
  const std::regex stamped(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z shmbpf: .+)");
  const std::string log = serve.err();
  for (const std::string &line : lines_of(log))
    EXPECT_TRUE(std::regex_match(line, stamped)) << line;
  for (const std::string &want :
       {"listening on http://127.0.0.1:" + std::to_string(port), std::string("ready: "),
        std::string("SIGHUP: "), std::string("SIGTERM: stopping")})
    EXPECT_NE(log.find(want), std::string::npos) << want << " not in\n" << log;
  // Nothing listens any more.
  EXPECT_FALSE(get(port, "/healthz"));
}

TEST(ServeCli, PortInUseIsOneLineAndStatusTwo) {
  SHMBPF_REQUIRE_ROOT();
  // SO_REUSEPORT on the taken socket: a daemon that set it too would share
  // the port instead of failing.
  PortHolder taken(true, true);
  // Bounded: a daemon that bound the port anyway would run until killed.
  ShmbpfProcess serve({"serve", "--no-state", "--no-socket", "--listen",
                       "127.0.0.1:" + std::to_string(taken.port)});
  expect_exit_code(serve.wait(30s), 2);
  EXPECT_EQ(serve.out(), "");
  const auto lines = lines_of(serve.err());
  ASSERT_EQ(lines.size(), 1u) << serve.err();
  EXPECT_NE(lines[0].find("127.0.0.1:" + std::to_string(taken.port)), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("in use"), std::string::npos) << lines[0];
  EXPECT_TRUE(lines[0].starts_with("shmbpf: ")) << lines[0];
}

TEST(ServeCli, BadFlagsAreOneLineAndStatusTwo) {
  for (const char *args :
       {"serve --listen nonsense", "serve --listen 127.0.0.1:0", "serve --listen 127.0.0.1:70000",
        "serve --listen localhost:19746", "serve --bogus", "serve --ring-buffer-size 1000"}) {
    auto r = run_shmbpf(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << args << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("shmbpf: ")) << r.err;
  }
  auto help = run_shmbpf("serve --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--listen"), std::string::npos);
  EXPECT_NE(help.out.find("127.0.0.1:19746"), std::string::npos) << help.out;
}

} // namespace
} // namespace shmbpf::test
