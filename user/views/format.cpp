#include "views/format.hpp"

#include "facts/dev.hpp"
#include "views/escape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace shmbpf {

namespace {

constexpr std::size_t id_width = 12;           // container ids are shown shortened
constexpr std::size_t max_holders = 3;         // pids listed before "+N"
constexpr double alert_percent = 90;           // a mount this full stands out
constexpr double alert_seconds_to_full = 3600; // and one that fills within an hour

} // namespace

std::string human_bytes(uint64_t bytes) {
  static constexpr char units[] = {'K', 'M', 'G', 'T', 'P', 'E'};
  if (bytes < 1024)
    return std::to_string(bytes) + "B";
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (v < 9.95)
    std::snprintf(buf, sizeof buf, "%.1f%c", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.0f%c", v, units[u]);
  return buf;
}

std::string human_age(std::optional<uint64_t> seconds) {
  if (!seconds)
    return "?";
  const uint64_t s = *seconds;
  if (s < 60)
    return std::to_string(s) + "s";
  if (s < 3600)
    return std::to_string(s / 60) + "m";
  if (s < 86400)
    return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string shortest_decimal(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v))
    return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string percent_text(std::optional<double> percent) {
  if (!percent || !std::isfinite(*percent))
    return "-";
  return fixed(*percent, 1) + "%";
}

std::string rate_text(double per_s) {
  if (!std::isfinite(per_s) || per_s < 0.05)
    return "0";
  return fixed(per_s, per_s < 10 ? 1 : 0);
}

std::string bytes_rate_text(double bytes_per_s, bool sign) {
  if (!std::isfinite(bytes_per_s) || std::fabs(bytes_per_s) < 1)
    return "0/s";
  const auto mag = static_cast<uint64_t>(std::llround(std::fabs(bytes_per_s)));
  std::string out = sign ? (bytes_per_s > 0 ? "+" : "-") : "";
  return out + human_bytes(mag) + "/s";
}

std::string size_limit_text(uint64_t size_limit) {
  return size_limit ? human_bytes(size_limit) : std::string("unlimited");
}

std::string or_dash(std::string_view s) { return s.empty() ? std::string("-") : escape_text(s); }

std::string short_id(std::string_view id) {
  return id.empty() ? std::string("-") : escape_text(id.substr(0, id_width));
}

std::string container_label(std::string_view id) {
  return id.empty() ? std::string("host") : short_id(id);
}

std::optional<uint64_t> segment_age_ns(const SegmentInfo &s, uint64_t now_ns) {
  if (s.age_ns)
    return s.age_ns;
  if (s.created_ns != 0 && now_ns >= s.created_ns)
    return now_ns - s.created_ns;
  return std::nullopt;
}

std::optional<uint64_t> segment_age_s(const SegmentInfo &s, uint64_t now_ns) {
  const auto ns = segment_age_ns(s, now_ns);
  return ns ? std::optional<uint64_t>(*ns / ns_per_sec) : std::nullopt;
}

std::string creator_cell(const CreatorInfo &c) {
  if (!c.known || c.pid == 0)
    return "?";
  std::string s = std::to_string(c.pid) + "/" + escape_text(c.comm);
  if (c.exited)
    s += " (exited)";
  return s;
}

std::string holders_cell(const SegmentInfo &s) {
  if (s.holders.empty())
    return s.nattch ? std::to_string(s.nattch) + " attached" : std::string("-");
  std::string out;
  const std::size_t shown = std::min(s.holders.size(), max_holders);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i)
      out += ',';
    out += std::to_string(s.holders[i]);
  }
  if (s.holders.size() > shown)
    out += ",+" + std::to_string(s.holders.size() - shown);
  return out;
}

std::string state_cell(const SegmentInfo &s) {
  std::string out(to_string(s.state));
  if (s.restart_orphan)
    out += " restart-orphan";
  else if (s.orphan)
    out += " orphan";
  return out;
}

std::string age_cell(const SegmentInfo &s, uint64_t now_ns) {
  return human_age(segment_age_s(s, now_ns));
}

std::optional<uint64_t> seconds_to_full(const MountUsage &m) {
  if (!m.seconds_to_full || !std::isfinite(*m.seconds_to_full) || *m.seconds_to_full < 0)
    return std::nullopt;
  return static_cast<uint64_t>(*m.seconds_to_full);
}

