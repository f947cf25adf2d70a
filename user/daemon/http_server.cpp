#include "daemon/http_server.hpp"

#include "facts/result.hpp"

#include <httplib.h>

#include <fcntl.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace shmbpf {

namespace {

// A scrape takes milliseconds; a client that sends or reads slower than
// this is cut off. An idle kept-alive connection holds a thread: it is
// closed after a few seconds (a scraper reconnects at its next scrape).
constexpr time_t kReadTimeoutS = 5;
constexpr time_t kWriteTimeoutS = 5;
constexpr time_t kKeepAliveS = 5;
// Threads that answer requests: a scraper or two, probes, a curl.
constexpr size_t kThreads = 4;
// Only GETs are served: no request needs a body.
constexpr size_t kMaxBody = 4096;

} // namespace

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> done{false};
};

HttpServer::HttpServer(const ListenAddress &addr, GetFn get) : impl_(std::make_unique<Impl>()) {
  httplib::Server &s = impl_->server;
  s.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  s.set_read_timeout(kReadTimeoutS, 0);
  s.set_write_timeout(kWriteTimeoutS, 0);
  s.set_keep_alive_timeout(kKeepAliveS);
  s.set_payload_max_length(kMaxBody);
  // SO_REUSEADDR only: a restart may bind while the old connections linger,
  // but a second daemon on the same port fails (SO_REUSEPORT would let both
  // listen and share the scrapes).
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    fcntl(sock, F_SETFD, FD_CLOEXEC);
  });
  s.Get(".*", [get = std::move(get)](const httplib::Request &req, httplib::Response &res) {
    HttpReply r = get(req.path);
    res.status = r.status;
    res.set_content(r.body, r.content_type);
  });
  errno = 0;
  if (!s.bind_to_port(addr.host, addr.port)) {
    const int err = errno;
    throw FatalError(
        "serve",
        "cannot listen on " + addr.text() + ": " + (err ? std::strerror(err) : "bind failed"), 2);
  }
  impl_->thread = std::thread([impl = impl_.get()] {
    impl->server.listen_after_bind();
    impl->done.store(true);
  });
}

HttpServer::~HttpServer() {
  // stop() does nothing until the thread is inside its accept loop: repeat
  // until the thread is out of it.
  while (!impl_->done.load()) {
    impl_->server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl_->thread.join();
}

} // namespace shmbpf
