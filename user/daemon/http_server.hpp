// HTTP for `shmbpf serve`, spoken by cpp-httplib (Debian's libcpp-httplib):
// GETs answered on a few threads of the server's own, each request bounded
// by timeouts, so that a slow or stuck client costs a thread for a few
// seconds and never the consumer of the ring buffer.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/listen.hpp"

#include <functional>
#include <memory>
#include <string_view>

namespace shmbpf {

class HttpServer {
public:
  using GetFn = std::function<HttpReply(std::string_view path)>;

  // Binds addr, then serves GETs with get until destroyed. Throws
  // FatalError (exit status 2) when addr cannot be bound: nothing runs then.
  HttpServer(const ListenAddress &addr, GetFn get);
  // Stops listening, lets the requests under way finish, joins the threads.
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace shmbpf
