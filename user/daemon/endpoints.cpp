#include "daemon/endpoints.hpp"

#include "sources/clock.hpp"
#include "sources/self_stats.hpp"
#include "views/prometheus.hpp"

namespace shmbpf {

namespace {

constexpr std::string_view kText = "text/plain; charset=utf-8";

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

HttpReply Endpoints::get(std::string_view path) const {
  if (path == "/")
    return landing();
  if (path == "/healthz")
    return health();
  if (path == "/readyz")
    return readiness();
  if (path == "/metrics")
    return metrics();
  return {404, std::string(kText), "not found; see /\n", {}};
}

void Endpoints::attach(const Monitor &mon, uint32_t host_mntns) {
  const Probe &probe = mon.session().probe();
  std::lock_guard lock(mu_);
  mon_ = &mon;
  counters_.host_mntns = host_mntns;
  counters_.boot_to_realtime_ns = boot_to_realtime_ns();
  counters_.hooks = probe.hooks();
  counters_.attached = probe.attached();
  counters_.agent = agent_;
  counters_.kernel = probe.features().release;
}

void Endpoints::detach() {
  ready_.store(false);
  std::lock_guard lock(mu_);
  mon_ = nullptr;
}

void Endpoints::heartbeat() { beat_ns_.store(steady_ns(), std::memory_order_relaxed); }

HttpReply Endpoints::landing() const {
  return {200,
          "text/html; charset=utf-8",
          "<!DOCTYPE html>\n<html><head><title>shmbpf</title></head><body>\n"
          "<h1>shmbpf serve</h1>\n<p>shmbpf " +
              agent_.version +
              ": who creates, holds and leaks shared memory on this host.</p>\n<ul>\n"
              "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
              "<li><a href=\"/healthz\">/healthz</a>: alive</li>\n"
              "<li><a href=\"/readyz\">/readyz</a>: BPF attached and the first scan "
              "applied</li>\n"
              "</ul>\n</body></html>\n",
          {}};
}

HttpReply Endpoints::health() const {
  const int64_t beat = beat_ns_.load(std::memory_order_relaxed);
  const int64_t since = beat ? steady_ns() - beat : 0;
  if (since > std::chrono::nanoseconds(kStallLimit).count())
    return {503,
            std::string(kText),
            "stalled: the event loop has not run for " + std::to_string(since / 1'000'000'000) +
                " s\n",
            {}};
  return {200, std::string(kText), "ok\n", {}};
}

EngineVisit Endpoints::visit() const {
  return [this](const std::function<void(const Engine &)> &fn) {
    return read([&](const Engine &engine, const MonitorStats &, const MetricsCounters &) {
             fn(engine);
             return true;
           })
        .has_value();
  };
}

HttpReply Endpoints::not_ready() {
  return {503, std::string(kText), "not ready: loading BPF and scanning\n", {}};
}

HttpReply Endpoints::readiness() const {
  if (!ready_.load())
    return not_ready();
  return {200, std::string(kText), "ready\n", {}};
}

HttpReply Endpoints::metrics() const {
  MetricsSnapshot snap;
  std::optional<SelfStats> self = read_self_stats();
  {
    std::lock_guard lock(mu_);
    if (!mon_ || !ready_.load())
      return not_ready();
    MetricsCounters c = counters_;
    if (exporter_)
      c.export_file = exporter_->counters();
    if (reaper_)
      c.reap = reaper_->counters();
    c.process = self;
    // Only the copy is made under the monitor's lock; the text after.
    snap = mon_->read([&](const Engine &engine, const MonitorStats &stats) {
      c.now_ns = Monitor::now_ns();
      c.events = stats.by_type;
      c.lost = stats.lost;
      return take_metrics_snapshot(engine, std::move(c));
    });
  }
  return {200, std::string(kPrometheusContentType), metrics_text(snap), {}};
}

} // namespace shmbpf
