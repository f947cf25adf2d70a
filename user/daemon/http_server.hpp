// HTTP for `shmbpf serve`, spoken by libmicrohttpd (Debian's
// libmicrohttpd12): connections are polled (epoll) by a couple of threads,
// so a slow or idle client costs a slot and a little memory, never a thread
// or the consumer of the ring buffer. What a client may hold is bounded
// (docs/SECURITY.md): connections in all and per address, memory per
// connection (request line and headers included), and time per request;
// the last few slots answer only /healthz and /readyz, so that a liveness
// probe gets through while others hold every other one.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/listen.hpp"
#include "daemon/web_config.hpp"

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

// A unix socket to serve on: its path, and the group that may connect
// (nullopt: the creator's).
struct UnixSocketAddress {
  std::string path;
  std::optional<gid_t> group;
};

struct HttpLimits {
  // Connections open at once, all clients together; the last kProbeSlots
  // of them answer /healthz and /readyz alone.
  static constexpr unsigned kConnections = 256;
  static constexpr unsigned kProbeSlots = 16;
  // Connections open at once from one IP address (TCP).
  static constexpr unsigned kPerAddress = 16;
  // A connection's memory: its request line, headers and buffers. A request
  // that needs more is answered 431 (headers) or 414 (its target).
  static constexpr size_t kConnectionMemory = size_t{32} << 10;
  // From a connection's start, or from its last answer, to the next answer
  // sent in full; a probe slot has kProbeSeconds. A connection past its
  // time is cut, whatever it is doing.
  static constexpr unsigned kRequestSeconds = 20;
  static constexpr unsigned kProbeSeconds = 3;
  // A kept-alive connection with nothing to say is closed after this.
  static constexpr unsigned kIdleSeconds = 5;
  // The largest POST body taken (the unix socket's, from root only).
  static constexpr size_t kMaxPostBody = size_t{8} << 20;
};

class HttpServer {
public:
  using GetFn = std::function<HttpReply(std::string_view path, const HttpQuery &query)>;
  // A POST: its path, body and the value of its kTokenHeader ("" if none).
  using PostFn = std::function<HttpReply(std::string_view path, std::string_view body,
                                         std::string_view token)>;
  static constexpr const char *kTokenHeader = "Shmbpf-Token";
  static constexpr size_t kMaxPostBody = HttpLimits::kMaxPostBody;

  // Binds addr, then serves GETs with get until destroyed, over TLS and
  // behind basic auth when web asks for them (http_access). Throws
  // FatalError (exit status 2) when addr cannot be bound: nothing runs then.
  HttpServer(const ListenAddress &addr, GetFn get, WebSecurity web = {});
  // The same on a unix socket made with SocketSetting::kMode (a stale one
  // replaced, a live daemon's refused: prepare_socket_path), removed again
  // by the destructor; POSTs go to post when given, from root's processes
  // only (the peer's credentials), others are refused before their body.
  HttpServer(const UnixSocketAddress &addr, GetFn get, PostFn post = {});
  // Stops listening, closes every connection, joins the threads.
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  struct Impl;

private:
  HttpServer(GetFn get, PostFn post, WebSecurity web);
  void start(unsigned per_address);
  void remove_socket();

  std::unique_ptr<Impl> impl_;
};

} // namespace shmbpf
