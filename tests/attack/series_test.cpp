// Series on demand, as docs/SECURITY.md says it was made: nobody, in a user
// and mount namespace of their own, mounts 200 tmpfs; each got serve's
// series, labelled as the host's. Now at most kForeignMountSeries of such
// filesystems get series, each naming the uid that made its namespace, and
// the rest are counted as folded.
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/serve_http.hpp"
#include "views/metrics.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

namespace shmbpf::test {
namespace {

TEST(ForeignSeries, TwoHundredMountsOfNobodysAreCappedAndFolded) {
  SHMBPF_REQUIRE_ROOT();
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--no-socket", "--listen", "127.0.0.1:" + std::to_string(port)});
  SHMBPF_SERVE_READY(serve, port);
  const std::string dir = "/tmp/shmbpf-attack-series-" + std::to_string(getpid());
  std::filesystem::create_directory(dir);
  ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
  struct Remove {
    std::string dir;
    ~Remove() { std::filesystem::remove_all(dir); }
  } remove{dir};
  constexpr int kMounts = 200;
  ChildProcess attacker("/usr/bin/setpriv",
                        {"--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-Urm",
                         "sh", "-c",
                         "i=0; while [ $i -lt " + std::to_string(kMounts) + " ]; do mkdir " + dir +
                             "/$i && mount -t tmpfs t " + dir +
                             "/$i || exit 1; i=$((i+1)); done; echo mounted; exec sleep 120"});
  const auto mounted_by = Clock::now() + 30s;
  while (attacker.out().find("mounted") == std::string::npos && !attacker.exited() &&
         Clock::now() < mounted_by)
    std::this_thread::sleep_for(100ms);
  ASSERT_NE(attacker.out().find("mounted"), std::string::npos) << attacker.err();

  // Until serve has seen the namespace: its mounts folded past the limit.
  const auto deadline = Clock::now() + 60s;
  std::string text;
  double folded = 0;
  while (Clock::now() < deadline) {
    auto r = get(port, "/metrics");
    if (r && r->status == 200) {
      text = r->body;
      folded = metric(text, "shmbpf_mounts_folded", {}).value_or(0);
      if (folded >= kMounts - kForeignMountSeries)
        break;
    }
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_GE(folded, kMounts - kForeignMountSeries) << text;
  size_t foreign = 0, nobodys = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("shmbpf_mount_used_bytes{") &&
        line.find("userns_owner=\"\"") == std::string::npos) {
      ++foreign;
      nobodys += line.find("userns_owner=\"65534\"") != std::string::npos;
    }
  EXPECT_LE(foreign, kForeignMountSeries);
  EXPECT_GT(nobodys, 0u) << "nobody's filesystems are not named as theirs";
  expect_promtool_accepts(text);
}

} // namespace
} // namespace shmbpf::test
