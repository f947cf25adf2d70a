// What `shmbpf serve` answers over HTTP, apart from how HTTP is spoken
// (http_server): the landing page, /healthz, /readyz and /metrics over the
// live monitor. Safe from the server's threads while the consumer runs.
#pragma once

#include "daemon/exporter.hpp"
#include "live/monitor.hpp"
#include "views/metrics.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace shmbpf {

struct HttpReply {
  int status = 200;
  std::string content_type;
  std::string body;
};

class Endpoints {
public:
  // /healthz fails once the consumer loop has not beaten for this long: a
  // liveness probe then restarts a daemon whose loop is stuck.
  static constexpr std::chrono::seconds kStallLimit{60};

  explicit Endpoints(std::string version) : version_(std::move(version)) {}

  // The answer to a GET of path.
  HttpReply get(std::string_view path) const;

  // From attach() on, /metrics reads mon (under its lock); detach() before
  // mon goes. Ready: the programs are attached and the first scan applied.
  void attach(const Monitor &mon, uint32_t host_mntns);
  // /metrics shows the exporter's counters too (set before the server
  // starts; the exporter outlives it).
  void set_exporter(const Exporter *exporter) { exporter_ = exporter; }
  void set_ready() { ready_.store(true); }
  void detach();
  // The consumer loop is alive (called every turn).
  void heartbeat();

private:
  HttpReply landing() const;
  HttpReply health() const;
  HttpReply readiness() const;
  HttpReply metrics() const;

  std::string version_;
  mutable std::mutex mu_; // guards mon_ and counters_
  const Monitor *mon_ = nullptr;
  const Exporter *exporter_ = nullptr;
  MetricsCounters counters_; // the parts that do not change
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> beat_ns_{0}; // steady clock; 0: the loop has not started
};

} // namespace shmbpf
