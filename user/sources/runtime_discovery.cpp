#include "sources/runtime_discovery.hpp"

#include "sources/json_value.hpp"
#include "sources/small_file.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <memory>

namespace shmbpf {

std::vector<std::string> split_cmdline(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t nul = text.find('\0');
    out.emplace_back(text.substr(0, nul));
    if (nul == std::string_view::npos)
      break;
    text.remove_prefix(nul + 1);
  }
  return out;
}

std::optional<std::string> flag_value(const std::vector<std::string> &args,
                                      std::initializer_list<std::string_view> names) {
  std::optional<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    for (std::string_view n : names) {
      if (a == n && i + 1 < args.size()) {
        out = args[i + 1];
      } else if (n.starts_with("--") && a.size() > n.size() && a.starts_with(n) &&
                 a[n.size()] == '=') {
        out = std::string(a.substr(n.size() + 1));
      }
    }
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// A quoted one-line string at the start of v, nothing but a comment after.
std::optional<std::string> quoted(std::string_view v) {
  if (v.size() < 2 || (v.front() != '"' && v.front() != '\''))
    return std::nullopt;
  const char q = v.front();
  const size_t end = v.find(q, 1);
  if (end == std::string_view::npos)
    return std::nullopt;
  const std::string_view body = v.substr(1, end - 1);
  // Escapes are not read: a path with one is not taken.
  if (q == '"' && body.find('\\') != std::string_view::npos)
    return std::nullopt;
  const std::string_view rest = trim(v.substr(end + 1));
  if (!rest.empty() && rest.front() != '#')
    return std::nullopt;
  return std::string(body);
}

template <class Fn> void for_each_line(std::string_view text, Fn &&fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

} // namespace

std::optional<std::string> toml_string(std::string_view text, std::string_view table,
                                       std::string_view key) {
  std::string_view current;
  std::optional<std::string> out;
  for_each_line(text, [&](std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#')
      return;
    if (line.front() == '[') {
      const size_t end = line.find(']');
      current =
          end == std::string_view::npos ? std::string_view("\n") : trim(line.substr(1, end - 1));
      return;
    }
    const size_t eq = line.find('=');
    if (current != table || eq == std::string_view::npos)
      return;
    std::string_view k = trim(line.substr(0, eq));
    if (k.size() >= 2 && k.front() == '"' && k.back() == '"')
      k = k.substr(1, k.size() - 2);
    if (k == key)
      out = quoted(trim(line.substr(eq + 1)));
  });
  return out;
}

std::optional<std::string> yaml_string(std::string_view text, std::string_view key) {
  std::optional<std::string> out;
  for_each_line(text, [&](std::string_view line) {
    if (line.empty() || std::isspace(static_cast<unsigned char>(line.front())) ||
        !line.starts_with(key) || line.size() == key.size() || line[key.size()] != ':')
      return;
    std::string_view v = trim(line.substr(key.size() + 1));
    if (auto q = quoted(v)) {
      out = std::move(q);
      return;
    }
    v = trim(v.substr(0, v.find(" #"))); // a comment after a plain value
    if (!v.empty() && v.front() != '#' && v.find(' ') == std::string_view::npos)
      out = std::string(v);
  });
  return out;
}

namespace {

using Reader = std::function<std::optional<std::string>(const std::string &)>;

// The first of: a flag, a key of a configuration file, the default.
struct Source {
  std::optional<std::string> value;
  std::string how;
};

bool absolute(const std::optional<std::string> &p) { return p && !p->empty() && p->front() == '/'; }

FoundRoot pick(std::string runtime, std::initializer_list<Source> sources, std::string fallback) {
  for (const Source &s : sources)
    if (absolute(s.value))
      return FoundRoot{std::move(runtime), *s.value, s.how};
  return FoundRoot{std::move(runtime), std::move(fallback), "the default"};
}

std::vector<FoundRoot> docker_roots(const std::vector<std::string> &args, const Reader &read) {
  const std::string config =
      flag_value(args, {"--config-file"}).value_or("/etc/docker/daemon.json");
  std::optional<std::string> data_root, graph;
  if (auto text = read(config))
    if (auto doc = parse_json(*text); doc && doc->type == JsonValue::Type::object) {
      if (auto v = doc->str("data-root"); !v.empty())
        data_root = std::string(v);
      if (auto v = doc->str("graph"); !v.empty())
        graph = std::string(v);
    }
  return {pick("docker",
               {{flag_value(args, {"--data-root"}), "--data-root"},
                {flag_value(args, {"--graph", "-g"}), "--graph"},
                {data_root, config + " data-root"},
                {graph, config + " graph"}},
               "/var/lib/docker")};
}

std::vector<FoundRoot> containerd_roots(const std::vector<std::string> &args, const Reader &read) {
  const std::string config =
      flag_value(args, {"--config", "-c"}).value_or("/etc/containerd/config.toml");
  const std::optional<std::string> text = read(config);
  return {pick("containerd",
               {{flag_value(args, {"--state"}), "--state"},
                {text ? toml_string(*text, "", "state") : std::nullopt, config + " state"}},
               "/run/containerd")};
}

// CRI-O: its run root holds each container's config.json, its root the
// storage's containers.json (read as podman's). Its own configuration
// wins over containers' storage.conf.
std::vector<FoundRoot> crio_roots(const std::vector<std::string> &args, const Reader &read) {
  const std::string config = flag_value(args, {"--config", "-c"}).value_or("/etc/crio/crio.conf");
  const std::string storage =
      flag_value(args, {"--storage-conf"}).value_or("/etc/containers/storage.conf");
  const std::optional<std::string> crio = read(config), store = read(storage);
  auto key = [](const std::optional<std::string> &text, std::string_view table,
                std::string_view k) { return text ? toml_string(*text, table, k) : std::nullopt; };
  return {pick("cri-o",
               {{flag_value(args, {"--runroot"}), "--runroot"},
                {key(crio, "crio", "runroot"), config + " runroot"},
                {key(store, "storage", "runroot"), storage + " runroot"}},
               "/run/containers/storage"),
          pick("podman",
               {{flag_value(args, {"--root", "-r"}), "--root"},
                {key(crio, "crio", "root"), config + " root"},
                {key(store, "storage", "graphroot"), storage + " graphroot"}},
               "/var/lib/containers/storage")};
}

// kubelet's pod log directory, which its configuration file may move
// (podLogsDir, Kubernetes 1.29 and later).
std::vector<FoundRoot> kubelet_roots(const std::vector<std::string> &args, const Reader &read) {
  const std::string config = flag_value(args, {"--config"}).value_or("");
  const std::optional<std::string> text = read(config); // "" reads nothing
  return {pick("pod-logs",
               {{text ? yaml_string(*text, "podLogsDir") : std::nullopt, config + " podLogsDir"}},
               "/var/log/pods")};
}

// Podman has no daemon, but each of its containers has a conmon, whose exit
// command is podman's own with its storage root (--root). Nothing when it
// names none.
std::vector<FoundRoot> conmon_roots(const std::vector<std::string> &args) {
  std::vector<std::string> exit_command;
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--exit-command-arg")
      exit_command.push_back(args[++i]);
  const std::optional<std::string> root = flag_value(exit_command, {"--root"});
  if (!absolute(root))
    return {};
  return {FoundRoot{"podman", *root, "--exit-command-arg --root"}};
}

} // namespace

std::vector<FoundRoot> roots_of_daemon(std::string_view comm, const std::vector<std::string> &args,
                                       const Reader &read) {
  if (comm == "dockerd")
    return docker_roots(args, read);
  if (comm == "containerd")
    return containerd_roots(args, read);
  if (comm == "crio")
    return crio_roots(args, read);
  if (comm == "kubelet")
    return kubelet_roots(args, read);
  if (comm == "conmon")
    return conmon_roots(args);
  return {};
}

namespace {

// "Uid:\treal\teffective\tsaved\tfs": root in every one.
bool runs_as_root(std::string_view status) {
  bool root = false;
  for_each_line(status, [&](std::string_view line) {
    if (!line.starts_with("Uid:"))
      return;
    line.remove_prefix(4);
    root = true;
    for (int i = 0; i < 4; ++i) {
      line = trim(line);
      const size_t end = std::min(line.find_first_of(" \t"), line.size());
      root = root && line.substr(0, end) == "0";
      line.remove_prefix(end);
    }
  });
  return root;
}

std::string ns_of(const std::string &proc, const std::string &pid, const char *ns) {
  char buf[64];
  const std::string path = proc + "/" + pid + "/ns/" + ns;
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool is_pid(const char *name) {
  if (!*name)
    return false;
  for (const char *c = name; *c; ++c)
    if (!std::isdigit(static_cast<unsigned char>(*c)))
      return false;
  return true;
}

} // namespace

std::vector<FoundRoot> discover_runtime_roots(const std::string &proc, const std::string &host) {
  const std::string own_user = ns_of(proc, "self", "user");
  const std::string own_mnt = ns_of(proc, "self", "mnt");
  std::vector<FoundRoot> here, elsewhere;
  std::unique_ptr<DIR, int (*)(DIR *)> d(::opendir(proc.c_str()), ::closedir);
  while (d) {
    const dirent *e = ::readdir(d.get());
    if (!e)
      break;
    if (!is_pid(e->d_name))
      continue;
    const std::string pid = e->d_name, dir = proc + "/" + pid;
    const auto comm = read_small_file(dir + "/comm", 64);
    if (!comm)
      continue;
    const std::string name(trim(*comm));
    if (name != "dockerd" && name != "containerd" && name != "crio" && name != "kubelet" &&
        name != "conmon")
      continue;
    const auto status = read_small_file(dir + "/status", 16384);
    if (!status || !runs_as_root(*status) || own_user.empty() ||
        ns_of(proc, pid, "user") != own_user)
      continue;
    const auto cmdline = read_small_file(dir + "/cmdline", 65536);
    if (!cmdline)
      continue;
    // The daemon's files and directories as it sees them.
    const std::string root = dir + "/root";
    auto read = [&](const std::string &path) -> std::optional<std::string> {
      if (path.empty() || path.front() != '/')
        return std::nullopt;
      return read_file_below(root, path.substr(1));
    };
    const bool same_mnt = !own_mnt.empty() && ns_of(proc, pid, "mnt") == own_mnt;
    for (FoundRoot f : roots_of_daemon(name, split_cmdline(*cmdline), read)) {
      f.how = name + " (pid " + pid + ") " + f.how;
      if (!same_mnt)
        f.dir = root + f.dir;
      (same_mnt ? here : elsewhere).push_back(std::move(f));
    }
  }
  // Podman has no daemon: its storage is where its containers' conmons
  // said (above), then where storage.conf says.
  const std::string storage = "/etc/containers/storage.conf";
  if (auto text = read_file_below(host, storage.substr(1)))
    if (auto graph = toml_string(*text, "storage", "graphroot"); graph && graph->starts_with('/'))
      here.push_back(FoundRoot{"podman", *graph, storage + " graphroot"});
  std::vector<FoundRoot> out;
  for (std::vector<FoundRoot> *list : {&here, &elsewhere})
    for (FoundRoot &f : *list)
      if (std::none_of(out.begin(), out.end(), [&](const FoundRoot &o) {
            return o.runtime == f.runtime && o.dir == f.dir;
          }))
        out.push_back(std::move(f));
  return out;
}

RuntimeRoots with_discovered(RuntimeRoots roots) {
  roots.found = discover_runtime_roots();
  return roots;
}

} // namespace shmbpf
