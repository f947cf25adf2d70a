// `shmbpf serve --web-config-file`: TLS and basic auth on the HTTP port, as
// Prometheus' exporters configure theirs. A CA, a server certificate for
// 127.0.0.1 and a client certificate are made with openssl in a temporary
// directory; curl is the client. Checked: https with the CA works and plain
// http on that port does not; /metrics wants the right user and password
// (401 and its challenge otherwise) while the probes do not; with a client
// CA, a client without a certificate the CA signed is refused in the
// handshake; TLS 1.2 refused under min_version TLS13; a bad file is one
// line and status 2; and Debian's Prometheus scrapes over TLS with basic
// auth.
#include "background.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <crypt.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

// Exit status 0 of a shell command, its output dropped.
bool sh(const std::string &cmd) { return system(("(" + cmd + ") >/dev/null 2>&1").c_str()) == 0; }

// The tools this needs, or a skip (a failure under CI=true).
#define SHMBPF_REQUIRE_TLS_TOOLS()                                                                 \
  do {                                                                                             \
    SHMBPF_REQUIRE_ROOT();                                                                         \
    if (!sh("command -v openssl && command -v curl")) {                                            \
      if (in_ci())                                                                                 \
        FAIL() << "openssl or curl is missing (scripts/deps.sh --tests installs them)";            \
      GTEST_SKIP() << "openssl or curl is missing";                                                \
    }                                                                                              \
  } while (0)

// A CA, a server certificate for 127.0.0.1 and a client certificate it
// signed, a client certificate nobody signed, and a bcrypt hash: in a
// directory removed at the end.
struct Pki {
  std::string dir;
  std::string hash; // of kPassword
  static constexpr const char *kUser = "prometheus";
  static constexpr const char *kPassword = "correct horse";

