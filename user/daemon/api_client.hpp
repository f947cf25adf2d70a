// The client of `shmbpf serve`'s local API, for `ls`, `leaks` and `top
// --server`: one GET over the unix socket, bounded by timeouts, and the
// errors a user can act on (no daemon there, no permission, not ready).
#pragma once

#include "views/top_wire.hpp"

#include <string>

namespace shmbpf {

struct ApiReply {
  std::string body;
  std::string content_type;
  bool leaking = false; // /v1/leaks: the report found a leak
};

// GETs path?query from the daemon at socket. Throws FatalError (exit
// status 2) when no daemon answers there, the socket refuses this user,
// the request times out, or the daemon answers with an error.
ApiReply api_get(const std::string &socket, const std::string &path, const QueryFields &query = {});

// POSTs body (NDJSON) to path with the socket's token (read_socket_token).
// The daemon's answer, or why there is none: never throws.
struct PostReply {
  int status = 0; // 0: no answer
  std::string body;
};
PostReply api_post(const std::string &socket, const std::string &path, const std::string &body,
                   const std::string &token);

} // namespace shmbpf