namespace {

// When and who: "12s ago, pid 2690 (python3)"; in a container, the pid its
// logs print (ns_pid, when known), the container, then the host's pid.
std::string when_and_who(uint64_t ts_ns, uint64_t now_ns, uint32_t pid, uint32_t ns_pid,
                         const ContainerRef &container, const std::string &comm) {
  std::string who = "pid " + std::to_string(pid);
  if (!container.id.empty()) {
    const std::string &name = container.name.empty() ? short_id(container.id) : container.name;
    who = (ns_pid != 0 && ns_pid != pid ? "pid " + std::to_string(ns_pid) + " in " : "") +
          std::string("container ") + escape_text(name) + " (host pid " + std::to_string(pid) + ")";
  }
  return human_age(now_ns > ts_ns ? (now_ns - ts_ns) / 1'000'000'000 : 0) + " ago, " + who + " (" +
         escape_text(comm) + ")";
}

} // namespace

std::string oom_kill_text(const OomKill &k, uint64_t now_ns) {
  std::string t =
      when_and_who(k.ts_ns, now_ns, k.pid, 0, k.container, k.comm.empty() ? "?" : k.comm) + ": ";
  if (!k.memory) {
    t += "memory cgroup not read";
  } else {
    const CgroupMemory &m = *k.memory;
    t += "shmem " + human_bytes(m.shmem);
    // Of the limit that was hit; on a host out of memory, of the charge.
    const uint64_t whole = m.limit.bytes ? *m.limit.bytes : m.usage;
    t += m.limit.bytes ? " of limit " : " of usage ";
    t += human_bytes(whole);
    if (whole != 0)
      t += " (" + std::to_string(std::min<uint64_t>(100, m.shmem * 100 / whole)) + "%)";
  }
  if (!k.largest.empty()) {
    // Its pages when they were counted, else only its size is known.
    const OomFile &f = k.largest.front();
    t += ", largest " + escape_text(f.path) + " (" +
         (f.bytes != 0 ? human_bytes(f.bytes) : "size " + human_bytes(f.size)) + ")";
  }
  return t;
}

std::string bus_error_text(const BusError &b, uint64_t now_ns) {
  std::string t = when_and_who(b.ts_ns, now_ns, b.pid, b.ns_pid, b.container, b.comm) + ": ";
  if (b.fault != FaultLookup::file) {
    t += b.fault == FaultLookup::anon ? "an anonymous mapping" : "mapping unknown";
    return t;
  }
  t += b.path.empty() ? "dev " + dev_string(b.dev) + " ino " + std::to_string(b.ino)
                      : escape_text(b.path);
  t += " at " + human_bytes(b.offset) + " of " + human_bytes(b.file_size) + ", " +
       std::string(to_string(b.cause));
  if (b.mount_size)
    t += " (" + human_bytes(b.mount_used) + " of " + human_bytes(b.mount_size) + " used)";
  return t;
}

bool mount_alert(const MountUsage &m) {
  // A process died of this mount (or could have), or a write failed on it.
  if (m.sigbus != 0 || m.enospc != 0)
    return true;
  if (m.percent && std::isfinite(*m.percent) && *m.percent > alert_percent)
    return true;
  const auto ttf = seconds_to_full(m);
  if (ttf && *ttf < alert_seconds_to_full)
    return true;
  return m.seconds_to_memory_limit && std::isfinite(*m.seconds_to_memory_limit) &&
         *m.seconds_to_memory_limit < alert_seconds_to_full;
}

bool oom_before_full(const MountUsage &m) {
  if (!m.memory_room)
    return false;
  if (m.mount.size_limit == 0)
    return true;
  const uint64_t room = m.mount.size_limit - std::min(m.mount.used_bytes, m.mount.size_limit);
  return *m.memory_room < room;
}

std::optional<uint64_t> right_size(const MountUsage &m) {
  // A container's /dev/shm or a pod's emptyDir: the runtime's mask over
  // /dev and other tmpfs mounts are not sized by their users.
  const bool sized = m.mount.mountpoint == "/dev/shm" || pod_uid_of_volume(m.mount.mountpoint);
  if (m.container.id.empty() || !sized)
    return std::nullopt;
  constexpr uint64_t kMiB = 1 << 20;
  const uint64_t wanted = m.peak_used_bytes + m.peak_used_bytes / 4; // a quarter's headroom
  return std::max<uint64_t>(kMiB, (wanted + kMiB - 1) / kMiB * kMiB);
}

std::string right_size_text(const MountUsage &m) {
  const auto size = right_size(m);
  if (!size)
    return "-";
  const std::string mib = std::to_string(*size >> 20);
  // A pod's /dev/shm is a memory-backed emptyDir mounted there (Kubernetes
  // has no shm size), sized in its quantity; elsewhere the runtime's option
  // (docker run, nerdctl, podman).
  if (!m.container.pod_uid.empty() || pod_uid_of_volume(m.mount.mountpoint))
    return "sizeLimit=" + mib + "Mi";
  return "--shm-size=" + mib + "m";
}

} // namespace shmbpf
