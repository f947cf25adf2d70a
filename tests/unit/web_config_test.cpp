// serve --web-config-file (daemon/web_config): the YAML an exporter's
// --web.config.file takes, each way it can be wrong refused with one line
// naming the key (and its line), and the files it names read, relative to
// the file, and checked by GnuTLS before serve binds anything.
#include "daemon/web_config.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {
namespace {

namespace fs = std::filesystem;

const std::string kHash = "$2y$04$/nsNRnrqnccJ3U2ujdARfuzZf7w07NN3u7KRU1HBUuvI7m.WkLWqC";

// A self-signed certificate (to 2126) and its key, and a key of another.
const char *kCert = R"(-----BEGIN CERTIFICATE-----
MIIBjjCCATOgAwIBAgIUV7nd2Y9JPXuft95iMN8fsmJcrsQwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQc2htYnBmIHVuaXQgdGVzdDAgFw0yNjEyMDcxMTQ5MTJaGA8y
MTI2MTExMzExNDkxMlowGzEZMBcGA1UEAwwQc2htYnBmIHVuaXQgdGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABCkJFu35V10UzhQtFimX+67JogrK1jd2egrS
KylYKLO88Rlui4IPMd4DC97O6imU5pi306UXYy1cyu6ZoCG1TxajUzBRMB0GA1Ud
DgQWBBSToNiCAm6PCXVDqOsxYCsJPr71FDAfBgNVHSMEGDAWgBSToNiCAm6PCXVD
qOsxYCsJPr71FDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQDR
rjqSkTPgJZxtLHWjHzczWz+eFpGjjdxE1XmHRtFoKQIhAK+Uks2kWqGQk/ZRvqvW
4YiuQkr9UVHYgdHIgUSXzq08
-----END CERTIFICATE-----
)";
const char *kKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJI2aq+7OF5sTnSHB
xkD42yp/TF9PJNKThO1UcAjoi4ChRANCAAQpCRbt+VddFM4ULRYpl/uuyaIKytY3
dnoK0ispWCizvPEZbouCDzHeAwvezuoplOaYt9OlF2MtXMrumaAhtU8W
-----END PRIVATE KEY-----
)";
const char *kOtherKey = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqlW9Y9AG8NleJ5Va
MH38qnRvYHeKTBmfstj+cCPOCvShRANCAASXiZH+tXLt4OwSrCczEN31ZRtTIPSC
li4WDNzGW8m+BeG2UrvQ27ANwySvoej4/9gefq7MPLdehN9hneDF0cnf
-----END PRIVATE KEY-----
)";
// kKey under the password "x".
const char *kEncryptedKey = R"(-----BEGIN ENCRYPTED PRIVATE KEY-----
MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjYMcnwHfCfAAICCAAw
DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEER+4/aMujYXVWWv+U+IMycEgZDl
DV31hCLav0UD7mAwE/uzq/sdFwnH9FwVIkXWd1vODuIoA2u3HO57ZCRBqnzu2g/k
BCs0Wvq86SCpPaP5bmrU+Irt/35aaBQfAw9wkPzCyCWUMHcftDXK9k9poJYoeEyb
4Gi28Zv2MVu9LlYyKQao6LXigWUSynZ8bcMJ7nbqKTIGbkDa/Oh/7leYmuKoMnM=
-----END ENCRYPTED PRIVATE KEY-----
)";

