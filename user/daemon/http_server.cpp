#include "daemon/http_server.hpp"

#include "daemon/http_access.hpp"
#include "daemon/unix_socket.hpp"
#include "facts/result.hpp"
#include "views/escape.hpp"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

// Threads that poll the connections and answer: a scrape takes
// milliseconds, and a slow client holds no thread.
constexpr unsigned kThreads = 2;
// How often the acceptor looks for connections past their time.
constexpr int kTickMs = 200;

bool is_probe(std::string_view path) { return path == "/healthz" || path == "/readyz"; }

int connection_fd(MHD_Connection *c) {
  const MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info ? info->connect_fd : -1;
}

bool peer_is_root(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0;
}

HttpReply text_reply(int status, std::string body) {
  HttpReply r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// Queues r on c, its body handed over (not copied); close: the connection
// ends after it.
MHD_Result queue(MHD_Connection *c, HttpReply r, bool close = false) {
  auto *body = new std::string(std::move(r.body));
  MHD_Response *res = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), [](void *p) { delete static_cast<std::string *>(p); }, body);
  if (!res) {
    delete body;
    return MHD_NO;
  }
  if (!r.content_type.empty())
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto &[name, value] : r.headers)
    MHD_add_response_header(res, name.c_str(), value.c_str());
  if (close)
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONNECTION, "close");
  const MHD_Result queued = MHD_queue_response(c, static_cast<unsigned>(r.status), res);
  MHD_destroy_response(res);
  return queued;
}

MHD_Result add_query(void *cls, MHD_ValueKind, const char *key, const char *value) {
  static_cast<HttpQuery *>(cls)->emplace(key ? key : "", value ? value : "");
  return MHD_YES;
}

// What a request's headers say of its framing: how many Content-Length and
// Transfer-Encoding headers came.
struct HeaderCheck {
  int lengths = 0;
  int encodings = 0;
};

MHD_Result check_header(void *cls, MHD_ValueKind, const char *key, const char *) {
  auto &check = *static_cast<HeaderCheck *>(cls);
  check.lengths += key && strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0;
  check.encodings += key && strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0;
  return MHD_YES;
}

// A request's state between the calls the library makes for it: whether
// it is answered, and a POST's body so far.
struct Request {
  bool answered = false;
  bool too_large = false;
  std::string body;
};

// addr as a socket address in ss: its length, 0 when its host is not an
// address.
socklen_t socket_address(const ListenAddress &addr, sockaddr_storage &ss) {
  if (addr.ipv6) {
    auto &a = reinterpret_cast<sockaddr_in6 &>(ss);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(addr.port);
    return inet_pton(AF_INET6, addr.host.c_str(), &a.sin6_addr) == 1 ? sizeof a : 0;
  }
  auto &a = reinterpret_cast<sockaddr_in &>(ss);
  a.sin_family = AF_INET;
  a.sin_port = htons(addr.port);
  return inet_pton(AF_INET, addr.host.c_str(), &a.sin_addr) == 1 ? sizeof a : 0;
}

[[noreturn]] void cannot_listen(const std::string &where, int err) {
  throw FatalError(where, std::string("cannot listen: ") + std::strerror(err), Exit::refused);
}

} // namespace

struct HttpServer::Impl {
  explicit Impl(WebSecurity web) : access(std::move(web)) {}
  GetFn get;
  PostFn post;
  HttpAccess access; // TLS and basic auth: nothing on the unix socket
  int listen_fd = -1;
  int wake_fd = -1;
  MHD_Daemon *daemon = nullptr;
  std::thread acceptor;
  // The connections open, by descriptor: entered when the library starts
  // one, left when it closes it (before the descriptor is closed, so a
  // descriptor here is always the connection's own).
  struct Open {
    Clock::time_point deadline;
    bool probe_slot = false;
    bool cut = false;
  };
  std::mutex mu;
  std::unordered_map<int, Open> open;
  // A unix socket's path and inode, removed at the end if still ours.
  std::string socket_path;
  dev_t socket_dev = 0;
  ino_t socket_ino = 0;

  static std::chrono::seconds time_for(bool probe_slot) {
    return std::chrono::seconds(probe_slot ? HttpLimits::kProbeSeconds
                                           : HttpLimits::kRequestSeconds);
  }

  void started(int fd) {
    std::lock_guard lock(mu);
    const bool probe_slot = open.size() >= HttpLimits::kConnections - HttpLimits::kProbeSlots;
    open[fd] = Open{Clock::now() + time_for(probe_slot), probe_slot, false};
  }
  void closed(int fd) {
    std::lock_guard lock(mu);
    open.erase(fd);
  }
  // An answer sent in full: the next request has its own time.
  void answered(int fd) {
    std::lock_guard lock(mu);
    if (auto it = open.find(fd); it != open.end() && !it->second.cut)
      it->second.deadline = Clock::now() + time_for(it->second.probe_slot);
  }
  bool on_probe_slot(int fd) {
    std::lock_guard lock(mu);
    auto it = open.find(fd);
    return it != open.end() && it->second.probe_slot;
  }
  // Ends connections past their time: the library sees them hang up.
  void cut_late() {
    std::lock_guard lock(mu);
    const auto now = Clock::now();
    for (auto &[fd, o] : open)
      if (!o.cut && o.deadline <= now) {
        shutdown(fd, SHUT_RDWR);
        o.cut = true;
      }
  }
  bool full() {
    std::lock_guard lock(mu);
    return open.size() >= HttpLimits::kConnections;
  }

