// What several commands' options share, each defined once: the checks of
// numbers, globs and socket paths, and the options more than one command
// takes (--ring-buffer-size, --hooks, -v, --container, --runtime-root,
// --match, --server).
#pragma once

#include "sources/runtime_names.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// Every numeric option of every command takes decimal numbers only: CLI11
// itself would also read 0x10, 0o17 and 0b11, and -1 into an unsigned type
// as its largest value.
void require_decimal(CLI::App &app);

// A finite number from lo to hi, or above lo: nan and inf parse as
// numbers, every CLI11 range lets nan through, and its messages print the
// largest double in full.
CLI::Validator number_in(double lo, double hi, bool above_lo = false);
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

// A whole number from 1 to 2147483647; what names it in the message.
CLI::Validator positive_integer(const char *what);

// tmpfs, memfd, sysv.
const std::vector<std::string> &kind_names();

// A glob that can match (model/glob).
CLI::Validator glob_check();

// A path that can name a unix socket; empty passes when allow_empty
// (serve's --socket '' turns the socket off).
CLI::Validator socket_path(bool allow_empty);

void add_ring_buffer_option(CLI::App *cmd, size_t &bytes);
CLI::Option *add_hooks_option(CLI::App *cmd, std::string &value, const char *auto_means);
void add_verbose_flag(CLI::App *cmd, bool &verbose);
// A container_id label's "<runtime>://<id>" taken as the id it holds.
CLI::Validator container_id_transform();
void add_container_option(CLI::App *cmd, std::optional<std::string> &container, const char *what);
// --runtime-root RUNTIME=DIR, repeatable: where a runtime keeps the files
// that name its containers, on hosts that moved them.
void add_runtime_root_option(CLI::App *cmd, RuntimeRoots &roots);
void add_match_option(CLI::App *cmd, std::optional<std::string> &glob);
// --server [SOCKET]: read a running `shmbpf serve`'s model instead of
// scanning or loading BPF; without a value, the daemon's default socket.
CLI::Option *add_server_option(CLI::App *cmd, std::optional<std::string> &socket,
                               const std::string &what);

} // namespace shmbpf
