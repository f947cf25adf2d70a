// HTTP for `shmbpf serve`, spoken by cpp-httplib (Debian's libcpp-httplib):
// GETs answered on a few threads of the server's own, each request bounded
// by timeouts, so that a slow or stuck client costs a thread for a few
// seconds and never the consumer of the ring buffer.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/listen.hpp"

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

class HttpServer {
public:
  using GetFn = std::function<HttpReply(std::string_view path, const HttpQuery &query)>;
  // A POST: its path, body and the value of its kTokenHeader ("" if none).
  using PostFn = std::function<HttpReply(std::string_view path, std::string_view body,
                                         std::string_view token)>;
  static constexpr const char *kTokenHeader = "Shmbpf-Token";
  // The largest POST body taken.
  static constexpr size_t kMaxPostBody = size_t{8} << 20;

  // Binds addr, then serves GETs with get until destroyed. Throws
  // FatalError (exit status 2) when addr cannot be bound: nothing runs then.
  HttpServer(const ListenAddress &addr, GetFn get);
  // The same on a unix socket made with SocketSetting::kMode (a stale one
  // replaced, a live daemon's refused: prepare_socket_path), removed again
  // by the destructor; POSTs go to post when given.
  HttpServer(const UnixSocketAddress &addr, GetFn get, PostFn post = {});
  // Stops listening, lets the requests under way finish, joins the threads.
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

private:
  explicit HttpServer(GetFn get);
  void start();
  void remove_socket();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace shmbpf
