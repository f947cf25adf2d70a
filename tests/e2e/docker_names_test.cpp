// Container names from a real Docker: a dockerd of the test's own (its own
// data root, exec root and socket, no iptables, no bridge), an image
// imported offline from a busybox-static root, a container named web-1
// that writes a file in its /dev/shm. `shmbpf ls`, pointed at that data
// root with --runtime-root, must show Docker's name for it.
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string find_program(const std::vector<std::string> &candidates) {
  for (const std::string &p : candidates)
    if (access(p.c_str(), X_OK) == 0)
      return p;
  return {};
}

struct Ran {
  int code = -1;
  std::string out;
};

// A shell command's status and stdout (stderr joined to it, for messages).
Ran sh(const std::string &cmd) {
  Ran r;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Everything the test started, stopped whatever happens: the container,
// dockerd (and the containerd it runs), the mounts they left under the
// directory, the directory.
class Dockerd {
public:
  explicit Dockerd(const std::string &dockerd, const std::string &docker) {
    char tmpl[] = "/tmp/shmbpf-docker-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir_ = tmpl;
    cli_ = docker + " -H unix://" + dir_ + "/docker.sock";
    daemon_ = std::make_unique<ChildProcess>(
        dockerd, std::vector<std::string>{"--iptables=false", "--ip6tables=false", "--bridge=none",
                                          "--storage-driver=vfs", "--data-root", dir_ + "/data",
                                          "--exec-root", dir_ + "/exec", "--host",
                                          "unix://" + dir_ + "/docker.sock", "--pidfile",
                                          dir_ + "/docker.pid"});
  }
  ~Dockerd() {
    if (daemon_) {
      sh(cli_ + " rm -f web-1");
      kill(daemon_->pid(), SIGTERM);
      daemon_->wait(std::chrono::seconds(15)); // kills it when it takes longer
      daemon_.reset();
    }
    unmount_below(dir_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Dockerd(const Dockerd &) = delete;
  Dockerd &operator=(const Dockerd &) = delete;

  const std::string &dir() const { return dir_; }
  const std::string &cli() const { return cli_; }
  Ran docker(const std::string &args) const { return sh(cli_ + " " + args); }
  std::string log() const { return daemon_ ? daemon_->err() + daemon_->out() : ""; }

  bool wait_ready(std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (docker("version").code == 0)
        return true;
      if (daemon_->exited())
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

private:
  std::string dir_;
  std::string cli_;
  std::unique_ptr<ChildProcess> daemon_;

  // Mounts dockerd made below dir (the container's /dev/shm, its root),
  // innermost first.
  static void unmount_below(const std::string &dir) {
    std::ifstream in("/proc/self/mountinfo");
    std::vector<std::string> points;
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string id, parent, dev, root, point;
      f >> id >> parent >> dev >> root >> point;
      if (point.starts_with(dir + "/"))
        points.push_back(point);
    }
    std::sort(points.rbegin(), points.rend());
    for (const std::string &p : points)
      umount2(p.c_str(), MNT_DETACH);
  }
};

const json *find_by(const json &rows, const std::string &key, const std::string &value) {
  for (const json &r : rows)
    if (r.is_object() && r.value(key, std::string()) == value)
      return &r;
  return nullptr;
}

TEST(DockerNames, LsShowsDockersName) {
  SHMBPF_REQUIRE_ROOT();
  const std::string dockerd = find_program({"/usr/sbin/dockerd", "/usr/bin/dockerd"});
  const std::string docker = find_program({"/usr/bin/docker", "/usr/local/bin/docker"});
  const std::string busybox = find_program({"/bin/busybox", "/usr/bin/busybox"});
  if (dockerd.empty() || docker.empty() || busybox.empty()) {
    if (in_ci())
      FAIL() << "needs dockerd, docker and busybox (bash scripts/deps.sh --tests)";
    GTEST_SKIP() << "needs dockerd, docker and busybox";
  }

  Dockerd d(dockerd, docker);
  ASSERT_TRUE(d.wait_ready(std::chrono::seconds(30))) << d.log();

  // An image from a root of busybox alone: no registry, no network.
  const std::string root = d.dir() + "/rootfs";
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/dev/shm");
  fs::copy_file(busybox, root + "/bin/busybox");
  for (const char *applet : {"sh", "sleep", "echo"})
    fs::create_symlink("busybox", root + "/bin/" + applet);
  const Ran imported = sh("tar -C " + root + " -c . | " + d.cli() + " import - shmbpf-names:test");
  ASSERT_EQ(imported.code, 0) << imported.out;

  Ran run = d.docker("run -d --name web-1 --network none shmbpf-names:test /bin/sh -c "
                     "'echo names > /dev/shm/names-test && exec sleep 1000'");
  ASSERT_EQ(run.code, 0) << run.out << d.log();
  const std::string id = d.docker("inspect -f '{{.Id}}' web-1").out.substr(0, 64);
  ASSERT_EQ(id.size(), 64u);

  const std::string roots = "--runtime-root docker=" + d.dir() + "/data";
  json containers, segments;
  const json *row = nullptr;
  // The file appears once the shell in the container has run.
  for (int i = 0; i < 50 && !row; ++i) {
    auto r = run_shmbpf("ls --by container --json " + roots);
    ASSERT_EQ(r.code, 0) << r.err;
    containers = r.json()["containers"];
    row = find_by(containers, "id", id);
    if (!row)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_NE(row, nullptr) << containers.dump(2);
  EXPECT_EQ((*row)["name"], "web-1");
  EXPECT_EQ((*row)["runtime"], "docker");
  EXPECT_TRUE((*row)["pod"].is_null());

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

} // namespace
} // namespace shmbpf::test
