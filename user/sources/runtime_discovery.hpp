// Where each container runtime keeps its state, found from the running
// daemons themselves rather than assumed at its default path: their
// command lines (/proc/<pid>/cmdline), the configuration files they name or
// default to (Docker's daemon.json, containerd's config.toml, CRI-O's
// crio.conf and containers' storage.conf, kubelet's configuration; podman,
// which has no daemon, from the conmon of each of its containers), each
// read through the daemon's own root (/proc/<pid>/root), so that a daemon
// running in a container is found too.
//
// Only daemons that run as root in shmbpf's user namespace are believed:
// anyone can start a process named dockerd with a --data-root of their own
// making. Files are read as the runtime names are (read_file_below: no
// symlink followed below the root, at most kRuntimeFileMaxBytes). Parsers
// are pure; discover_runtime_roots is the reader.
#pragma once

#include "sources/runtime_names.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// /proc/<pid>/cmdline: the arguments, NUL-separated (a trailing NUL or
// none).
std::vector<std::string> split_cmdline(std::string_view text);

// The value of the last of the flags names in args: "--flag VALUE",
// "--flag=VALUE" (and "-f VALUE" for a one-letter name).
std::optional<std::string> flag_value(const std::vector<std::string> &args,
                                      std::initializer_list<std::string_view> names);

// A string value in TOML: key = "value" (or 'value') in [table] ("" for
// the top level, before any table). Enough of TOML for the keys read here:
// comments, blank lines, other tables and keys are skipped; nullopt when
// the key is absent or not a one-line string.
std::optional<std::string> toml_string(std::string_view text, std::string_view table,
                                       std::string_view key);

// A top-level "key: value" of a YAML document (kubelet's configuration),
// the value unquoted; nullopt when absent.
std::optional<std::string> yaml_string(std::string_view text, std::string_view key);

// What a daemon's command line and its configuration say about where its
// runtime keeps state: comm is its name (dockerd, containerd, crio,
// kubelet, conmon: podman's --root in its exit command), read reads one of its files by absolute
// path (in its own filesystem). dir is in the daemon's filesystem; how names the source
// ("--data-root", "/etc/docker/daemon.json data-root", "the default").
std::vector<FoundRoot>
roots_of_daemon(std::string_view comm, const std::vector<std::string> &args,
                const std::function<std::optional<std::string>(const std::string &)> &read);

// Every daemon under proc (a /proc) that runs as root in this process's
// user namespace, with what it says, dirs as this process reaches them
// (through <proc>/<pid>/root for a daemon in another mount namespace);
// the daemons of this mount namespace first, each (runtime, dir) once.
// Then podman's storage, which has no daemon: /etc/containers/storage.conf
// under host (the host's root).
std::vector<FoundRoot> discover_runtime_roots(const std::string &proc = "/proc",
                                              const std::string &host = "/");

// roots with what discover_runtime_roots found (looked in before the
// defaults, for the runtimes that --runtime-root did not set).
RuntimeRoots with_discovered(RuntimeRoots roots);

} // namespace shmbpf
