// What the end-to-end tests of `shmbpf serve` share: free loopback ports,
// GETs over TCP, reading /metrics, and waiting for the daemon to be ready.
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

} // namespace shmbpf::test
