// The local JSON API of `shmbpf serve`, on its unix socket only: the live
// model's segments, processes, containers, mounts and leaks as `ls --json`
// and `leaks --json` write them (the same views), their tables as `ls` and
// `leaks` print them (?format=text), and top's screens (/v1/top) for
// `shmbpf top --server`. Segment names and paths are answered here and
// never over TCP: the TCP server is given Endpoints::get, which knows
// none of these paths. docs/API.md describes every path and parameter.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/usage_log.hpp"

#include <string>
#include <string_view>

namespace shmbpf {

// The header of /v1/leaks whose value says whether the report found a leak
// ("yes" or "no"), which `leaks --server` turns into its exit status.
inline constexpr const char *kLeakingHeader = "Shmbpf-Leaking";

class LocalApi {
public:
  // Reads the monitor through endpoints (its lock, its readiness), and
  // growth over a window from usage (null: /v1/leaks refuses a window).
  explicit LocalApi(const Endpoints &endpoints, const UsageLog *usage = nullptr)
      : endpoints_(endpoints), usage_(usage) {}

  // The answer to a GET of path with query; what is not under /v1/ is
  // answered as over TCP (/healthz, /readyz, /metrics).
  HttpReply get(std::string_view path, const HttpQuery &query) const;

  // POST /v1/reaped: `shmbpf reap`'s records ("event":"reap" NDJSON lines)
  // for the export file, taken only with the socket's token (root's: see
  // write_socket_token) and only when there is an export file.
  void take_reap_records(Exporter *exporter, std::string token) {
    exporter_ = exporter;
    token_ = std::move(token);
  }
  HttpReply post(std::string_view path, std::string_view body, std::string_view token) const;

private:
  // /v1/segments, /v1/processes, /v1/containers and /v1/mounts: ls's lists.
  HttpReply list(std::string_view path, const HttpQuery &q) const;
  HttpReply leaks(const HttpQuery &q) const;
  HttpReply top(const HttpQuery &q) const;

  const Endpoints &endpoints_;
  const UsageLog *usage_;
  Exporter *exporter_ = nullptr;
  std::string token_;
};

} // namespace shmbpf
