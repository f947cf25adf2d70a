// Where the runtimes keep their state, from the daemons themselves
// (sources/runtime_discovery): their flags and configuration files, each
// runtime's default, and a /proc laid out in a temporary directory with a
// daemon in this mount namespace, one in another (a daemon in a container),
// and impostors that are not root or are in another user namespace.
#include "sources/runtime_discovery.hpp"

#include "runtime_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using namespace std::string_literals;

// A daemon's files, by absolute path.
auto files(std::map<std::string, std::string> f) {
  return [f = std::move(f)](const std::string &path) -> std::optional<std::string> {
    auto it = f.find(path);
    if (it == f.end())
      return std::nullopt;
    return it->second;
  };
}

TEST(RuntimeDiscovery, CommandLinesAndFlags) {
  const auto args = split_cmdline("dockerd\0--data-root\0/srv/d\0-g\0/x\0--x=1\0"s);
  EXPECT_EQ(args,
            (std::vector<std::string>{"dockerd", "--data-root", "/srv/d", "-g", "/x", "--x=1"}));
  EXPECT_EQ(split_cmdline("a\0b"s), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split_cmdline("").empty());
  EXPECT_EQ(flag_value(args, {"--data-root"}), "/srv/d");
  EXPECT_EQ(flag_value(args, {"--graph", "-g"}), "/x");
  EXPECT_EQ(flag_value(args, {"--x"}), "1");
  EXPECT_FALSE(flag_value(args, {"--state"}));
  EXPECT_FALSE(flag_value({"--state"}, {"--state"}));                        // no value follows
  EXPECT_EQ(flag_value({"--state=/a", "--state", "/b"}, {"--state"}), "/b"); // the last wins
}

TEST(RuntimeDiscovery, TomlAndYamlStrings) {
  const std::string toml = "# containerd\nversion = 2\nroot = \"/data/containerd\"\n"
                           "state = '/run/k3s/containerd'  # moved\n"
                           "[plugins.\"io.containerd.grpc.v1.cri\"]\n  state = \"/not/this\"\n"
                           "[crio]\nrunroot = \"/run/crio-storage\"\nroot=\"/var/crio\"\n";
  EXPECT_EQ(toml_string(toml, "", "root"), "/data/containerd");
  EXPECT_EQ(toml_string(toml, "", "state"), "/run/k3s/containerd");
  EXPECT_EQ(toml_string(toml, "crio", "runroot"), "/run/crio-storage");
  EXPECT_EQ(toml_string(toml, "crio", "root"), "/var/crio");
  EXPECT_FALSE(toml_string(toml, "", "version")); // not a string
  EXPECT_FALSE(toml_string(toml, "storage", "graphroot"));
  EXPECT_FALSE(toml_string("root = \"/a\\\\b\"\n", "", "root")); // escapes are not read
  EXPECT_FALSE(toml_string("root = \"/a\" trailing\n", "", "root"));
  const std::string yaml = "kind: KubeletConfiguration\npodLogsDir: \"/data/pod-logs\"\n"
                           "nested:\n  podLogsDir: /no\n";
  EXPECT_EQ(yaml_string(yaml, "podLogsDir"), "/data/pod-logs");
  EXPECT_EQ(yaml_string("podLogsDir: /plain # why\n", "podLogsDir"), "/plain");
  EXPECT_FALSE(yaml_string(yaml, "podLogs"));
}