  // Accepts here (not in the library, whose 0.9.75 accept(2) buffer is a
  // sockaddr_in6 that a unix client's long bound path overruns), then hands
  // the connection over.
  void accept_loop() {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    for (;;) {
      const int n = poll(fds, 2, kTickMs);
      if (n > 0 && fds[1].revents)
        return;
      if (n > 0 && (fds[0].revents & POLLIN))
        accept_one();
      cut_late();
    }
  }
  void accept_one() {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr *>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the next tick tries again, and the connections
      // cut meanwhile give some back.
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(kTickMs));
      return;
    }
    if (full()) {
      close(fd);
      return;
    }
    // Refused (the per-address limit), the library closes fd itself.
    MHD_add_connection(daemon, fd, reinterpret_cast<sockaddr *>(&from), len);
  }

  // The library calls this for the headers, for each piece of a body, and
  // once more at its end. Refusals go at once (the connection closes after
  // them); answers at the end, which keeps the connection alive.
  MHD_Result answer(MHD_Connection *c, std::string_view path, std::string_view method,
                    const char *upload, size_t *upload_size, void **ctx) {
    if (*ctx == nullptr) {
      *ctx = new Request;
      auto &req = *static_cast<Request *>(*ctx);
      if (auto refusal = refuse(c, path, method)) {
        req.answered = true;
        return queue(c, std::move(*refusal), true);
      }
      return MHD_YES;
    }
    auto &req = *static_cast<Request *>(*ctx);
    if (*upload_size > 0) { // a POST's body is kept, any other dropped
      const bool keep = method == MHD_HTTP_METHOD_POST && !req.answered;
      if (keep && req.body.size() + *upload_size > kMaxPostBody)
        req.too_large = true;
      else if (keep)
        req.body.append(upload, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    if (req.answered)
      return MHD_YES;
    req.answered = true;
    if (method == MHD_HTTP_METHOD_POST) {
      if (req.too_large)
        return queue(c, text_reply(413, "body too large\n"), true);
      const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, kTokenHeader);
      return queue(c, post(path, req.body, token ? token : ""));
    }
    HttpQuery query;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &add_query, &query);
    return queue(c, get(path, query));
  }

  // What a request's headers alone refuse: a method not served, ambiguous
  // framing, any path but a probe's on a probe slot, missing credentials, a
  // POST from anyone but root or too large.
  std::optional<HttpReply> refuse(MHD_Connection *c, std::string_view path,
                                  std::string_view method) {
    const int fd = connection_fd(c);
    const bool is_post = method == MHD_HTTP_METHOD_POST && post;
    if (!is_post && method != MHD_HTTP_METHOD_GET && method != MHD_HTTP_METHOD_HEAD) {
      HttpReply r = text_reply(405, "method not allowed\n");
      r.headers.emplace_back("Allow", post ? "GET, HEAD, POST" : "GET, HEAD");
      return r;
    }
    // Framing two readers could read two ways: refused, as RFC 9112 section
    // 6.3 has it.
    HeaderCheck check;
    MHD_get_connection_values(c, MHD_HEADER_KIND, &check_header, &check);
    if (check.lengths > 1 || check.encodings > 1 || (check.lengths && check.encodings))
      return text_reply(400, "bad request: its headers frame it ambiguously\n");
    if (on_probe_slot(fd) && (is_post || !is_probe(path)))
      return text_reply(503, "busy: every connection is taken; this one answers only /healthz "
                             "and /readyz\n");
    if (auto denied = access.refuse(c, is_probe(path)))
      return denied;
    if (!is_post)
      return std::nullopt;
    if (!peer_is_root(fd))
      return text_reply(403, "only root may post here\n");
    const char *length =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && std::strtoull(length, nullptr, 10) > kMaxPostBody)
      return text_reply(413, "body too large\n");
    return std::nullopt;
  }
};

namespace {

MHD_Result on_request(void *cls, MHD_Connection *c, const char *url, const char *method,
                      const char *, const char *upload, size_t *upload_size, void **ctx) {
  return static_cast<HttpServer::Impl *>(cls)->answer(c, url ? url : "", method ? method : "",
                                                      upload, upload_size, ctx);
}

void on_completed(void *cls, MHD_Connection *c, void **ctx, MHD_RequestTerminationCode toe) {
  delete static_cast<Request *>(*ctx);
  *ctx = nullptr;
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    static_cast<HttpServer::Impl *>(cls)->answered(connection_fd(c));
}

void on_connection(void *cls, MHD_Connection *c, void **, MHD_ConnectionNotificationCode code) {
  auto *impl = static_cast<HttpServer::Impl *>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    impl->started(connection_fd(c));
    if (!impl->access.connection_started(c))
      shutdown(connection_fd(c), SHUT_RDWR); // fails closed
  } else
    impl->closed(connection_fd(c));
}

} // namespace

