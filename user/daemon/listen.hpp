// --listen ADDR:PORT: where `shmbpf serve` answers HTTP. Its default, help
// and check, for the option and the server alike.
#pragma once

#include "facts/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace shmbpf {

struct ListenAddress {
  std::string host; // a numeric address: "127.0.0.1", "::1" (no brackets)
  uint16_t port = 0;
  bool ipv6 = false;
  // "127.0.0.1:19746", "[::1]:19746".
  std::string text() const;
};

struct ListenSetting {
  // Loopback: metrics carry container ids and mountpoints, and a node's
  // Prometheus (or a sidecar) reaches them there; 0.0.0.0 opens them up.
  // 19746 is outside the exporters' range of Prometheus' port registry
  // (9100-9999, allocated in full), its continuation from 10000, Linux's
  // ephemeral ports and Kubernetes' NodePorts (docs/METRICS.md).
  static constexpr uint16_t kDefaultPort = 19746;
  static constexpr const char *kDefault = "127.0.0.1:19746";
  static constexpr const char *kFlag = "--listen";
  static constexpr const char *kHelp =
      "Address and port for HTTP (/metrics, /healthz, /readyz): an IPv4 address or an IPv6 one "
      "in brackets, then a port from 1 to 65535";
  // The address, or why text is not one.
  static Result<ListenAddress> parse(std::string_view text);
};

} // namespace shmbpf
