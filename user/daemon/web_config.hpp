// --web-config-file PATH: TLS and basic auth for serve's HTTP port, written
// as Prometheus' exporters write theirs (the exporter toolkit's web
// configuration file; the part of it that matters here). The YAML is parsed
// apart from any file (parse), then load() reads the files it names, while
// serve is still root and before anything binds, and checks each with the
// library that will use it. docs/SECURITY.md, TLS and basic auth.
#pragma once

#include "facts/result.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

// The oldest TLS a client may speak.
enum class TlsVersion { tls12, tls13 };

// tls_server_config: the files, as written (a relative name is from the
// configuration file's directory).
struct TlsFiles {
  std::string cert_file;      // the server's certificate, then its chain (PEM)
  std::string key_file;       // its private key (PEM, unencrypted)
  std::string client_ca_file; // "": no client certificate asked for; else one it signed required
  TlsVersion min_version = TlsVersion::tls12;
};

// A user's name and the bcrypt hash of their password.
using BasicAuthUsers = std::map<std::string, std::string, std::less<>>;

struct WebConfig {
  std::optional<TlsFiles> tls; // nullopt: plain HTTP
  BasicAuthUsers users;        // empty: no basic auth
};

// The files' contents, read and checked: what the HTTP server is given.
struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem; // "": no client certificate asked for
  TlsVersion min_version = TlsVersion::tls12;
};

struct WebSecurity {
  std::optional<TlsMaterial> tls;
  BasicAuthUsers users;
};

struct WebConfigSetting {
  static constexpr const char *kFlag = "--web-config-file";
  static constexpr const char *kHelp =
      "TLS and basic auth for HTTP (/metrics, /healthz, /readyz), in the YAML of Prometheus "
      "exporters' --web.config.file: tls_server_config (cert_file, key_file, client_ca_file, "
      "min_version) and basic_auth_users (user: bcrypt hash). Read once, at start";
  // The largest file read: the configuration, a certificate chain, a key.
  static constexpr size_t kMaxFileBytes = size_t{1} << 20;

  // The configuration in yaml, or why it is not one: the key at fault
  // first ("tls_server_config.cert_file: must name a file").
  static Result<WebConfig> parse(std::string_view yaml);
  // The file at path, parsed, and the files it names read and checked;
  // the error names the file at fault.
  static Result<WebSecurity> load(const std::string &path);
};

} // namespace shmbpf
