// What a client of serve's HTTP port must show before it is answered, as
// --web-config-file has it (web_config): TLS, with the client's own
// certificate when a client CA is given, and basic auth. The HTTP server
// (http_server) asks this at each of its steps; the unix socket has none
// of it (its file's permissions decide who connects).
#pragma once

#include "daemon/basic_auth.hpp"
#include "daemon/endpoints.hpp"
#include "daemon/web_config.hpp"

#include <memory>
#include <optional>
#include <vector>

struct MHD_Connection;
struct MHD_OptionItem;

namespace shmbpf {

class HttpAccess {
public:
  // Nothing asked: plain HTTP, open to whoever reaches the port.
  HttpAccess();
  // Throws FatalError (exit status 2) when libmicrohttpd lacks what web
  // asks for (TLS, basic auth).
  explicit HttpAccess(WebSecurity web);
  ~HttpAccess();
  HttpAccess(const HttpAccess &) = delete;
  HttpAccess &operator=(const HttpAccess &) = delete;

  // What MHD_start_daemon is given besides its other flags and options:
  // MHD_USE_TLS and the key, certificates and priorities. options() ends
  // with MHD_OPTION_END and lives as long as this.
  unsigned flags() const;
  const MHD_OptionItem *options() const;

  // A connection started, its handshake not yet begun: false when it must
  // be closed (its client certificate could not be required).
  bool connection_started(MHD_Connection *c) const;
  // A request's headers came: the 401 to send, or nullopt to go on. A
  // probe (/healthz, /readyz) passes without credentials: it tells nothing
  // but "ok", and a kubelet could only send them from the pod's spec in
  // clear (docs/SECURITY.md).
  std::optional<HttpReply> refuse(MHD_Connection *c, bool probe) const;

  bool tls() const { return web_.tls.has_value(); }
  bool client_certificates() const { return web_.tls && !web_.tls->client_ca_pem.empty(); }
  bool basic_auth() const { return auth_ != nullptr; }

private:
  WebSecurity web_;
  std::unique_ptr<BasicAuth> auth_;
  std::vector<MHD_OptionItem> options_;
};

} // namespace shmbpf