// The error parse gives yaml, which must be one line.
std::string refusal(const std::string &yaml) {
  auto c = WebConfigSetting::parse(yaml);
  EXPECT_FALSE(c) << yaml;
  const std::string why = c ? std::string() : c.error();
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  return why;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(WebConfig, EmptyAsksForNothing) {
  for (const char *yaml : {"", "# nothing\n", "---\n", "{}\n"}) {
    auto c = WebConfigSetting::parse(yaml);
    ASSERT_TRUE(c) << c.error();
    EXPECT_FALSE(c->tls);
    EXPECT_TRUE(c->users.empty());
  }
}

TEST(WebConfig, TakesTheExporterToolkitsSubset) {
  auto c = WebConfigSetting::parse("# as node_exporter has it\n"
                                   "tls_server_config:\n"
                                   "  cert_file: /etc/shmbpf/tls.crt\n"
                                   "  key_file: tls.key\n"
                                   "  client_ca_file: \"ca.crt\"\n"
                                   "  client_auth_type: RequireAndVerifyClientCert\n"
                                   "  min_version: TLS13\n"
                                   "basic_auth_users:\n"
                                   "  prometheus: " +
                                   kHash + "\n  'grafana agent': '" + kHash + "'\n");
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->cert_file, "/etc/shmbpf/tls.crt");
  EXPECT_EQ(c->tls->key_file, "tls.key");
  EXPECT_EQ(c->tls->client_ca_file, "ca.crt");
  EXPECT_EQ(c->tls->min_version, TlsVersion::tls13);
  ASSERT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users.at("prometheus"), kHash);
  EXPECT_EQ(c->users.at("grafana agent"), kHash);

  auto plain = WebConfigSetting::parse("tls_server_config: {cert_file: a, key_file: b}\n");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->tls->min_version, TlsVersion::tls12);
  EXPECT_EQ(plain->tls->client_ca_file, "");
  EXPECT_TRUE(plain->users.empty());
  auto no_client = WebConfigSetting::parse(
      "tls_server_config: {cert_file: a, key_file: b, client_auth_type: NoClientCert}\n");
  ASSERT_TRUE(no_client) << no_client.error();
  auto auth_only = WebConfigSetting::parse("basic_auth_users:\n  p: '" + kHash + "'\n");
  ASSERT_TRUE(auth_only) << auth_only.error();
  EXPECT_FALSE(auth_only->tls);
}

TEST(WebConfig, RefusesWhatIsNotOneYamlMapping) {
  EXPECT_HAS(refusal("tls_server_config: [a\n"), "not YAML");
  EXPECT_HAS(refusal("a: 1\n---\nb: 2\n"), "2 YAML documents");
  EXPECT_HAS(refusal("- tls_server_config\n"), "must be a mapping");
  EXPECT_HAS(refusal("just text\n"), "must be a mapping");
  EXPECT_HAS(refusal("? [a, b]\n: c\n"), "a key must be a word");
}

TEST(WebConfig, UnknownKeysAreNamedWithTheirLine) {
  const std::string top = refusal("tls_server_config: {cert_file: a, key_file: b}\n"
                                  "http_server_config:\n  http2: false\n");
  EXPECT_HAS(top, "line 2: http_server_config: unknown key");
  EXPECT_HAS(top, "tls_server_config, basic_auth_users");
  const std::string nested = refusal("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                                     "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n");
  EXPECT_HAS(nested, "line 4: tls_server_config.cipher_suites: unknown key");
  EXPECT_HAS(refusal("tls_server_config:\n  cert: inline PEM\n  key_file: b\n"),
             "tls_server_config.cert: unknown key");
  EXPECT_HAS(refusal("basic_auth_user:\n  p: x\n"), "basic_auth_user: unknown key");
  // A key is written escaped: the line stays one line, whatever it holds.
  const std::string odd = refusal("\"tls\\e[2J\\nx\": 1\n");
  EXPECT_HAS(odd, "tls\\x1b[2J\\nx: unknown key");
}

TEST(WebConfig, RefusesAKeyGivenTwice) {
  EXPECT_HAS(
      refusal("basic_auth_users: {p: '" + kHash + "'}\nbasic_auth_users: {q: '" + kHash + "'}\n"),
      "line 2: basic_auth_users: given twice");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a, key_file: b, cert_file: c}\n"),
             "tls_server_config.cert_file: given twice");
}

