// Container names from a real Docker: a dockerd of the test's own (its own
// data root, exec root and socket, no iptables, no bridge), an image
// imported offline from a busybox-static root, a container named web-1
// that writes a file in its /dev/shm. `shmbpf ls`, pointed at that data
// root with --runtime-root, must show Docker's name for it.
#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using nlohmann::json;

const json *find_by(const json &rows, const std::string &key, const std::string &value) {
  for (const json &r : rows)
    if (r.is_object() && r.value(key, std::string()) == value)
      return &r;
  return nullptr;
}

// A container named name, from an image of busybox alone (no registry, no
// network), that writes file in its /dev/shm and sleeps: its id, or why it
// did not start.
struct Started {
  std::string id, why;
};
Started start_writer(const Dockerd &d, const std::string &name, const std::string &file) {
  const Ran imported = d.import_image("shmbpf-" + name + ":test", {"sh", "sleep", "echo"});
  if (imported.code != 0)
    return {"", imported.out};
  const Ran run =
      d.docker("run -d --name " + name + " --network none shmbpf-" + name +
               ":test /bin/sh -c 'echo " + name + " > /dev/shm/" + file + " && exec sleep 1000'");
  if (run.code != 0)
    return {"", run.out + d.log()};
  return {d.id_of(name), ""};
}

// Container id's row of `ls --by container --json` with args, polled until
// it shows (once the container's shell has run); null when it never does.
json container_row(const std::string &args, const std::string &id) {
  for (int i = 0; i < 50; ++i) {
    const auto r = run_shmbpf("ls --by container --json " + args);
    if (r.code != 0)
      return nullptr;
    const json containers = r.json()["containers"];
    if (const json *row = find_by(containers, "id", id))
      return *row;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return nullptr;
}

TEST(DockerNames, LsShowsDockersName) {
  SHMBPF_REQUIRE_ROOT();
  const DockerPrograms programs;
  SHMBPF_REQUIRE_DOCKER(programs);

  Dockerd d(programs);
  ASSERT_TRUE(d.wait_ready(std::chrono::seconds(30))) << d.log();

  const Started web = start_writer(d, "web-1", "names-test");
  ASSERT_EQ(web.why, "");
  const std::string id = web.id;
  ASSERT_EQ(id.size(), 64u);

  const std::string roots = "--runtime-root docker=" + d.data_root();
  const json row = container_row(roots, id);
  ASSERT_TRUE(row.is_object()) << "container " << id << " never listed";
  EXPECT_EQ(row["name"], "web-1");
  EXPECT_EQ(row["runtime"], "docker");
  EXPECT_TRUE(row["pod"].is_null());
  json segments;

  const json *seg = nullptr;
  for (int i = 0; i < 50 && !seg; ++i) {
    auto r = run_shmbpf("ls --json " + roots);
    ASSERT_EQ(r.code, 0) << r.err;
    segments = r.json()["segments"];
    for (const json &s : segments)
      if (s["path"].is_string() && s["path"].get<std::string>().ends_with("/names-test"))
        seg = &s;
    if (!seg)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_NE(seg, nullptr) << segments.dump(2);
  ASSERT_TRUE((*seg)["container"].is_object()) << seg->dump();
  EXPECT_EQ((*seg)["container"]["id"], id);
  EXPECT_EQ((*seg)["container"]["name"], "web-1");

  // top's live model names it as well (Monitor's bootstrap and gathers).
  auto top = run_shmbpf("top -b -n 2 -d 0.3 --by container " + roots);
  ASSERT_EQ(top.code, 0) << top.err;
  bool named_row = false;
  for (const std::string &line : lines_of(top.out))
    named_row = named_row ||
                (line.starts_with(id.substr(0, 12)) && line.find(" web-1 ") != std::string::npos);
  EXPECT_TRUE(named_row) << top.out;

  // The table names it too; without the data root, only the id is known.
  auto table = run_shmbpf("ls --by container " + roots);
  EXPECT_NE(table.out.find("web-1"), std::string::npos) << table.out;
  auto elsewhere =
      run_shmbpf("ls --by container --json --runtime-root docker=" + d.dir() + "/nowhere");
  ASSERT_EQ(elsewhere.code, 0) << elsewhere.err;
  const json others = elsewhere.json()["containers"];
  const json *unnamed = find_by(others, "id", id);
  ASSERT_NE(unnamed, nullptr) << others.dump(2);
  EXPECT_TRUE((*unnamed)["name"].is_null());
}

// Cloud images move Docker's data root in daemon.json: the running dockerd
// tells where, with no --runtime-root, and doctor says what it found.
TEST(DockerNames, ADaemonJsonsDataRootIsFoundFromTheRunningDaemon) {
  SHMBPF_REQUIRE_ROOT();
  const DockerPrograms programs;
  SHMBPF_REQUIRE_DOCKER(programs);

  Dockerd d(programs, DataRootIn::daemon_json);
  ASSERT_TRUE(d.wait_ready(std::chrono::seconds(30))) << d.log();
  const Started web = start_writer(d, "web-2", "found-test");
  ASSERT_EQ(web.why, "");
  const std::string id = web.id;

  const json row = container_row("", id);
  ASSERT_TRUE(row.is_object()) << "container " << id << " never listed";
  EXPECT_EQ(row["name"], "web-2");

  // The live model too.
  auto top = run_shmbpf("top -b -n 2 -d 0.3 --by container");
  ASSERT_EQ(top.code, 0) << top.err;
  EXPECT_NE(top.out.find(" web-2 "), std::string::npos) << top.out;

  auto doctor = run_shmbpf("doctor");
  EXPECT_NE(doctor.out.find("docker " + d.data_root() + " (dockerd (pid "), std::string::npos)
      << doctor.out;
  EXPECT_NE(doctor.out.find(d.dir() + "/daemon.json data-root)"), std::string::npos) << doctor.out;
}

} // namespace
} // namespace shmbpf::test
