#include "daemon/http_access.hpp"

#include "daemon/tls.hpp"
#include "facts/result.hpp"

#include <microhttpd.h>

#include <cstring>

namespace shmbpf {

namespace {

MHD_OptionItem text_option(MHD_OPTION option, const std::string &text) {
  return {option, 0, const_cast<char *>(text.c_str())};
}

[[noreturn]] void lacks(const char *what) {
  throw FatalError(WebConfigSetting::kFlag,
                   std::string("this libmicrohttpd was built without ") + what, Exit::refused);
}

} // namespace

HttpAccess::HttpAccess() : HttpAccess(WebSecurity{}) {}

HttpAccess::HttpAccess(WebSecurity web) : web_(std::move(web)) {
  if (web_.tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      lacks("TLS (GnuTLS)");
    const TlsMaterial &t = *web_.tls;
    // The library keeps the pointers: the strings are web_'s, which lives
    // as long as the server.
    options_.push_back(text_option(MHD_OPTION_HTTPS_MEM_KEY, t.key_pem));
    options_.push_back(text_option(MHD_OPTION_HTTPS_MEM_CERT, t.cert_pem));
    options_.push_back(
        {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char *>(tls_priorities(t.min_version))});
    // The CAs a client's certificate is checked against; the library then
    // asks for one, and connection_started() requires it.
    if (!t.client_ca_pem.empty())
      options_.push_back(text_option(MHD_OPTION_HTTPS_MEM_TRUST, t.client_ca_pem));
  }
  if (!web_.users.empty()) {
    if (MHD_is_feature_supported(MHD_FEATURE_BASIC_AUTH) != MHD_YES)
      lacks("basic auth");
    auth_ = std::make_unique<BasicAuth>(web_.users);
  }
  options_.push_back({MHD_OPTION_END, 0, nullptr});
}

HttpAccess::~HttpAccess() = default;

unsigned HttpAccess::flags() const { return web_.tls ? MHD_USE_TLS : 0; }

const MHD_OptionItem *HttpAccess::options() const { return options_.data(); }

bool HttpAccess::connection_started(MHD_Connection *c) const {
  if (!client_certificates())
    return true;
  const MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  return require_client_certificate(info ? info->tls_session : nullptr);
}

std::optional<HttpReply> HttpAccess::refuse(MHD_Connection *c, bool probe) const {
  if (!auth_ || probe)
    return std::nullopt;
  char *password = nullptr;
  char *user = MHD_basic_auth_get_username_password(c, &password);
  const bool ok = user && password && auth_->check(user, password);
  if (password) {
    explicit_bzero(password, std::strlen(password));
    MHD_free(password);
  }
  MHD_free(user);
  if (ok)
    return std::nullopt;
  // Which of user or password was wrong is not said, nor logged.
  HttpReply r{401, "text/plain; charset=utf-8", "unauthorized\n", {}};
  r.headers.emplace_back(MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"shmbpf\"");
  return r;
}

} // namespace shmbpf