TEST(WebConfig, TlsNeedsACertificateAndItsKey) {
  EXPECT_HAS(refusal("tls_server_config:\n"), "tls_server_config: must be a mapping");
  EXPECT_HAS(refusal("tls_server_config: a.crt\n"), "tls_server_config: must be a mapping");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a}\n"), "needs both cert_file and key_file");
  EXPECT_HAS(refusal("tls_server_config: {key_file: b}\n"), "needs both cert_file and key_file");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: '', key_file: b}\n"),
             "tls_server_config.cert_file: must name a file");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a, key_file:}\n"),
             "tls_server_config.key_file: must name a file");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: [a], key_file: b}\n"),
             "tls_server_config.cert_file: must name a file");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a, key_file: b, client_ca_file: {}}\n"),
             "tls_server_config.client_ca_file: must name a file");
}

TEST(WebConfig, MinVersionIsTls12OrTls13) {
  for (const char *v : {"TLS10", "TLS11", "tls12", "1.2", "TLS 1.3", "[TLS12]"})
    EXPECT_HAS(refusal(std::string("tls_server_config: {cert_file: a, key_file: b, "
                                   "min_version: ") +
                       v + "}\n"),
               "tls_server_config.min_version: must be TLS12 or TLS13");
}

TEST(WebConfig, ClientAuthTypeMustAgreeWithTheClientCa) {
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a, key_file: b, "
                     "client_auth_type: RequireAndVerifyClientCert}\n"),
             "RequireAndVerifyClientCert needs client_ca_file");
  EXPECT_HAS(refusal("tls_server_config: {cert_file: a, key_file: b, client_ca_file: c, "
                     "client_auth_type: NoClientCert}\n"),
             "NoClientCert contradicts client_ca_file");
  // The toolkit's weaker policies are not offered: a certificate asked for
  // and not checked protects nothing.
  for (const char *t : {"RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven"})
    EXPECT_HAS(refusal(std::string("tls_server_config: {cert_file: a, key_file: b, "
                                   "client_ca_file: c, client_auth_type: ") +
                       t + "}\n"),
               "tls_server_config.client_auth_type: must be RequireAndVerifyClientCert");
}

TEST(WebConfig, UsersNeedBcryptHashes) {
  EXPECT_HAS(refusal("basic_auth_users:\n"), "basic_auth_users: must map each user");
  EXPECT_HAS(refusal("basic_auth_users: {}\n"), "basic_auth_users: must map each user");
  EXPECT_HAS(refusal("basic_auth_users: [prometheus]\n"), "basic_auth_users: must map each user");
  EXPECT_HAS(refusal("basic_auth_users:\n  prometheus: right horse\n"),
             "line 2: basic_auth_users.prometheus: not a bcrypt hash");
  EXPECT_HAS(refusal("basic_auth_users:\n  prometheus: '$1$abc$defghijklmnopqrstuvwxy'\n"),
             "basic_auth_users.prometheus: not a bcrypt hash");
  EXPECT_HAS(refusal("basic_auth_users:\n  prometheus: [a]\n"),
             "basic_auth_users.prometheus: not a bcrypt hash");
  EXPECT_HAS(refusal("basic_auth_users:\n  'a:b': '" + kHash + "'\n"),
             "basic_auth_users.a:b: a user's name has no ':'");
  EXPECT_HAS(refusal("basic_auth_users:\n  \"a\\tb\": '" + kHash + "'\n"),
             "a user's name has no ':' and no control character");
  EXPECT_HAS(refusal("basic_auth_users:\n  '': '" + kHash + "'\n"), "a key must be a word");
}

// A fresh directory, removed with what it holds.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-web-config-test-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string put(const std::string &name, const std::string &text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

struct WebConfigLoad : ::testing::Test {
  TempDir dir;
  void SetUp() override {
    dir.put("tls.crt", kCert);
    dir.put("tls.key", kKey);
  }
  // Loads a configuration of these files (relative to it unless absolute).
  Result<WebSecurity> load(const std::string &cert, const std::string &key,
                           const std::string &ca = "") {
    return WebConfigSetting::load(
        dir.put("web.yml", "tls_server_config:\n  cert_file: " + cert + "\n  key_file: " + key +
                               (ca.empty() ? "" : "\n  client_ca_file: " + ca) + "\n"));
  }
};

