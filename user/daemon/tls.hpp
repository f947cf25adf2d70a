// GnuTLS, which libmicrohttpd speaks TLS with, under serve's HTTP port: the
// PEM files checked at start (so a bad one is one line and exit status 2,
// not a refusal deep in the library), the priority string that sets the
// oldest version, and the client certificate a connection must present
// when a client CA is configured.
#pragma once

#include "daemon/web_config.hpp"
#include "facts/result.hpp"

#include <string>

namespace shmbpf {

// Done when pem holds at least one X.509 certificate; else why not.
Result<void> check_certificates(const std::string &pem);
// Done when pem holds an unencrypted private key; else why not.
Result<void> check_private_key(const std::string &pem);
// Done when the key is the first certificate's; else why not.
Result<void> check_key_pair(const std::string &cert_pem, const std::string &key_pem);

// GnuTLS' priority string: its defaults, from min_version on.
const char *tls_priorities(TlsVersion min_version);

// Makes the handshake of session (a gnutls_session_t not started yet)
// fail unless the client presents a certificate that the session's trusted
// CAs signed, valid now, for client authentication. False when it could
// not be set: the connection must then be closed.
bool require_client_certificate(void *session);

} // namespace shmbpf
