#include "daemon/web_config.hpp"

#include "daemon/basic_auth.hpp"
#include "daemon/tls.hpp"
#include "views/escape.hpp"

#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

namespace shmbpf {

namespace {

// One entry of a mapping: where it is, for the error that names it.
struct Entry {
  std::string path; // "tls_server_config.cert_file"
  std::string key;
  const YAML::Node &value;
  int line = 0; // from 1; 0: not known
};

Error at(const Entry &e, const std::string &why) {
  return Error{(e.line > 0 ? "line " + std::to_string(e.line) + ": " : std::string()) +
               escape_text(e.path) + ": " + why};
}

Error unknown(const Entry &e, const char *known) {
  return at(e, std::string("unknown key (known: ") + known + ")");
}

// Each entry of map, in order, its key a string given once, to take.
Result<void> each_entry(const YAML::Node &map, const std::string &prefix,
                        const std::function<Result<void>(const Entry &)> &take) {
  std::set<std::string> seen;
  for (const auto &kv : map) {
    const YAML::Mark mark = kv.first.Mark();
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const Entry e{prefix + key, key, kv.second, mark.is_null() ? 0 : mark.line + 1};
    if (!kv.first.IsScalar() || key.empty())
      return at(e, "a key must be a word");
    if (!seen.insert(key).second)
      return at(e, "given twice");
    if (auto r = take(e); !r)
      return r;
  }
  return {};
}

Result<std::string> file_name(const Entry &e) {
  if (!e.value.IsScalar() || e.value.Scalar().empty())
    return at(e, "must name a file");
  return e.value.Scalar();
}

Result<TlsVersion> tls_version(const Entry &e) {
  const std::string v = e.value.IsScalar() ? e.value.Scalar() : std::string();
  if (v == "TLS12")
    return TlsVersion::tls12;
  if (v == "TLS13")
    return TlsVersion::tls13;
  return at(e, "must be TLS12 or TLS13 (older versions are not offered)");
}

// tls_server_config. client_auth_type is taken for files written for the
// exporter toolkit, where it must agree with client_ca_file: a CA given
// always requires a certificate it signed.
Result<TlsFiles> parse_tls(const Entry &section) {
  if (!section.value.IsMap())
    return at(section, "must be a mapping with cert_file and key_file");
  TlsFiles t;
  std::optional<std::string> auth_type;
  auto parsed = each_entry(section.value, section.path + ".", [&](const Entry &e) -> Result<void> {
    if (e.key == "min_version") {
      auto v = tls_version(e);
      if (!v)
        return Error{v.error()};
      t.min_version = *v;
      return {};
    }
    if (e.key == "client_auth_type") {
      auth_type = e.value.IsScalar() ? e.value.Scalar() : std::string();
      if (*auth_type != "RequireAndVerifyClientCert" && *auth_type != "NoClientCert")
        return at(e, "must be RequireAndVerifyClientCert (with client_ca_file) or NoClientCert "
                     "(without)");
      return {};
    }
    std::string *into = e.key == "cert_file"        ? &t.cert_file
                        : e.key == "key_file"       ? &t.key_file
                        : e.key == "client_ca_file" ? &t.client_ca_file
                                                    : nullptr;
    if (!into)
      return unknown(e, "cert_file, key_file, client_ca_file, client_auth_type, min_version");
    auto name = file_name(e);
    if (!name)
      return Error{name.error()};
    *into = *name;
    return {};
  });
  if (!parsed)
    return Error{parsed.error()};
  const Entry whole{section.path, section.key, section.value, section.line};
  if (t.cert_file.empty() || t.key_file.empty())
    return at(whole, "needs both cert_file and key_file");
  if (auth_type && (*auth_type == "RequireAndVerifyClientCert") != !t.client_ca_file.empty())
    return at(whole, "client_auth_type " + *auth_type +
                         (t.client_ca_file.empty() ? " needs client_ca_file"
                                                   : " contradicts client_ca_file, which "
                                                     "requires client certificates"));
  return t;
}

bool printable_name(std::string_view user) {
  for (char ch : user)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == ':')
      return false;
  return !user.empty();
}

Result<BasicAuthUsers> parse_users(const Entry &section) {
  if (!section.value.IsMap() || section.value.size() == 0)
    return at(section, "must map each user to the bcrypt hash of their password");
  BasicAuthUsers users;
  auto parsed = each_entry(section.value, section.path + ".", [&](const Entry &e) -> Result<void> {
    if (!printable_name(e.key))
      return at(e, "a user's name has no ':' and no control character");
    if (!e.value.IsScalar() || !is_bcrypt_hash(e.value.Scalar()))
      return at(e, "not a bcrypt hash ($2y$, $2b$ or $2a$; htpasswd -nBC 10 " + escape_text(e.key) +
                       " makes one)");
    users.emplace(e.key, e.value.Scalar());
    return {};
  });
  if (!parsed)
    return Error{parsed.error()};
  return users;
}

// The file at path, whole: a regular file of at most kMaxFileBytes. It may
// be a symlink (Kubernetes mounts a Secret's keys as symlinks).
Result<std::string> read_file(const std::string &path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return Error{std::string("cannot read: ") + std::strerror(errno)};
  struct stat st {};
  std::string text;
  Result<std::string> out = Error{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    out = Error{"not a regular file"};
  else if (static_cast<size_t>(st.st_size) > WebConfigSetting::kMaxFileBytes)
    out = Error{"larger than 1 MiB"};
  else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    ssize_t n = 0;
    while (got < text.size() && (n = read(fd, text.data() + got, text.size() - got)) > 0)
      got += static_cast<size_t>(n);
    if (n < 0)
      out = Error{std::string("cannot read: ") + std::strerror(errno)};
    else {
      text.resize(got);
      out = std::move(text);
    }
  }
  close(fd);
  return out;
}

// name, from the configuration's directory when relative.
std::string beside(const std::string &config, const std::string &name) {
  if (name.starts_with('/'))
    return name;
  const size_t slash = config.rfind('/');
  return slash == std::string::npos ? name : config.substr(0, slash + 1) + name;
}

// Reads each file tls names and checks it: the error names the file.
Result<TlsMaterial> load_tls(const std::string &config, const TlsFiles &files) {
  TlsMaterial m;
  m.min_version = files.min_version;
  struct Part {
    const char *key;
    const std::string &name;
    std::string &into;
    Result<void> (*check)(const std::string &);
  };
  const Part parts[] = {
      {"cert_file", files.cert_file, m.cert_pem, &check_certificates},
      {"key_file", files.key_file, m.key_pem, &check_private_key},
      {"client_ca_file", files.client_ca_file, m.client_ca_pem, &check_certificates}};
  for (const Part &p : parts) {
    if (p.name.empty())
      continue;
    const std::string path = beside(config, p.name);
    auto text = read_file(path);
    Result<void> checked = text ? p.check(*text) : Result<void>(Error{text.error()});
    if (!checked)
      return Error{std::string("tls_server_config.") + p.key + " " + escape_text(path) + ": " +
                   checked.error()};
    p.into = std::move(*text);
  }
  if (auto pair = check_key_pair(m.cert_pem, m.key_pem); !pair)
    return Error{"tls_server_config.key_file " + escape_text(beside(config, files.key_file)) +
                 ": " + pair.error()};
  return m;
}

} // namespace

