#include "daemon/http_server.hpp"

#include "daemon/unix_socket.hpp"
#include "facts/result.hpp"
#include "views/escape.hpp"

#include <httplib.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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
// GETs need no body; POSTs (the unix socket's only) take up to kMaxPostBody.
constexpr size_t kMaxBody = 4096;

} // namespace

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> done{false};
  // A unix socket's path and inode, removed at the end if still ours.
  std::string socket_path;
  dev_t socket_dev = 0;
  ino_t socket_ino = 0;
};

HttpServer::HttpServer(GetFn get) : impl_(std::make_unique<Impl>()) {
  httplib::Server &s = impl_->server;
  s.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  s.set_read_timeout(kReadTimeoutS, 0);
  s.set_write_timeout(kWriteTimeoutS, 0);
  s.set_keep_alive_timeout(kKeepAliveS);
  s.set_payload_max_length(kMaxBody);
  s.Get(".*", [get = std::move(get)](const httplib::Request &req, httplib::Response &res) {
    HttpReply r = get(req.path, req.params);
    res.status = r.status;
    for (const auto &[name, value] : r.headers)
      res.set_header(name.c_str(), value);
    res.set_content(r.body, r.content_type.c_str());
  });
}

HttpServer::HttpServer(const ListenAddress &addr, GetFn get) : HttpServer(std::move(get)) {
  httplib::Server &s = impl_->server;
  // SO_REUSEADDR only: a restart may bind while the old connections linger,
  // but a second daemon on the same port fails (SO_REUSEPORT would let both
  // listen and share the scrapes).
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    fcntl(sock, F_SETFD, FD_CLOEXEC);
  });
  errno = 0;
  if (!s.bind_to_port(addr.host, addr.port)) {
    const int err = errno;
    throw FatalError(
        "serve",
        "cannot listen on " + addr.text() + ": " + (err ? std::strerror(err) : "bind failed"), 2);
  }
  start();
}

HttpServer::HttpServer(const UnixSocketAddress &addr, GetFn get, PostFn post)
    : HttpServer(std::move(get)) {
  prepare_socket_path(addr.path);
  httplib::Server &s = impl_->server;
  if (post) {
    s.set_payload_max_length(kMaxPostBody);
    s.Post(".*", [post = std::move(post)](const httplib::Request &req, httplib::Response &res) {
      HttpReply r = post(req.path, req.body, req.get_header_value(kTokenHeader));
      res.status = r.status;
      res.set_content(r.body, r.content_type.c_str());
    });
  }
  s.set_address_family(AF_UNIX);
  // bind(2) makes the file with the socket's mode less the umask: set
  // before bind, the file never has more than kMode; the chmod below gives
  // it kMode exactly, whatever the umask.
  s.set_socket_options([](socket_t sock) {
    fchmod(sock, SocketSetting::kMode);
    fcntl(sock, F_SETFD, FD_CLOEXEC);
  });
  // The port means nothing on a unix socket, but 0 would have the library
  // ask the socket for the port it got, and fail.
  errno = 0;
  const bool bound = s.bind_to_port(addr.path, 1);
  const int err = errno;
  struct stat st {};
  const bool made = lstat(addr.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  if (made) { // ours: prepare_socket_path left nothing there
    impl_->socket_path = addr.path;
    impl_->socket_dev = st.st_dev;
    impl_->socket_ino = st.st_ino;
  }
  if (!bound || !made)
    throw FatalError("socket " + escape_text(addr.path),
                     std::string("cannot listen: ") + (err ? std::strerror(err) : "bind failed"),
                     2);
  // Made with root's group: the one named gets it before anyone is let in
  // (connect needs write permission, which only the owner has until then).
  if ((addr.group && chown(addr.path.c_str(), static_cast<uid_t>(-1), *addr.group) != 0) ||
      chmod(addr.path.c_str(), SocketSetting::kMode) != 0) {
    const int e = errno;
    remove_socket();
    throw FatalError("socket " + escape_text(addr.path), std::strerror(e), 2);
  }
  start();
}

void HttpServer::start() {
  impl_->thread = std::thread([impl = impl_.get()] {
    impl->server.listen_after_bind();
    impl->done.store(true);
  });
}

void HttpServer::remove_socket() {
  // Only the file this server made: a daemon started since may own the path.
  struct stat st {};
  if (!impl_->socket_path.empty() && lstat(impl_->socket_path.c_str(), &st) == 0 &&
      st.st_dev == impl_->socket_dev && st.st_ino == impl_->socket_ino)
    unlink(impl_->socket_path.c_str());
  impl_->socket_path.clear();
}

HttpServer::~HttpServer() {
  // stop() does nothing until the thread is inside its accept loop: repeat
  // until the thread is out of it.
  while (impl_->thread.joinable() && !impl_->done.load()) {
    impl_->server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (impl_->thread.joinable())
    impl_->thread.join();
  remove_socket();
}

} // namespace shmbpf
