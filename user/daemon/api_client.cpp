#include "daemon/api_client.hpp"

#include "daemon/http_server.hpp"
#include "daemon/local_api.hpp"
#include "daemon/unix_socket.hpp"
#include "facts/result.hpp"
#include "views/escape.hpp"

#include <httplib.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace shmbpf {

namespace {

// Connecting to a local socket is immediate; a reply is built from a copy
// of the model, which takes longer the more segments there are.
constexpr time_t kConnectTimeoutS = 2;
constexpr time_t kReadTimeoutS = 30;
constexpr time_t kWriteTimeoutS = 5;

} // namespace

ApiReply api_get(const std::string &socket, const std::string &path, const QueryFields &query) {
  const std::string where = escape_text(socket);
  if (const std::string why = SocketSetting::problem(socket); !why.empty())
    throw FatalError("--server " + where, "the path " + why, Exit::refused);
  // The library says only that it could not connect: ask the kernel why.
  if (const int err = probe_socket(socket); err != 0) {
    if (err == ECONNREFUSED || err == ENOENT)
      throw FatalError("no shmbpf serve at " + where,
                       std::string(std::strerror(err)) + "; start it with sudo shmbpf serve",
                       Exit::refused);
    if (err == EACCES || err == EPERM)
      throw FatalError("cannot connect to " + where,
                       std::string(std::strerror(err)) +
                           " (the socket admits its owner and its group: see shmbpf serve "
                           "--socket-group)",
                       Exit::refused);
    throw FatalError("cannot connect to " + where, std::strerror(err), Exit::refused);
  }
  httplib::Client client(socket);
  client.set_address_family(AF_UNIX);
  client.set_connection_timeout(kConnectTimeoutS, 0);
  client.set_read_timeout(kReadTimeoutS, 0);
  client.set_write_timeout(kWriteTimeoutS, 0);
  const std::string target = query.empty() ? path : path + "?" + query_string(query);
  const httplib::Result res = client.Get(target.c_str());
  if (!res)
    throw FatalError("shmbpf serve at " + where,
                     "no answer to " + escape_text(target) + ": " + httplib::to_string(res.error()),
                     Exit::refused);
  std::string body = res->body;
  while (!body.empty() && body.back() == '\n')
    body.pop_back();
  if (res->status == 503)
    throw FatalError("shmbpf serve at " + where,
                     "not ready yet (" + escape_text(body) + "); try again in a moment",
                     Exit::refused);
  if (res->status == 400) // a parameter it cannot take: its body says which and why
    throw FatalError("shmbpf serve at " + where, "refused the request: " + escape_text(body),
                     Exit::refused);
  if (res->status != 200)
    throw FatalError("shmbpf serve at " + where,
                     "HTTP " + std::to_string(res->status) + ": " + escape_text(body),
                     Exit::refused);
  ApiReply r;
  r.body = res->body;
  r.content_type = res->get_header_value("Content-Type");
  r.leaking = res->get_header_value(kLeakingHeader) == "yes";
  return r;
}

PostReply api_post(const std::string &socket, const std::string &path, const std::string &body,
                   const std::string &token) {
  PostReply r;
  httplib::Client client(socket);
  client.set_address_family(AF_UNIX);
  client.set_connection_timeout(kConnectTimeoutS, 0);
  client.set_read_timeout(kReadTimeoutS, 0);
  client.set_write_timeout(kWriteTimeoutS, 0);
  const httplib::Headers headers{{HttpServer::kTokenHeader, token}};
  const httplib::Result res = client.Post(path.c_str(), headers, body, "application/x-ndjson");
  if (!res) {
    r.body = httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.body = res->body;
  while (!r.body.empty() && r.body.back() == '\n')
    r.body.pop_back();
  return r;
}

} // namespace shmbpf
