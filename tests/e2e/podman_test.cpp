// A real podman container (Debian's podman, rootful, with its storage under
// a directory of the test's own: podman has no daemon, so shmbpf must find
// that storage from the container's conmon). Its root is a busybox
// directory (--rootfs): no image. Podman's default limits on open files
// and processes are above what this machine kind lets a container set, so
// the container is given limits below its own (--ulimit); the rest is
// podman's defaults, cgroupfs manager. The container writes a file in its
// /dev/shm; ls and top name it with no --runtime-root.
#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <sys/resource.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class Podman {
public:
  explicit Podman(std::string podman) : podman_(std::move(podman)) {
    char tmpl[] = "/tmp/shmbpf-podman-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir_ = tmpl;
    namespace fs = std::filesystem;
    for (const char *d : {"/bin", "/dev/shm", "/proc", "/sys", "/tmp"})
      fs::create_directories(dir_ + "/rootfs" + d);
    fs::copy_file(find_program({"/bin/busybox", "/usr/bin/busybox"}), dir_ + "/rootfs/bin/busybox");
    for (const char *applet : {"sh", "sleep", "head"})
      fs::create_symlink("busybox", dir_ + "/rootfs/bin/" + applet);
  }
  ~Podman() {
    for (const std::string &name : names_)
      sh(command("rm -f -t 0 " + name));
    sh(command("system reset -f"));
    unmount_below(dir_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Podman(const Podman &) = delete;
  Podman &operator=(const Podman &) = delete;

  // Starts container name running command (with /bin/sh -c), detached.
  Ran run(const std::string &name, const std::string &command_line) {
    names_.push_back(name);
    rlimit files{}, procs{};
    getrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NPROC, &procs);
    const std::string nofile = std::to_string(std::min<rlim_t>(files.rlim_max, 1024));
    const std::string nproc = std::to_string(std::min<rlim_t>(procs.rlim_max, 1024));
    return sh(command("run -d --name " + name + " --network none --ulimit nofile=" + nofile + ":" +
                      nofile + " --ulimit nproc=" + nproc + ":" + nproc + " --rootfs " + dir_ +
                      "/rootfs /bin/sh -c '" + command_line + "'"));
  }

private:
  std::string command(const std::string &args) const {
    return podman_ + " --root " + dir_ + "/root --runroot " + dir_ +
           "/run --cgroup-manager cgroupfs --events-backend file " + args;
  }

  std::string podman_;
  std::string dir_;
  std::vector<std::string> names_;
};

TEST(PodmanContainer, IsFoundFromItsConmonAndNamedInLsAndTop) {
  SHMBPF_REQUIRE_ROOT();
  const std::string podman = find_program({"/usr/bin/podman"});
  if (podman.empty()) {
    if (in_ci())
      FAIL() << "needs podman (bash scripts/deps.sh --tests)";
    GTEST_SKIP() << "needs podman";
  }
  Podman p(podman);
  std::random_device rd;
  const std::string name = "shmjob-" + std::to_string(rd() % 1000000);
  const std::string file = "psm_" + name;
  const Ran run = p.run(name, "head -c 65536 /dev/zero > /dev/shm/" + file + " && exec sleep 1000");
  ASSERT_EQ(run.code, 0) << run.out;
  // The container's id is podman's last line (warnings may come before).
  std::string id;
  for (const std::string &line : lines_of(run.out))
    if (!line.empty())
      id = line;
  ASSERT_EQ(id.size(), 64u) << run.out;

  json seg;
  std::string last;
  for (int i = 0; i < 50 && !seg.is_object(); ++i) {
    const CliResult ls = run_shmbpf("ls --json --match '*/" + file + "'");
    ASSERT_EQ(ls.code, 0) << ls.err;
    last = ls.out;
    const json segs = ls.json()["segments"];
    if (!segs.empty() && segs[0]["container"].is_object())
      seg = segs[0];
    else
      std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(seg.is_object()) << "the container's file was never listed: " << last;
  EXPECT_EQ(seg["container"]["id"], id);
  EXPECT_EQ(seg["container"]["runtime"], "podman");
  EXPECT_EQ(seg["container"]["name"], name);
  EXPECT_EQ(seg["bytes"], 65536);

  const CliResult doctor = run_shmbpf("doctor");
  EXPECT_NE(doctor.out.find("--exit-command-arg --root"), std::string::npos) << doctor.out;

  const CliResult top = run_shmbpf("top -b -n 2 -d 0.3 --by container");
  ASSERT_EQ(top.code, 0) << top.err;
  bool named = false;
  for (const std::string &line : lines_of(top.out))
    named = named || (line.starts_with(id.substr(0, 12)) &&
                      line.find(" " + name + " ") != std::string::npos &&
                      line.find(" podman ") != std::string::npos);
  EXPECT_TRUE(named) << top.out;
}

} // namespace
} // namespace shmbpf::test
