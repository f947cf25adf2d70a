// A real containerd for end-to-end tests, driven as kubelet drives it but
// without kubelet: Debian's containerd with its own root, state and socket,
// all set in its config.toml (so that shmbpf must find them there), and
// containers started with ctr in the namespace CRI uses (k8s.io), with the
// annotations CRI writes (container, pod and namespace names, pod uid),
// host networking, a cgroup laid out as kubelet's cgroupfs or systemd
// driver lays it out, and a memory-backed emptyDir (a tmpfs at kubelet's
// path for it) bind-mounted at /dev/shm. The container's root is a busybox
// directory (ctr run --rootfs): no image, no registry, no network. The
// destructor kills every task, stops the daemon, unmounts what is left
// below its directory and deletes it, whatever the test did.
#pragma once

#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "support.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

// What a containerd test runs: empty paths for what this machine lacks.
struct ContainerdPrograms {
  std::string containerd = find_program({"/usr/bin/containerd", "/usr/local/bin/containerd"});
  std::string ctr = find_program({"/usr/bin/ctr", "/usr/local/bin/ctr"});
  std::string runc = find_program({"/usr/sbin/runc", "/usr/bin/runc"});
  std::string busybox = find_program({"/bin/busybox", "/usr/bin/busybox"});
  bool complete() const {
    return !containerd.empty() && !ctr.empty() && !runc.empty() && !busybox.empty();
  }
};

// Skips the test when containerd, ctr, runc or busybox is missing; fails
// instead under CI=true, which must run it.
#define SHMBPF_REQUIRE_CONTAINERD(programs)                                                        \
  do {                                                                                             \
    if (!(programs).complete()) {                                                                  \
      if (::shmbpf::test::in_ci())                                                                 \
        FAIL() << "needs containerd, ctr, runc and busybox (bash scripts/deps.sh --tests)";        \
      GTEST_SKIP() << "needs containerd, ctr, runc and busybox";                                   \
    }                                                                                              \
  } while (0)

// A pod as kubelet describes it to the runtime, and one container of it.
struct KubePod {
  enum class Driver { cgroupfs, systemd };
  std::string uid;               // 8-4-4-4-12 hex digits
  std::string name = "job-7f9c"; // the pod's
  std::string pod_namespace = "ml";
  std::string container = "trainer";
  std::string id; // the container's, 64 hex digits
  Driver driver = Driver::cgroupfs;

  static KubePod random() {
    std::random_device rd;
    static constexpr char hex[] = "0123456789abcdef";
    auto digits = [&](int n) {
      std::string s;
      for (int i = 0; i < n; ++i)
        s += hex[rd() % 16];
      return s;
    };
    KubePod p;
    p.uid = digits(8) + "-" + digits(4) + "-" + digits(4) + "-" + digits(4) + "-" + digits(12);
    p.id = digits(64);
    p.name = "job-" + digits(5); // tests running alongside have pods of their own
    return p;
  }

  // The container's cgroup as the driver names it (runc's cgroupfs manager
  // makes these directories as they are written: the systemd driver's
  // layout, without systemd).
  std::string cgroup() const {
    if (driver == Driver::cgroupfs)
      return "/kubepods/besteffort/pod" + uid + "/" + id;
    std::string under = uid;
    std::replace(under.begin(), under.end(), '-', '_');
    return "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + under +
           ".slice/cri-containerd-" + id + ".scope";
  }
};