// Each daemon: a flag first, then its configuration file (the one a flag
// names, else the default one), then the runtime's default.
TEST(RuntimeDiscovery, EachDaemonsFlagsThenItsConfigurationThenTheDefault) {
  auto one = [](std::string_view comm, std::vector<std::string> args, auto read) {
    const auto r = roots_of_daemon(comm, args, read);
    return r.empty() ? FoundRoot{} : r.front();
  };
  const auto none = files({});
  EXPECT_EQ(one("dockerd", {"dockerd"}, none),
            (FoundRoot{"docker", "/var/lib/docker", "the default"}));
  EXPECT_EQ(one("dockerd", {"dockerd"},
                files({{"/etc/docker/daemon.json", R"({"data-root": "/mnt/docker"})"}})),
            (FoundRoot{"docker", "/mnt/docker", "/etc/docker/daemon.json data-root"}));
  EXPECT_EQ(one("dockerd", {"dockerd", "--config-file", "/srv/d.json"},
                files({{"/srv/d.json", R"({"graph": "/old/docker"})"}})),
            (FoundRoot{"docker", "/old/docker", "/srv/d.json graph"}));
  EXPECT_EQ(one("dockerd", {"dockerd", "--data-root=/flag"},
                files({{"/etc/docker/daemon.json", R"({"data-root": "/file"})"}})),
            (FoundRoot{"docker", "/flag", "--data-root"}));
  // A relative path, or a file that is not JSON, says nothing.
  EXPECT_EQ(one("dockerd", {"dockerd", "--data-root", "rel"},
                files({{"/etc/docker/daemon.json", "not json"}}))
                .dir,
            "/var/lib/docker");

  EXPECT_EQ(one("containerd", {"containerd"}, none),
            (FoundRoot{"containerd", "/run/containerd", "the default"}));
  EXPECT_EQ(one("containerd", {"containerd", "-c", "/k3s/config.toml"},
                files({{"/k3s/config.toml", "state = \"/run/k3s/containerd\"\n"}})),
            (FoundRoot{"containerd", "/run/k3s/containerd", "/k3s/config.toml state"}));
  EXPECT_EQ(one("containerd", {"containerd", "--root", "/r", "--state", "/s"}, none),
            (FoundRoot{"containerd", "/s", "--state"}));

  const auto crio = roots_of_daemon(
      "crio", {"crio"},
      files(
          {{"/etc/containers/storage.conf",
            "[storage]\ndriver = \"overlay\"\nrunroot = \"/run/st\"\ngraphroot = \"/var/st\"\n"}}));
  ASSERT_EQ(crio.size(), 2u);
  EXPECT_EQ(crio[0], (FoundRoot{"cri-o", "/run/st", "/etc/containers/storage.conf runroot"}));
  EXPECT_EQ(crio[1], (FoundRoot{"podman", "/var/st", "/etc/containers/storage.conf graphroot"}));
  EXPECT_EQ(roots_of_daemon("crio", {"crio", "--runroot", "/rr"}, none)[0].dir, "/rr");

  EXPECT_EQ(one("kubelet", {"kubelet", "--config", "/var/lib/kubelet/config.yaml"},
                files({{"/var/lib/kubelet/config.yaml", "podLogsDir: /data/pods\n"}})),
            (FoundRoot{"pod-logs", "/data/pods", "/var/lib/kubelet/config.yaml podLogsDir"}));
  EXPECT_EQ(one("kubelet", {"kubelet"}, none).dir, "/var/log/pods");
  EXPECT_TRUE(roots_of_daemon("bash", {"bash"}, none).empty());

  // Podman's containers' conmons carry podman's --root in its exit command.
  EXPECT_EQ(one("conmon",
                {"/usr/bin/conmon", "--api-version", "1", "-c", "abc", "--exit-dir", "/run/x",
                 "--exit-command", "/usr/bin/podman", "--exit-command-arg", "--root",
                 "--exit-command-arg", "/data/containers", "--exit-command-arg", "--runroot",
                 "--exit-command-arg", "/run/containers"},
                none),
            (FoundRoot{"podman", "/data/containers", "--exit-command-arg --root"}));
  EXPECT_TRUE(roots_of_daemon("conmon", {"conmon", "--root", "/not/podmans"}, none).empty());
}

// A /proc of the test's own making: ns links are symlinks whose text is
// what the kernel's readlink gives.
struct FakeProc {
  RuntimeDir d;
  std::string proc() const { return (d.root / "proc").string(); }
  void process(const std::string &pid, const std::string &comm, const std::string &uid,
               const std::string &user_ns, const std::string &mnt_ns,
               const std::vector<std::string> &args) const {
    const auto dir = d.root / "proc" / pid;
    d.write(dir / "comm", comm + "\n");
    d.write(dir / "status", "Name:\t" + comm + "\nUid:\t" + uid + "\t" + uid + "\t" + uid + "\t" +
                                uid + "\nGid:\t0\t0\t0\t0\n");
    std::string cmdline;
    for (const std::string &a : args)
      cmdline += a + '\0';
    d.write(dir / "cmdline", cmdline);
    std::filesystem::create_directories(dir / "ns");
    std::filesystem::create_directories(dir / "root");
    std::filesystem::create_symlink(user_ns, dir / "ns" / "user");
    std::filesystem::create_symlink(mnt_ns, dir / "ns" / "mnt");
  }
};

