// The fleet's path end to end, with the real thing: Debian's Prometheus
// server scrapes `shmbpf serve` and evaluates the shipped alert rules
// (deploy/prometheus/shmbpf-rules.yml, every `for:` shortened) while a
// PyTorch job with the file_system strategy is killed the way an OOM kill
// ends it. Prometheus' own HTTP API must then give the job's orphans, their
// count and their bytes (du's), under the job's container, and the orphan
// alert must fire for them.
#include "background.hpp"
#include "docker_cgroup.hpp"
#include "serve_http.hpp"
#include "support.hpp"
#include "torch_job.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char *kPrometheus = "/usr/bin/prometheus";

// Prometheus' API: GET path?params, the "data" of a successful answer.
std::optional<json> api(int port, const std::string &path, const httplib::Params &params = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path, params, httplib::Headers{});
  if (!r || r->status != 200)
    return std::nullopt;
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j["status"] != "success")
    return std::nullopt;
  return j["data"];
}

// The value of an instant query that gives one sample; nullopt otherwise.
std::optional<double> query_value(int port, const std::string &promql) {
  auto data = api(port, "/api/v1/query", {{"query", promql}});
  if (!data || (*data)["result"].size() != 1)
    return std::nullopt;
  return std::stod((*data)["result"][0]["value"][1].get<std::string>());
}

// The shipped rules with every `for:` shortened, so that a test sees an
// alert fire within seconds.
std::string rules_with_short_for(const std::string &path) {
  std::ifstream in(path);
  const std::regex key(R"(^(\s*for:\s*)\S+\s*$)");
  std::string out;
  for (std::string line; std::getline(in, line);)
    out += std::regex_replace(line, key, "$013s") + "\n";
  return out;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-e2e-prometheus-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

TEST(PrometheusE2E, ScrapesTheTorchLeakAndFiresTheOrphanAlert) {
  SHMBPF_REQUIRE_TORCH();
  if (access(kPrometheus, X_OK) != 0) {
    if (in_ci())
      FAIL() << kPrometheus << " is missing (scripts/deps.sh --tests installs prometheus)";
    GTEST_SKIP() << kPrometheus << " is missing";
  }
  const std::string shipped =
      std::string(SHMBPF_SOURCE_DIR) + "/deploy/prometheus/shmbpf-rules.yml";
  ASSERT_EQ(access(shipped.c_str(), R_OK), 0) << shipped;

  DockerCgroup cgroup("shmbpf-e2e-prometheus.slice");
  ASSERT_EQ(cgroup.create(), "") << "cannot create a cgroup v2 directory";

  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--no-socket", "--listen", "127.0.0.1:" + std::to_string(port)},
      [] { prctl(PR_SET_PDEATHSIG, SIGKILL); });
  SHMBPF_SERVE_READY(serve, port);

  TempDir dir;
  std::ofstream(dir.path + "/rules.yml") << rules_with_short_for(shipped);
  std::ofstream(dir.path + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "rule_files: ['" << dir.path << "/rules.yml']\n"
      << "scrape_configs:\n  - job_name: shmbpf\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << port << "']\n";
  const int prom_port = free_port();
  ChildProcess prom(
      kPrometheus,
      {"--config.file=" + dir.path + "/prometheus.yml", "--storage.tsdb.path=" + dir.path + "/data",
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      [] { prctl(PR_SET_PDEATHSIG, SIGKILL); });

  // Prometheus is up, has loaded the rules, and scrapes shmbpf.
  const auto up_deadline = Clock::now() + 60s;
  std::optional<double> up;
  while (Clock::now() < up_deadline && !prom.exited()) {
    up = query_value(prom_port, "up{job=\"shmbpf\"}");
    if (up == 1.0)
      break;
    std::this_thread::sleep_for(250ms);
  }
  ASSERT_EQ(up, 1.0) << "Prometheus never scraped shmbpf serve; its log:\n" << prom.err();
  auto rules = api(prom_port, "/api/v1/rules");
  ASSERT_TRUE(rules);
  std::string orphan_alert;
  for (const auto &g : (*rules)["groups"])
    for (const auto &r : g["rules"])
      if (r["type"] == "alerting" &&
          r["query"].get<std::string>().find("shmbpf_orphaned") != std::string::npos)
        orphan_alert = r["name"];
  ASSERT_NE(orphan_alert, "") << "no alerting rule on shmbpf_orphaned_*: " << rules->dump();

  // The leak: the job in the container's cgroup, killed, its files left.
  TorchJob job;
  ASSERT_EQ(job.start("file_system", 8, 262144 + 1013, [&] { return cgroup.enter(); }), "");
  ASSERT_FALSE(job.shm_managers().empty());
  ASSERT_TRUE(job.kill_all()) << "the job's processes did not all die";
  const std::vector<std::string> files = job.files();
  ASSERT_EQ(files.size(), 8u) << "SIGKILL leaves every file behind";
  const uint64_t du = du_total(files);
  ASSERT_GT(du, 0u);

  const std::string sel = "{container_id=\"docker://" + cgroup.id() + "\",mountpoint=\"/dev/shm\"}";
  std::optional<double> count, bytes;
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    count = query_value(prom_port, "sum(shmbpf_orphaned_segments" + sel + ")");
    bytes = query_value(prom_port, "sum(shmbpf_orphaned_bytes" + sel + ")");
    if (count == double(files.size()) && bytes == double(du))
      break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(count, double(files.size()));
  EXPECT_EQ(bytes, double(du)) << "orphaned bytes in Prometheus must be du -B1 of the files";

  // The orphan alert fires, for this container when it carries the label.
  bool firing = false;
  json alerts;
  while (!firing && Clock::now() < deadline + 30s) {
    auto a = api(prom_port, "/api/v1/alerts");
    ASSERT_TRUE(a);
    alerts = (*a)["alerts"];
    for (const auto &al : alerts) {
      const json &l = al["labels"];
      firing |= l["alertname"] == orphan_alert && al["state"] == "firing" &&
                (!l.contains("id") || l["id"] == cgroup.id());
    }
    if (!firing)
      std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(firing) << orphan_alert << " did not fire; alerts: " << alerts.dump();

  // Freed: the orphans leave Prometheus' view too.
  job.remove_files();
  const auto gone_deadline = Clock::now() + 30s;
  while (Clock::now() < gone_deadline) {
    count = query_value(prom_port, "sum(shmbpf_orphaned_segments" + sel + ")");
    if (!count || *count == 0)
      break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(!count || *count == 0) << *count;

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(10s), 0);
}

} // namespace
} // namespace shmbpf::test
