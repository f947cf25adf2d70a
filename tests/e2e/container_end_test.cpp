// Containers that end take their /dev/shm files with them, and the daemon
// forgets them within seconds: one OOM-killed while filling its /dev/shm,
// one that exits on its own, one removed with `docker rm -f` while running.
// A real Docker of the test's own (tests/e2e/dockerd.hpp) and a real serve:
// its export file shows each file was seen, then no table, metric or state
// file keeps it.
#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "e2e/export_records.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ContainerEnd, FilesOfEndedContainersLeaveEveryTable) {
  SHMBPF_REQUIRE_ROOT();
  const DockerPrograms programs;
  SHMBPF_REQUIRE_DOCKER(programs);
  Dockerd d(programs);
  ASSERT_TRUE(d.wait_ready(std::chrono::seconds(30))) << d.log();
  const Ran imported = d.import_image("shmbpf-end:test", {"sh", "sleep", "dd", "echo"});
  ASSERT_EQ(imported.code, 0) << imported.out;

  const TempDir dir;
  const std::string sock = (dir.path / "sock").string();
  const std::string exported = (dir.path / "export.ndjson").string();
  const std::string state = (dir.path / "state").string();
  const int port = free_port();
  // The full set here; light.* runs the test again with the light set
  // (SHMBPF_HOOKS overrides the flag), whose creations name their files
  // from the path as passed and the container's mount table.
  ShmbpfProcess serve({"serve", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock,
                       "--state-dir", state, "--export-file", exported, "--runtime-root",
                       "docker=" + d.data_root(), "--hooks", "full"});
  SHMBPF_SERVE_READY(serve, port);

  const std::string tag = std::to_string(getpid());
  const std::string oom = "end-oom-" + tag, done = "end-exit-" + tag, kept = "end-rm-" + tag;
  // 60 MiB into a 64 MiB /dev/shm under a 32 MiB memory limit: the tmpfs
  // pages are charged to the container, whose one process the kernel kills.
  Ran r = d.docker("run -d --name oom --memory 32m --memory-swap 32m --network none "
                   "shmbpf-end:test /bin/sh -c 'exec dd if=/dev/zero of=/dev/shm/" +
                   oom + " bs=1048576 count=60'");
  ASSERT_EQ(r.code, 0) << r.out << d.log();
  r = d.docker("run -d --name done --network none shmbpf-end:test /bin/sh -c 'echo x > /dev/shm/" +
               done + "; exec sleep 2'");
  ASSERT_EQ(r.code, 0) << r.out;
  r = d.docker("run -d --name kept --network none shmbpf-end:test /bin/sh -c 'echo x > /dev/shm/" +
               kept + "; exec sleep 1000'");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string ids[] = {d.id_of("oom"), d.id_of("done"), d.id_of("kept")};
  for (const std::string &id : ids)
    ASSERT_EQ(id.size(), 64u);

  const Ran oom_exit = d.docker("wait oom");
  EXPECT_EQ(oom_exit.out.substr(0, 3), "137") << oom_exit.out << " (not OOM-killed?)";
  const Ran done_exit = d.docker("wait done");
  EXPECT_EQ(done_exit.out.substr(0, 1), "0") << done_exit.out;

  // Each file was seen: its creation is in the export file with its
  // container; the running one is in the daemon's model.
  auto created = [&](const std::string &leaf, const std::string &id) {
    for (const json &j : records_of(exported))
      if (j.value("event", "") == "create" && j["path"].is_string() &&
          j["path"].get<std::string>().ends_with("/" + leaf) && j["container_id"] == id)
        return true;
    return false;
  };
  // The daemon's segments of a container, whatever their paths.
  std::string last_ls;
  auto in_model = [&](const std::string &id) -> size_t {
    const CliResult ls = run_shmbpf("ls --server " + sock + " --json");
    last_ls = ls.out + ls.err;
    if (ls.code != 0)
      return 1;               // not known to be gone
    const json j = ls.json(); // kept: the loop below reads into it
    size_t n = 0;
    for (const json &s : j["segments"])
      n += s["container"].is_object() && s["container"]["id"] == id;
    return n;
  };
  bool seen = false;
  for (auto end = Clock::now() + 20s; !seen && Clock::now() < end;) {
    seen = created(oom, ids[0]) && created(done, ids[1]) && created(kept, ids[2]) &&
           in_model(ids[2]) > 0;
    if (!seen)
      std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(seen) << "created: " << created(oom, ids[0]) << created(done, ids[1])
                    << created(kept, ids[2]) << ", kept in the model: " << in_model(ids[2]) << "\n"
                    << last_ls;
  // While it runs: its /dev/shm by the name its processes use, and none of
  // the masks Docker lays over /proc and /sys (tmpfs mounts) as a series.
  {
    const auto m = get(port, "/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("container_id=\"docker://" + ids[2] + "\",mountpoint=\"/dev/shm\""),
              std::string::npos)
        << m->body;
    for (const std::string &hidden : {std::string("mountpoint=\"/proc"),
                                      std::string("mountpoint=\"/sys"), "mountpoint=\"" + d.dir()})
      EXPECT_EQ(m->body.find(hidden), std::string::npos) << hidden << " in\n" << m->body;
  }

  ASSERT_EQ(d.docker("rm -f kept").code, 0);
  // Within seconds no table or metric has any of them.
  bool gone = false;
  std::string metrics;
  for (auto end = Clock::now() + 10s; !gone && Clock::now() < end;) {
    const auto m = get(port, "/metrics");
    metrics = m ? m->body : "";
    gone = m && in_model(ids[0]) == 0 && in_model(ids[1]) == 0 && in_model(ids[2]) == 0;
    // But for the OOM-killed one's kill: reported for a while after its
    // container ended (Engine::kOomShownNs), so that alerts see it.
    for (const std::string &line : lines_of(metrics))
      for (const std::string &id : ids)
        gone = gone && (line.find("container_id=\"docker://" + id + "\"") == std::string::npos ||
                        (id == ids[0] && line.starts_with("shmbpf_oom_")));
    if (!gone)
      std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(gone) << metrics;
  // The kill itself, of the container it ended.
  EXPECT_EQ(metric(metrics, "shmbpf_oom_kills_total", {"container_id=\"docker://" + ids[0] + "\""}),
            1.0)
      << metrics;
  const CliResult leaks = run_shmbpf("leaks --server " + sock + " --min-age 0 --json");
  for (const std::string &leaf : {oom, done, kept})
    EXPECT_EQ(leaks.out.find(leaf), std::string::npos) << leaks.out;

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
  const std::string saved = read_text(state + "/state");
  EXPECT_FALSE(saved.empty());
  for (const std::string &leaf : {oom, done, kept})
    EXPECT_EQ(saved.find(leaf), std::string::npos) << "the state file keeps " << leaf;
}

} // namespace
} // namespace shmbpf::test
