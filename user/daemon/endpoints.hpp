// What `shmbpf serve` answers over HTTP, apart from how HTTP is spoken
// (http_server): the landing page, /healthz, /readyz and /metrics over the
// live monitor. Safe from the server's threads while the consumer runs.
#pragma once

#include "daemon/exporter.hpp"
#include "daemon/serve_reaper.hpp"
#include "live/monitor.hpp"
#include "model/engine_parts.hpp"
#include "views/metrics.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

struct HttpReply {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers; // besides Content-Type
};

// A request's query parameters, decoded; a name may repeat.
using HttpQuery = std::multimap<std::string, std::string>;

class Endpoints {
public:
  // /healthz fails once the consumer loop has not beaten for this long: a
  // liveness probe then restarts a daemon whose loop is stuck.
  static constexpr std::chrono::seconds kStallLimit{60};

  explicit Endpoints(AgentIdentity agent) : agent_(std::move(agent)) {}

  // The answer to a GET of path.
  HttpReply get(std::string_view path) const;

  // From attach() on, /metrics reads mon (under its lock); detach() before
  // mon goes. Ready: the programs are attached and the first scan applied.
  void attach(const Monitor &mon, uint32_t host_mntns);
  // /metrics shows the exporter's counters too (set before the server
  // starts; the exporter outlives it).
  void set_exporter(const Exporter *exporter) { exporter_ = exporter; }
  // And serve --reap's (the same way).
  void set_reaper(const ServeReaper *reaper) { reaper_ = reaper; }
  void set_ready() { ready_.store(true); }
  void detach();
  // The consumer loop is alive (called every turn).
  void heartbeat();

  // Once ready: fn(engine, stats, counters) under the monitor's lock, and
  // what it returns; nullopt before. fn should copy and return (read()).
  template <class Fn>
  auto read(Fn &&fn) const -> std::optional<decltype(fn(std::declval<const Engine &>(),
                                                        std::declval<const MonitorStats &>(),
                                                        std::declval<const MetricsCounters &>()))> {
    std::lock_guard lock(mu_);
    if (!mon_ || !ready_.load())
      return std::nullopt;
    return mon_->read([&](const Engine &engine, const MonitorStats &stats) {
      return fn(engine, stats, counters_);
    });
  }
  // read() as an EngineVisit: each call locks the monitor for one part of a
  // query in parts (model/engine_parts.hpp) and lets it go after.
  EngineVisit visit() const;
  // The reply to a request that came before ready.
  static HttpReply not_ready();

private:
  HttpReply landing() const;
  HttpReply health() const;
  HttpReply readiness() const;
  HttpReply metrics() const;

  AgentIdentity agent_;
  // Guards mon_ and counters_. Lock order (docs/ARCHITECTURE.md, Locks):
  // this one first, then Monitor's (read() holds it around Monitor::read),
  // never the other way.
  mutable std::mutex mu_;
  const Monitor *mon_ = nullptr;
  const Exporter *exporter_ = nullptr;
  const ServeReaper *reaper_ = nullptr;
  MetricsCounters counters_; // the parts that do not change
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> beat_ns_{0}; // steady clock; 0: the loop has not started
};

} // namespace shmbpf