TEST(RuntimeDiscovery, RootDaemonsOfThisUserNamespaceThoseOfThisMountNamespaceFirst) {
  FakeProc p;
  const std::filesystem::path self = p.d.root / "proc" / "self" / "ns";
  std::filesystem::create_directories(self);
  std::filesystem::create_symlink("user:[4026531837]", self / "user");
  std::filesystem::create_symlink("mnt:[4026531841]", self / "mnt");
  // A dockerd in a container (another mount namespace), its data root set
  // in its own daemon.json; a containerd of this mount namespace.
  p.process("300", "dockerd", "0", "user:[4026531837]", "mnt:[4026532999]", {"dockerd"});
  p.d.write(p.d.root / "proc/300/root/etc/docker/daemon.json", R"({"data-root": "/data/docker"})");
  p.process("200", "containerd", "0", "user:[4026531837]", "mnt:[4026531841]",
            {"containerd", "--state", "/run/c2"});
  // Impostors: a user's dockerd, a dockerd root only in its own user
  // namespace, a process of another name.
  p.process("400", "dockerd", "1000", "user:[4026531837]", "mnt:[4026531841]",
            {"dockerd", "--data-root", "/home/u/evil"});
  p.process("500", "dockerd", "0", "user:[4026532100]", "mnt:[4026531841]",
            {"dockerd", "--data-root", "/evil"});
  p.process("600", "sleep", "0", "user:[4026531837]", "mnt:[4026531841]", {"sleep", "1"});
  // Podman's storage, on the host.
  p.d.write(p.d.root / "host/etc/containers/storage.conf",
            "[storage]\ngraphroot = \"/srv/containers\"\n");

  const auto found = discover_runtime_roots(p.proc(), (p.d.root / "host").string());
  ASSERT_EQ(found.size(), 3u) << found.size();
  EXPECT_EQ(found[0], (FoundRoot{"containerd", "/run/c2", "containerd (pid 200) --state"}));
  EXPECT_EQ(found[1],
            (FoundRoot{"podman", "/srv/containers", "/etc/containers/storage.conf graphroot"}));
  EXPECT_EQ(found[2], (FoundRoot{"docker", p.proc() + "/300/root/data/docker",
                                 "dockerd (pid 300) /etc/docker/daemon.json data-root"}));
}

// What was found is looked in first, the default last; a runtime given with
// --runtime-root is looked for only where it was given.
TEST(RuntimeDiscovery, FoundRootsComeBeforeTheDefaultUnlessARootWasGiven) {
  RuntimeRoots roots;
  roots.found = {{"docker", "/data/docker", "x"},
                 {"docker", "/var/lib/docker", "y"},
                 {"containerd", "/run/c2", "z"}};
  EXPECT_EQ(roots.dirs("docker"), (std::vector<std::string>{"/data/docker", "/var/lib/docker"}));
  EXPECT_EQ(roots.dirs("containerd"), (std::vector<std::string>{"/run/c2", "/run/containerd"}));
  EXPECT_EQ(roots.dirs("cri-o"), (std::vector<std::string>{"/run/containers/storage"}));
  EXPECT_TRUE(roots.dirs("nosuch").empty());
  ASSERT_TRUE(set_runtime_root(roots, "docker=/mine"));
  EXPECT_EQ(roots.dirs("docker"), (std::vector<std::string>{"/mine"}));
  EXPECT_EQ(roots.given, (std::vector<std::string>{"docker"}));
}

// The names are read from every root in turn: a container of a second
// daemon is named from that daemon's root.
TEST(RuntimeDiscovery, AContainerIsNamedFromTheRootThatHasIt) {
  RuntimeDir d;
  const std::string id(64, 'e');
  d.write(d.root / "second/containers" / id / "config.v2.json", R"({"Name": "/web"})");
  d.roots.found = {{"docker", (d.root / "second").string(), "dockerd (pid 9) --data-root"}};
  EXPECT_EQ(read_container_name(d.roots, "docker", id, "").name, "web");
  d.roots.found.clear();
  EXPECT_EQ(read_container_name(d.roots, "docker", id, "").name, "");
}

} // namespace
} // namespace shmbpf