class Containerd {
public:
  explicit Containerd(const ContainerdPrograms &programs) : programs_(programs) {
    char tmpl[] = "/tmp/shmbpf-containerd-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir_ = tmpl;
    std::ofstream(dir_ + "/config.toml")
        << "version = 2\nroot = \"" << dir_ << "/root\"\nstate = \"" << state()
        << "\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \""
        << socket() << "\"\n[ttrpc]\n  address = \"" << socket() << ".ttrpc\"\n[debug]\n"
        << "  address = \"" << dir_ << "/debug.sock\"\n";
    namespace fs = std::filesystem;
    for (const char *d : {"/bin", "/dev/shm", "/proc", "/sys", "/tmp"})
      fs::create_directories(rootfs() + d);
    fs::copy_file(programs.busybox, rootfs() + "/bin/busybox");
    for (const char *applet : {"sh", "sleep", "echo", "cat", "head"})
      fs::create_symlink("busybox", rootfs() + "/bin/" + applet);
    daemon_ = std::make_unique<ChildProcess>(
        programs.containerd, std::vector<std::string>{"--config", dir_ + "/config.toml"});
  }
  ~Containerd() {
    for (const std::string &id : ids_) {
      ctr("task kill -s KILL " + id);
      for (int i = 0; i < 50 && ctr("task rm -f " + id).code != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ctr("container rm " + id);
    }
    remove_cgroups();
    if (daemon_) {
      kill(daemon_->pid(), SIGTERM);
      daemon_->wait(std::chrono::seconds(15));
      daemon_.reset();
    }
    unmount_below(dir_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Containerd(const Containerd &) = delete;
  Containerd &operator=(const Containerd &) = delete;

  const std::string &dir() const { return dir_; }
  std::string state() const { return dir_ + "/state"; }
  std::string socket() const { return dir_ + "/containerd.sock"; }
  std::string rootfs() const { return dir_ + "/rootfs"; }
  std::string log() const { return daemon_ ? daemon_->err() + daemon_->out() : ""; }
  Ran ctr(const std::string &args) const {
    return sh(programs_.ctr + " -a " + socket() + " -n k8s.io " + args);
  }

  bool wait_ready(std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (sh(programs_.ctr + " -a " + socket() + " version").code == 0)
        return true;
      if (daemon_->exited())
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // The pod's memory-backed emptyDir, a tmpfs where kubelet (its root
  // below this directory) mounts it, of size (its sizeLimit; "" for none:
  // tmpfs's default, half of the host's memory); "" when it could not be
  // mounted.
  std::string mount_empty_dir(const KubePod &pod, const std::string &name,
                              const std::string &size = "64m") const {
    const std::string path =
        dir_ + "/kubelet/pods/" + pod.uid + "/volumes/kubernetes.io~empty-dir/" + name;
    std::filesystem::create_directories(path);
    const std::string options = size.empty() ? "" : "size=" + size;
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) != 0)
      return "";
    return path;
  }

  // Starts the pod's container running command (with /bin/sh -c) as CRI
  // would: its annotations, host network, its cgroup, the emptyDir at
  // /dev/shm.
  Ran run(const KubePod &pod, const std::string &empty_dir, const std::string &command) {
    ids_.push_back(pod.id);
    cgroups_.push_back(pod.cgroup());
    const std::string a = " --annotation io.kubernetes.cri.";
    // pivot_root cannot leave an initramfs (a VM guest's root): runc moves
    // the container's root there instead.
    const std::string pivot = root_is_initramfs() ? " --no-pivot" : "";
    return ctr("run -d --net-host" + pivot + " --env PATH=/bin --cgroup " + pod.cgroup() + a +
               "container-type=container" + a + "container-name=" + pod.container + a +
               "sandbox-name=" + pod.name + a + "sandbox-namespace=" + pod.pod_namespace + a +
               "sandbox-uid=" + pod.uid + " --mount type=bind,src=" + empty_dir +
               ",dst=/dev/shm,options=rbind:rw --rootfs " + rootfs() + " " + pod.id +
               " /bin/sh -c '" + command + "'");
  }

  // The host pid of the container's first process, 0 when none.
  pid_t pid_of(const std::string &id) const {
    const Ran r = ctr("task ls");
    for (const std::string &line : lines_of(r.out))
      if (line.starts_with(id + " "))
        return static_cast<pid_t>(std::atoi(line.substr(id.size()).c_str()));
    return 0;
  }
  // Kills the container's task and waits until it has stopped.
  bool stop(const std::string &id) const {
    ctr("task kill -s KILL " + id);
    for (int i = 0; i < 100; ++i) {
      if (ctr("task ls").out.find(id + " ") == std::string::npos ||
          ctr("task ls").out.find("STOPPED") != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

private:
  static bool root_is_initramfs() {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string id, parent, dev, root, point;
      f >> id >> parent >> dev >> root >> point;
      if (point == "/" && line.find(" - rootfs ") != std::string::npos)
        return true;
    }
    return false;
  }

  // runc removes a container's own cgroup; the pod's, its QoS class's and
  // kubepods' go here, in every hierarchy, unless another test's pod still
  // has them.
  void remove_cgroups() const {
    std::ifstream in("/proc/self/mountinfo");
    std::vector<std::string> bases;
    for (std::string line; std::getline(in, line);)
      if (line.find(" - cgroup ") != std::string::npos ||
          line.find(" - cgroup2 ") != std::string::npos) {
        std::istringstream f(line);
        std::string id, parent, dev, root, point;
        f >> id >> parent >> dev >> root >> point;
        if (root == "/")
          bases.push_back(point);
      }
    for (const std::string &cg : cgroups_)
      for (std::string p = cg; !p.empty(); p = p.substr(0, p.rfind('/')))
        for (const std::string &base : bases)
          ::rmdir((base + p).c_str());
  }

  ContainerdPrograms programs_;
  std::string dir_;
  std::unique_ptr<ChildProcess> daemon_;
  std::vector<std::string> ids_, cgroups_;
};

} // namespace shmbpf::test