TEST_F(WebConfigLoad, ReadsTheFilesBesideTheConfiguration) {
  auto web = load("tls.crt", (dir.path / "tls.key").string(), "tls.crt");
  ASSERT_TRUE(web) << web.error();
  ASSERT_TRUE(web->tls);
  EXPECT_EQ(web->tls->cert_pem, kCert);
  EXPECT_EQ(web->tls->key_pem, kKey);
  EXPECT_EQ(web->tls->client_ca_pem, kCert);
  EXPECT_TRUE(web->users.empty());
  // A symlink is followed: Kubernetes mounts a Secret's keys as symlinks.
  fs::create_symlink(dir.path / "tls.crt", dir.path / "link.crt");
  EXPECT_TRUE(load("link.crt", "tls.key"));
}

TEST_F(WebConfigLoad, NamesTheFileAtFault) {
  auto missing = WebConfigSetting::load((dir.path / "none.yml").string());
  ASSERT_FALSE(missing);
  EXPECT_HAS(missing.error(), "cannot read: No such file or directory");
  auto directory = WebConfigSetting::load(dir.path.string());
  ASSERT_FALSE(directory);
  EXPECT_HAS(directory.error(), "not a regular file");
  auto large = WebConfigSetting::load(
      dir.put("large.yml", std::string(WebConfigSetting::kMaxFileBytes + 1, '#')));
  ASSERT_FALSE(large);
  EXPECT_HAS(large.error(), "larger than 1 MiB");
  auto bad_yaml = WebConfigSetting::load(dir.put("bad.yml", "nonsense: [\n"));
  ASSERT_FALSE(bad_yaml);
  EXPECT_HAS(bad_yaml.error(), "not YAML");

  auto no_cert = load("gone.crt", "tls.key");
  ASSERT_FALSE(no_cert);
  EXPECT_HAS(no_cert.error(), "tls_server_config.cert_file " + (dir.path / "gone.crt").string() +
                                  ": cannot read: No such file or directory");
  dir.put("junk.pem", "not a certificate\n");
  auto junk_cert = load("junk.pem", "tls.key");
  ASSERT_FALSE(junk_cert);
  EXPECT_HAS(junk_cert.error(), "tls_server_config.cert_file");
  EXPECT_HAS(junk_cert.error(), "PEM certificate");
  auto key_as_cert = load("tls.key", "tls.key");
  ASSERT_FALSE(key_as_cert);
  EXPECT_HAS(key_as_cert.error(), "PEM certificate");
  auto junk_key = load("tls.crt", "junk.pem");
  ASSERT_FALSE(junk_key);
  EXPECT_HAS(junk_key.error(), "tls_server_config.key_file");
  EXPECT_HAS(junk_key.error(), "not a PEM private key");
  auto encrypted = load("tls.crt", dir.put("enc.key", kEncryptedKey));
  ASSERT_FALSE(encrypted);
  EXPECT_HAS(encrypted.error(), "the key is encrypted");
  auto other = load("tls.crt", dir.put("other.key", kOtherKey));
  ASSERT_FALSE(other);
  EXPECT_HAS(other.error(), "tls_server_config.key_file " + (dir.path / "other.key").string() +
                                ": the key is not the certificate's");
  auto junk_ca = load("tls.crt", "tls.key", "junk.pem");
  ASSERT_FALSE(junk_ca);
  EXPECT_HAS(junk_ca.error(), "tls_server_config.client_ca_file");
  for (const auto &r : {missing, directory, large, no_cert, junk_cert, junk_key, other, junk_ca})
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
}

TEST_F(WebConfigLoad, UsersAloneNeedNoFile) {
  auto web = WebConfigSetting::load(dir.put("auth.yml", "basic_auth_users:\n  p: " + kHash));
  ASSERT_TRUE(web) << web.error();
  EXPECT_FALSE(web->tls);
  EXPECT_EQ(web->users.size(), 1u);
}

} // namespace
} // namespace shmbpf