HttpServer::HttpServer(GetFn get, PostFn post, WebSecurity web)
    : impl_(std::make_unique<Impl>(std::move(web))) {
  impl_->get = std::move(get);
  impl_->post = std::move(post);
}

HttpServer::HttpServer(const ListenAddress &addr, GetFn get, WebSecurity web)
    : HttpServer(std::move(get), {}, std::move(web)) {
  const std::string where = "serve";
  const int family = addr.ipv6 ? AF_INET6 : AF_INET;
  sockaddr_storage ss{};
  const socklen_t len = socket_address(addr, ss);
  if (len == 0)
    throw FatalError(where, "cannot listen on " + addr.text() + ": not an address", Exit::refused);
  impl_->listen_fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  // SO_REUSEADDR only: a restart may bind while the old connections linger,
  // but a second daemon on the same port fails (SO_REUSEPORT would let both
  // listen and share the scrapes).
  const int yes = 1;
  if (impl_->listen_fd < 0 ||
      setsockopt(impl_->listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0 ||
      bind(impl_->listen_fd, reinterpret_cast<sockaddr *>(&ss), len) != 0 ||
      listen(impl_->listen_fd, SOMAXCONN) != 0) {
    const int err = errno;
    throw FatalError(where, "cannot listen on " + addr.text() + ": " + std::strerror(err),
                     Exit::refused);
  }
  start(HttpLimits::kPerAddress);
}

HttpServer::HttpServer(const UnixSocketAddress &addr, GetFn get, PostFn post)
    : HttpServer(std::move(get), std::move(post), {}) {
  const std::string where = "socket " + escape_text(addr.path);
  prepare_socket_path(addr.path);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  if (addr.path.size() >= sizeof un.sun_path)
    cannot_listen(where, ENAMETOOLONG);
  std::memcpy(un.sun_path, addr.path.data(), addr.path.size());
  impl_->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl_->listen_fd < 0)
    cannot_listen(where, errno);
  // bind(2) makes the file with the socket's mode less the umask: set
  // before bind, the file never has more than kMode; the chmod below gives
  // it kMode exactly, whatever the umask.
  fchmod(impl_->listen_fd, SocketSetting::kMode);
  if (bind(impl_->listen_fd, reinterpret_cast<sockaddr *>(&un), sizeof un) != 0)
    cannot_listen(where, errno);
  struct stat st {};
  if (lstat(addr.path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
    cannot_listen(where, ENOENT);
  impl_->socket_path = addr.path; // ours: prepare_socket_path left nothing there
  impl_->socket_dev = st.st_dev;
  impl_->socket_ino = st.st_ino;
  // Made with root's group: the one named gets it before anyone is let in
  // (connect needs write permission, which only the owner has until then).
  if ((addr.group && chown(addr.path.c_str(), static_cast<uid_t>(-1), *addr.group) != 0) ||
      chmod(addr.path.c_str(), SocketSetting::kMode) != 0 ||
      listen(impl_->listen_fd, SOMAXCONN) != 0) {
    const int e = errno;
    remove_socket();
    throw FatalError(where, std::strerror(e), Exit::refused);
  }
  start(0); // a throw from here on runs the destructor, which removes the socket
}

void HttpServer::start(unsigned per_address) {
  Impl &m = *impl_;
  m.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m.wake_fd < 0)
    throw FatalError("serve", std::string("cannot start HTTP: ") + std::strerror(errno),
                     Exit::refused);
  // The connections accept_one() hands over get TLS from the library too.
  const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | m.access.flags();
  // An option and its value a line, each value of the type the library
  // reads (unsigned int, size_t, int). Strict: HTTP/1.1 needs Host, and a
  // target has no space.
  // clang-format off
  m.daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_request, &m,
      MHD_OPTION_THREAD_POOL_SIZE, kThreads,
      MHD_OPTION_CONNECTION_LIMIT, HttpLimits::kConnections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, HttpLimits::kConnectionMemory,
      MHD_OPTION_CONNECTION_TIMEOUT, HttpLimits::kIdleSeconds,
      MHD_OPTION_STRICT_FOR_CLIENT, 1,
      MHD_OPTION_NOTIFY_COMPLETED, &on_completed, &m,
      MHD_OPTION_NOTIFY_CONNECTION, &on_connection, &m,
      MHD_OPTION_ARRAY, m.access.options(),
      MHD_OPTION_END);
  // clang-format on
  if (!m.daemon)
    throw FatalError("serve", "cannot start HTTP (libmicrohttpd refused its options)",
                     Exit::refused);
  m.acceptor = std::thread([&m] { m.accept_loop(); });
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
  Impl &m = *impl_;
  if (m.acceptor.joinable()) {
    const uint64_t one = 1;
    while (write(m.wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    m.acceptor.join();
  }
  if (m.daemon)
    MHD_stop_daemon(m.daemon);
  if (m.wake_fd >= 0)
    close(m.wake_fd);
  if (m.listen_fd >= 0)
    close(m.listen_fd);
  remove_socket();
}

} // namespace shmbpf
