#include "cli/options.hpp"

#include "daemon/unix_socket.hpp"
#include "model/containers.hpp"
#include "model/glob.hpp"
#include "probe/probe.hpp"
#include "views/format.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>

namespace shmbpf {

namespace {

// Whether text is a number written in decimal: digits, for a float with a
// fraction and an exponent, for a signed type with a sign. CLI11 itself
// would also read 0x10, 0o17 and 0b11, and -1 into an unsigned type as its
// largest value.
bool is_decimal(std::string_view text, bool is_signed, bool is_float) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      ++i;
    return i > from;
  };
  if (is_signed && i < text.size() && (text[i] == '-' || text[i] == '+'))
    ++i;
  bool whole = digits();
  if (is_float && i < text.size() && text[i] == '.') {
    ++i;
    whole = digits() || whole;
  }
  if (whole && is_float && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+'))
      ++i;
    whole = digits();
  }
  return whole && i == text.size();
}

} // namespace

// Every numeric option of every command takes decimal numbers only.
void require_decimal(CLI::App &app) {
  for (CLI::App *sub : app.get_subcommands(std::function<bool(CLI::App *)>{}))
    require_decimal(*sub);
  for (CLI::Option *opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const bool is_float = type.starts_with("FLOAT");
    const bool is_signed = type.starts_with("INT") || is_float;
    if (!is_float && !is_signed && !type.starts_with("UINT"))
      continue;
    opt->check(CLI::Validator(
        [=](std::string &text) -> std::string {
          if (is_decimal(text, is_signed, is_float))
            return {};
          return std::string(is_float ? "must be a number" : "must be a whole number") +
                 (is_signed ? "" : " (0 or more)") + " written in decimal, not '" + text + "'";
        },
        ""));
  }
}

// A finite number from lo to hi, or above lo: nan and inf parse as
// numbers, every CLI11 range lets nan through, and its messages print the
// largest double in full.
CLI::Validator number_in(double lo, double hi, bool above_lo) {
  std::string range =
      std::isinf(hi)
          ? (above_lo ? "above " + shortest_decimal(lo) : shortest_decimal(lo) + " or more")
          : "from " + shortest_decimal(lo) + " to " + shortest_decimal(hi);
  return CLI::Validator(
      [=](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0')
          return {}; // not a number: the decimal check says so
        if (!std::isfinite(v) || v < lo || v > hi || (above_lo && v == lo))
          return "must be a number " + range + ", not " + text;
        return {};
      },
      "");
}

// A positive whole number that fits its option; CLI11's own range check
// would print the largest double in full.
CLI::Validator positive_integer(const char *what) {
  return CLI::Validator(
      [what](std::string &text) -> std::string {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc{} || end != text.data() + text.size() || v == 0 || v > INT32_MAX)
          return std::string("must be ") + what + " (a whole number from 1 to 2147483647), not " +
                 text;
        return {};
      },
      "POSITIVE");
}

const std::vector<std::string> &kind_names() {
  static const std::vector<std::string> names = {"tmpfs", "memfd", "sysv"};
  return names;
}

// Options that several subcommands share: each defined here once.
void add_ring_buffer_option(CLI::App *cmd, size_t &bytes) {
  const CLI::Validator valid(
      [](std::string &text) -> std::string {
        size_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc::result_out_of_range) {
          // Too large for any limit: said with the number as given.
          const std::string why = RingBufferSetting::problem(SIZE_MAX);
          return text + why.substr(why.find(' '));
        }
        if (ec != std::errc{} || end != text.data() + text.size())
          return {}; // not a number: the decimal check says so
        return RingBufferSetting::problem(v);
      },
      "POWER-OF-TWO");
  cmd->add_option(RingBufferSetting::kFlag, bytes, RingBufferSetting::kHelp)
      ->check(valid)
      ->capture_default_str();
}

CLI::Option *add_hooks_option(CLI::App *cmd, std::string &value, const char *auto_means) {
  return cmd
      ->add_option(HookSetting::kFlag, value,
                   std::string(HookSetting::kHelp) + "; auto is " + auto_means)
      ->check(CLI::IsMember({"full", "light", "auto"}))
      ->capture_default_str();
}

void add_verbose_flag(CLI::App *cmd, bool &verbose) {
  cmd->add_flag("-v,--verbose", verbose, "Show libbpf's messages");
}

CLI::Validator container_id_transform() {
  return CLI::Validator(
      [](std::string &id) -> std::string {
        id = std::string(without_runtime_scheme(id));
        return {};
      },
      "");
}

void add_container_option(CLI::App *cmd, std::optional<std::string> &container, const char *what) {
  cmd->add_option("--container", container,
                  std::string("Only ") + what +
                      " of this container (id or id prefix, also as a metric's container_id "
                      "gives it, containerd://<id>; \"host\" for the host)")
      ->transform(container_id_transform());
}

// --runtime-root RUNTIME=DIR, repeatable: where a runtime keeps the files
// that name its containers, for one whose daemon does not say.
void add_runtime_root_option(CLI::App *cmd, RuntimeRoots &roots) {
  const CLI::Validator valid(
      [](std::string &spec) -> std::string {
        RuntimeRoots scratch;
        auto r = set_runtime_root(scratch, spec);
        return r ? std::string() : r.error();
      },
      "RUNTIME=DIR");
  cmd->add_option_function<std::vector<std::string>>(
         "--runtime-root",
         [&roots](const std::vector<std::string> &specs) {
           for (const std::string &spec : specs)
             (void)set_runtime_root(roots, spec);
         },
         "Where a container runtime keeps the files that name its containers (repeatable; "
         "RUNTIME is one of " +
             std::string(kRuntimeRootNames) +
             "; without it, where the running daemons say, then the defaults: "
             "docker=/var/lib/docker, containerd=/run/containerd, "
             "cri-o=/run/containers/storage, podman=/var/lib/containers/storage, "
             "pod-logs=/var/log/pods; `shmbpf doctor` says what it found)")
      ->check(valid)
      ->type_name("RUNTIME=DIR");
}

CLI::Validator glob_check() {
  return CLI::Validator([](std::string &glob) { return glob_problem(glob); }, "GLOB");
}

void add_match_option(CLI::App *cmd, std::optional<std::string> &glob) {
  cmd->add_option("--match", glob,
                  "Only segments whose path matches this glob (fnmatch: * also matches /)")
      ->check(glob_check());
}

// A path that can name a unix socket (SocketSetting::problem); empty
// passes when allow_empty (serve's --socket '' turns the socket off).
CLI::Validator socket_path(bool allow_empty) {
  return CLI::Validator(
      [allow_empty](std::string &text) -> std::string {
        if (text.empty() && allow_empty)
          return {};
        const std::string why = SocketSetting::problem(text);
        return why.empty() ? why : "the path " + why;
      },
      "PATH");
}

// --server [SOCKET]: read a running `shmbpf serve`'s model instead of
// scanning or loading BPF; without a value, the daemon's default socket.
CLI::Option *add_server_option(CLI::App *cmd, std::optional<std::string> &socket,
                               const std::string &what) {
  return cmd
      ->add_option("--server", socket,
                   what + " from a running shmbpf serve, through its unix socket (default " +
                       SocketSetting::kDefault +
                       "): no scan, no BPF, no root; only access to the socket")
      ->expected(0, 1)
      ->default_str(SocketSetting::kDefault)
      ->check(socket_path(false));
}

} // namespace shmbpf