Result<WebConfig> WebConfigSetting::parse(std::string_view yaml) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception &e) {
    return Error{
        "not YAML: " +
        (e.mark.is_null() ? std::string() : "line " + std::to_string(e.mark.line + 1) + ": ") +
        e.msg};
  }
  WebConfig c;
  if (docs.size() > 1)
    return Error{"holds " + std::to_string(docs.size()) + " YAML documents, not one"};
  if (docs.empty() || docs[0].IsNull())
    return c; // nothing asked for: plain HTTP, as the exporters have it
  if (!docs[0].IsMap())
    return Error{"must be a mapping of tls_server_config and basic_auth_users"};
  auto parsed = each_entry(docs[0], "", [&](const Entry &e) -> Result<void> {
    if (e.key == "tls_server_config") {
      auto tls = parse_tls(e);
      if (!tls)
        return Error{tls.error()};
      c.tls = std::move(*tls);
    } else if (e.key == "basic_auth_users") {
      auto users = parse_users(e);
      if (!users)
        return Error{users.error()};
      c.users = std::move(*users);
    } else {
      return unknown(e, "tls_server_config, basic_auth_users");
    }
    return {};
  });
  if (!parsed)
    return Error{parsed.error()};
  return c;
}

Result<WebSecurity> WebConfigSetting::load(const std::string &path) {
  auto text = read_file(path);
  if (!text)
    return Error{text.error()};
  auto config = parse(*text);
  if (!config)
    return Error{config.error()};
  WebSecurity web;
  web.users = std::move(config->users);
  if (config->tls) {
    auto tls = load_tls(path, *config->tls);
    if (!tls)
      return Error{tls.error()};
    web.tls = std::move(*tls);
  }
  return web;
}

} // namespace shmbpf
