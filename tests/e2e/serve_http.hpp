// `shmbpf serve` from end-to-end tests: a free loopback port, HTTP GETs,
// a metric's value from /metrics, waiting for /readyz, promtool's verdict.
#pragma once

#include "background.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr auto kStartTimeout = 60s; // loading BPF and the first scan, on a busy machine
inline constexpr uint64_t kMiB = 1 << 20;

// A socket on 127.0.0.1 bound to a port the kernel picked, and listening
// when asked; closed by the destructor.
struct PortHolder {
  int fd = -1;
  int port = 0;
  explicit PortHolder(bool listening, bool reuseport = false) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (reuseport)
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0 ||
        (listening && listen(fd, 4) != 0))
      std::abort();
    port = ntohs(a.sin_port);
  }
  ~PortHolder() { close(fd); }
};

// A port nothing listens on now (the kernel's pick, let go).
inline int free_port() { return PortHolder(false).port; }

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

inline std::optional<Reply> get(int port, const std::string &path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path.c_str());
  if (!r)
    return std::nullopt;
  return Reply{r->status, r->body, r->get_header_value("Content-Type")};
}

// The sum of a family's samples whose label block contains every part.
inline std::optional<double> metric(const std::string &text, const std::string &name,
                                    const std::vector<std::string> &parts) {
  std::optional<double> sum;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name + "{") && !line.starts_with(name + " "))
      continue;
    const size_t close = line.rfind('}');
    const std::string labels = close == std::string::npos ? "" : line.substr(0, close + 1);
    bool all = true;
    for (const auto &p : parts)
      all = all && labels.find(p) != std::string::npos;
    if (all)
      sum = sum.value_or(0) + std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// Waits for /readyz to answer 200. A machine where BPF cannot load (serve
// exits with 2, the "cannot run here" status) skips, except under CI=true
// where it fails.
#define SHMBPF_SERVE_READY(serve, port)                                                            \
  do {                                                                                             \
    const auto deadline_ = Clock::now() + kStartTimeout;                                           \
    bool ready_ = false;                                                                           \
    while (!ready_ && !(serve).exited() && Clock::now() < deadline_) {                             \
      auto r_ = get(port, "/readyz");                                                              \
      ready_ = r_ && r_->status == 200;                                                            \
      if (!ready_)                                                                                 \
        std::this_thread::sleep_for(100ms);                                                        \
    }                                                                                              \
    if (!ready_) {                                                                                 \
      (serve).wait(2s);                                                                            \
      const auto st_ = (serve).status();                                                           \
      if (!in_ci() && st_ && WIFEXITED(*st_) && WEXITSTATUS(*st_) == 2)                            \
        GTEST_SKIP() << "shmbpf serve cannot run here: " << (serve).err();                         \
      FAIL() << "shmbpf serve never got ready; stderr: " << (serve).err();                         \
    }                                                                                              \
  } while (0)

// promtool, Prometheus' own linter, on exposition text: no complaint. A
// machine without it passes, except under CI=true.
inline void expect_promtool_accepts(const std::string &text) {
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    if (in_ci())
      ADD_FAILURE() << "promtool is missing (Debian package prometheus)";
    return;
  }
  char path[] = "/tmp/shmbpf-e2e-metrics-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  const std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, n);
  const int status = pclose(p);
  unlink(path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.empty())
      << "promtool check metrics: " << out;
}

} // namespace shmbpf::test