  Pki() {
    char tmpl[] = "/tmp/shmbpf-e2e-tls-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir = tmpl;
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    const bool made =
        sh("cd " + dir + " && openssl req -x509" + ec +
           " -keyout ca.key -out ca.crt -days 2 -subj '/CN=shmbpf e2e CA'") &&
        sign("server", "subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth", ec) &&
        sign("client", "extendedKeyUsage=clientAuth", ec) &&
        sh("cd " + dir + " && openssl req -x509" + ec +
           " -keyout stranger.key -out stranger.crt -days 2 -subj '/CN=stranger'");
    if (!made)
      std::abort();
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    crypt_data data{};
    const char *out = crypt_gensalt_rn("$2y$", 5, nullptr, 0, salt, sizeof salt)
                          ? crypt_r(kPassword, salt, &data)
                          : nullptr;
    if (!out || *out != '$')
      std::abort();
    hash = out;
  }
  ~Pki() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  bool sign(const std::string &name, const std::string &ext, const std::string &ec) {
    return sh("cd " + dir + " && openssl req" + ec + " -keyout " + name + ".key -out " + name +
              ".csr -subj '/CN=" + name + "' && printf '" + ext + "\\n' > " + name +
              ".ext && openssl x509 -req -in " + name +
              ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out " + name +
              ".crt -extfile " + name + ".ext");
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
  std::string write(const std::string &name, const std::string &text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
};

struct Curl {
  int code = -1;  // curl's exit status: 0, or why no answer came
  int status = 0; // the HTTP status; 0 without one
  std::string out;
};

// curl with args (its output, then the status on a line of its own).
Curl curl(const std::string &args) {
  const std::string cmd = "curl -sS --max-time 10 -w '\\n%{http_code}' " + args + " 2>/dev/null";
  Curl c;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return c;
  char buf[8192];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    c.out.append(buf, n);
  const int st = pclose(p);
  c.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  const size_t nl = c.out.rfind('\n');
  if (nl != std::string::npos) {
    c.status = std::atoi(c.out.c_str() + nl + 1);
    c.out.resize(nl);
  }
  return c;
}

// Waits for /readyz over https (curl's args say how to connect); skips
// where BPF cannot load, as SHMBPF_SERVE_READY does.
#define SHMBPF_SERVE_READY_TLS(serve, url, args)                                                   \
  do {                                                                                             \
    const auto deadline_ = Clock::now() + kStartTimeout;                                           \
    bool ready_ = false;                                                                           \
    while (!ready_ && !(serve).exited() && Clock::now() < deadline_) {                             \
      ready_ = curl((args) + " " + (url) + "/readyz").status == 200;                               \
      if (!ready_)                                                                                 \
        std::this_thread::sleep_for(200ms);                                                        \
    }                                                                                              \
    if (!ready_) {                                                                                 \
      (serve).wait(2s);                                                                            \
      const auto st_ = (serve).status();                                                           \
      if (!in_ci() && st_ && WIFEXITED(*st_) && WEXITSTATUS(*st_) == 2 &&                          \
          (serve).err().find("--web-config-file") == std::string::npos)                            \
        GTEST_SKIP() << "shmbpf serve cannot run here: " << (serve).err();                         \
      FAIL() << "shmbpf serve never got ready; stderr: " << (serve).err();                         \
    }                                                                                              \
  } while (0)

ShmbpfProcess serve_with(const std::string &config, int port) {
  return ShmbpfProcess({"serve", "--no-state", "--no-socket", "--listen",
                        "127.0.0.1:" + std::to_string(port), "--web-config-file", config},
                       [] { prctl(PR_SET_PDEATHSIG, SIGKILL); });
}

// A web configuration of the server's certificate and key, and the one
// user with its hash.
std::string tls_with_user(Pki &pki) {
  return pki.write("web.yml",
                   "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   "basic_auth_users:\n  " +
                       std::string(Pki::kUser) + ": '" + pki.hash + "'\n");
}

TEST(ServeTls, HttpsWithBasicAuthAndOpenProbes) {
  SHMBPF_REQUIRE_TLS_TOOLS();
  Pki pki;
  const std::string config = tls_with_user(pki);
  const int port = free_port();
  ShmbpfProcess serve = serve_with(config, port);
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string ca = "--cacert " + pki.path("ca.crt");
  SHMBPF_SERVE_READY_TLS(serve, url, ca);
  const std::string user = std::string(" -u ") + Pki::kUser + ":";

  // The right pair: the metrics, over TLS 1.3 or 1.2 (the default minimum).
  const Curl right = curl(ca + user + "'" + Pki::kPassword + "' " + url + "/metrics");
  EXPECT_EQ(right.status, 200) << right.out;
  EXPECT_NE(right.out.find("shmbpf_build_info"), std::string::npos);
  EXPECT_EQ(
      curl(ca + " --tls-max 1.2" + user + "'" + Pki::kPassword + "' " + url + "/metrics").status,
      200);
  // No pair, a wrong password, an unknown user: 401 and the challenge.
  const Curl none = curl(ca + " -i " + url + "/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.out.find("WWW-Authenticate: Basic realm=\"shmbpf\""), std::string::npos)
      << none.out;
  EXPECT_EQ(none.out.find("shmbpf_"), std::string::npos) << none.out;
  EXPECT_EQ(curl(ca + user + "'correct hors' " + url + "/metrics").status, 401);
  EXPECT_EQ(curl(ca + " -u nobody:'" + Pki::kPassword + "' " + url + "/metrics").status, 401);
  EXPECT_EQ(curl(ca + " " + url + "/").status, 401);
  // The probes answer anyone who completes the handshake.
  EXPECT_EQ(curl(ca + " " + url + "/healthz").status, 200);
  EXPECT_EQ(curl(ca + " " + url + "/readyz").status, 200);

  // Plain HTTP on the TLS port gets no answer; nor does a client that
  // does not trust the CA.
  const Curl plain = curl("http://127.0.0.1:" + std::to_string(port) + "/healthz");
  EXPECT_NE(plain.code, 0);
  EXPECT_EQ(plain.status, 0);
  EXPECT_NE(curl(url + "/healthz").code, 0);
  // Still serving after all that.
  EXPECT_EQ(curl(ca + " " + url + "/healthz").status, 200);
  EXPECT_FALSE(serve.exited()) << serve.err();
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(10s), 0);
  const std::string log = serve.err();
  EXPECT_NE(log.find("listening on " + url), std::string::npos) << log;
  EXPECT_NE(log.find("basic auth for 1 user"), std::string::npos) << log;
  EXPECT_EQ(log.find(Pki::kPassword), std::string::npos) << "a password in the log:\n" << log;
}

TEST(ServeTls, ClientCertificateRequiredWithAClientCa) {
  SHMBPF_REQUIRE_TLS_TOOLS();
  Pki pki;
  const std::string config =
      pki.write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                           "  client_ca_file: ca.crt\n  min_version: TLS13\n");
  const int port = free_port();
  ShmbpfProcess serve = serve_with(config, port);
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string ca = "--cacert " + pki.path("ca.crt");
  const std::string client =
      ca + " --cert " + pki.path("client.crt") + " --key " + pki.path("client.key");
  SHMBPF_SERVE_READY_TLS(serve, url, client);

  const Curl with_cert = curl(client + " " + url + "/metrics");
  EXPECT_EQ(with_cert.status, 200);
  EXPECT_NE(with_cert.out.find("shmbpf_build_info"), std::string::npos);
  // Without a certificate, or with one the CA did not sign, or with the
  // server's (signed, but not for client authentication): no answer, not
  // even from a probe.
  for (const std::string &bad :
       {ca, ca + " --cert " + pki.path("stranger.crt") + " --key " + pki.path("stranger.key"),
        ca + " --cert " + pki.path("server.crt") + " --key " + pki.path("server.key")}) {
    const Curl refused = curl(bad + " " + url + "/healthz");
    EXPECT_NE(refused.code, 0) << bad;
    EXPECT_EQ(refused.status, 0) << bad << ": " << refused.out;
  }
  // min_version TLS13: a TLS 1.2 client is refused.
  const Curl old = curl(client + " --tls-max 1.2 " + url + "/healthz");
  EXPECT_NE(old.code, 0);
  EXPECT_EQ(old.status, 0);
  EXPECT_EQ(curl(client + " " + url + "/healthz").status, 200);
  EXPECT_NE(serve.err().find("client certificates required"), std::string::npos) << serve.err();
}

