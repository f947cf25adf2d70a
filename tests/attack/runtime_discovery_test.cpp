// Where the runtimes keep their state is found from the running daemons
// (sources/runtime_discovery): nobody starts a "dockerd" of their own, a
// script by that name whose command line gives a --data-root they made,
// another root only in a user namespace of theirs, and a "conmon" whose
// command line gives a podman --root they made. None may become a
// place root's shmbpf reads names from: doctor, which lists every root it
// found, names neither.
#include "attack/attacker.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;

TEST(RuntimeDiscovery, NobodysDockerdIsNotBelieved) {
  SHMBPF_REQUIRE_ROOT();
  const fs::path dir = "/tmp/shmbpf-attack-dockerd-" + std::to_string(getpid());
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0777);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      // Whatever nobody left running from the directory (best effort).
      if (std::system(("pkill -KILL -f " + dir.string() + " 2>/dev/null").c_str()) != 0) {
      }
      fs::remove_all(dir);
    }
  } cleanup{dir};
  const std::string script = (dir / "dockerd").string();
  const std::string evil = (dir / "evil").string();
  // A script's process is named after the script: comm "dockerd".
  ASSERT_TRUE(as_nobody("mkdir -p " + evil + "/containers && printf '#!/bin/sh\\nsleep 30\\n' > " +
                        script + " && chmod 0755 " + script));
  ASSERT_TRUE(as_nobody(script + " --data-root " + evil + " >/dev/null 2>&1 &"));
  ASSERT_TRUE(
      as_nobody("unshare -Ur " + script + " --data-root " + evil + "-userns >/dev/null 2>&1 &"));
  const std::string conmon = (dir / "conmon").string();
  ASSERT_TRUE(as_nobody("cp " + script + " " + conmon + " && " + conmon +
                        " --exit-command-arg --root --exit-command-arg " + evil +
                        "-podman >/dev/null 2>&1 &"));
  // Both are running under that name before doctor looks.
  bool up = false;
  for (int i = 0; i < 50 && !up; ++i) {
    up = std::system(
             ("pgrep -f '" + script + " --data-root " + evil + "-userns' >/dev/null").c_str()) ==
             0 &&
         std::system(("pgrep -f '" + script + " --data-root " + evil + "$' >/dev/null").c_str()) ==
             0 &&
         std::system(("pgrep -f '" + conmon + " ' >/dev/null").c_str()) == 0;
    if (!up)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << "nobody's dockerd did not start";

  const CliResult doctor = run_shmbpf("doctor");
  ASSERT_NE(doctor.out.find("runtimes"), std::string::npos) << doctor.out;
  EXPECT_EQ(doctor.out.find(evil), std::string::npos) << doctor.out;
}

} // namespace
} // namespace shmbpf::test