TEST(ServeTls, BadConfigurationIsOneLineAndStatusTwo) {
  SHMBPF_REQUIRE_TLS_TOOLS();
  Pki pki;
  const std::string tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  const struct {
    std::string yaml;
    std::string says;
  } cases[] = {
      {tls + "  ciphers: [x]\n", "tls_server_config.ciphers: unknown key"},
      {"tls_server_config:\n  cert_file: gone.crt\n  key_file: server.key\n",
       "gone.crt: cannot read"},
      {"tls_server_config:\n  cert_file: client.crt\n  key_file: server.key\n",
       "the key is not the certificate's"},
      {"tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n", "PEM certificate"},
      {"basic_auth_users:\n  prometheus: hunter2\n", "not a bcrypt hash"},
      {"tls_server_config: [\n", "not YAML"},
  };
  const int port = free_port();
  for (const auto &c : cases) {
    const std::string config = pki.write("bad.yml", c.yaml);
    auto r = run_shmbpf("serve --no-state --no-socket --listen 127.0.0.1:" + std::to_string(port) +
                        " --web-config-file " + config);
    EXPECT_EQ(r.code, 2) << c.yaml << r.err;
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(r.err.starts_with("shmbpf: --web-config-file " + config + ": ")) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  auto missing = run_shmbpf("serve --no-state --no-socket --web-config-file " + pki.path("none"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot read: No such file or directory"), std::string::npos)
      << missing.err;
  auto empty = run_shmbpf("serve --web-config-file ''");
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(lines_of(empty.err).size(), 1u) << empty.err;
}

// Prometheus' API on port: the value of an instant query with one sample.
std::optional<double> prometheus_value(int port, const std::string &promql) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r || r->status != 200)
    return std::nullopt;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].size() != 1)
    return std::nullopt;
  return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
}

TEST(ServeTls, PrometheusScrapesOverTlsWithBasicAuth) {
  SHMBPF_REQUIRE_TLS_TOOLS();
  if (access("/usr/bin/prometheus", X_OK) != 0) {
    if (in_ci())
      FAIL() << "prometheus is missing (scripts/deps.sh --tests installs it)";
    GTEST_SKIP() << "prometheus is missing";
  }
  Pki pki;
  const std::string config = tls_with_user(pki);
  const int port = free_port();
  ShmbpfProcess serve = serve_with(config, port);
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  SHMBPF_SERVE_READY_TLS(serve, url, "--cacert " + pki.path("ca.crt"));

  // As deploy/README.md has it: scheme https, tls_config's ca_file, and
  // basic_auth.
  pki.write("prometheus.yml",
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: shmbpf\n"
            "    scheme: https\n    tls_config:\n      ca_file: " +
                pki.path("ca.crt") + "\n    basic_auth:\n      username: " + Pki::kUser +
                "\n      password: '" + Pki::kPassword +
                "'\n    static_configs:\n"
                "      - targets: ['127.0.0.1:" +
                std::to_string(port) + "']\n");
  const int prom_port = free_port();
  ChildProcess prom(
      "/usr/bin/prometheus",
      {"--config.file=" + pki.path("prometheus.yml"), "--storage.tsdb.path=" + pki.path("data"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      [] { prctl(PR_SET_PDEATHSIG, SIGKILL); });
  std::optional<double> up, build;
  for (const auto deadline = Clock::now() + 60s; Clock::now() < deadline && !prom.exited();) {
    up = prometheus_value(prom_port, "up{job=\"shmbpf\"}");
    build = prometheus_value(prom_port, "shmbpf_build_info{job=\"shmbpf\"}");
    if (up == 1.0 && build)
      break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(up, 1.0) << "Prometheus never scraped shmbpf over TLS; its log:\n" << prom.err();
  EXPECT_TRUE(build) << "no shmbpf_build_info scraped; Prometheus' log:\n" << prom.err();
}

} // namespace
} // namespace shmbpf::test
