#include "model/leaks.hpp"
#include "model/glob.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace shmbpf {

namespace {

void sort_groups(std::vector<LeakGroup> &groups) {
  std::sort(groups.begin(), groups.end(), [](const LeakGroup &a, const LeakGroup &b) {
    return std::tie(b.bytes, b.count, a.mount, a.container.id, a.pattern) <
           std::tie(a.bytes, a.count, b.mount, b.container.id, b.pattern);
  });
}

} // namespace

LeakReport summarize_orphans(const std::vector<Orphan> &orphans, const std::string &glob) {
  LeakReport r;
  std::map<std::string, LeakGroup> mounts, containers, patterns;
  for (const Orphan &o : orphans) {
    const SegmentInfo &s = o.segment;
    if (!glob.empty() && !glob_matches(glob, s.path))
      continue;
    r.orphans.push_back(s);
    r.orphan_bytes += s.bytes;
    if (s.restart_orphan) {
      ++r.restart_orphans;
      r.restart_orphan_bytes += s.bytes;
    }
    LeakGroup &m = mounts[s.mountpoint];
    m.mount = s.mountpoint;
    LeakGroup &c = containers[s.container.id];
    c.container = s.container;
    std::string pattern =
        s.pattern == NamePattern::none ? std::string("other") : std::string(to_string(s.pattern));
    LeakGroup &p = patterns[pattern];
    p.pattern = pattern;
    for (LeakGroup *g : {&m, &c, &p}) {
      ++g->count;
      g->bytes += s.bytes;
      g->restart_count += s.restart_orphan;
    }
  }
  for (auto &[k, g] : mounts)
    r.by_mount.push_back(g);
  for (auto &[k, g] : containers)
    r.by_container.push_back(g);
  for (auto &[k, g] : patterns)
    r.by_pattern.push_back(g);
  sort_groups(r.by_mount);
  sort_groups(r.by_container);
  sort_groups(r.by_pattern);
  return r;
}

UsageSample sample_usage(const Engine &engine, uint64_t now_ns) {
  UsageSample u;
  u.t_ns = now_ns;
  // A process's live bytes: what it holds, or what it created and let go
  // of if that is more (a creator that closes its files still leaks them).
  for (const ProcessInfo &p : engine.processes(now_ns))
    if (p.bytes_held || p.bytes_created)
      u.subjects.push_back(
          {"process", std::to_string(p.pid), p.comm, std::max(p.bytes_held, p.bytes_created)});
  for (const ContainerInfo &c : engine.containers(now_ns))
    u.subjects.push_back({"container", c.id, c.runtime, c.bytes});
  for (const MountUsage &m : engine.mounts())
    u.subjects.push_back(
        {"mount", m.mount.mountpoint, std::to_string(m.mount.mntns), m.mount.used_bytes});
  return u;
}

std::vector<GrowthFinding> find_growth(const std::vector<UsageSample> &samples, uint64_t min_bytes,
                                       size_t min_rises) {
  std::vector<GrowthFinding> out;
  if (samples.size() < 2)
    return out;
  using Key = std::tuple<std::string, std::string, std::string>;
  struct Track {
    std::vector<uint64_t> bytes;
  };
  std::map<Key, Track> tracks;
  for (size_t i = 0; i < samples.size(); ++i)
    for (const auto &s : samples[i].subjects) {
      Track &t = tracks[{s.what, s.id, s.name}];
      if (t.bytes.size() == i) // a duplicate within one sample counts once
        t.bytes.push_back(s.bytes);
    }
  const double seconds =
      static_cast<double>(samples.back().t_ns - samples.front().t_ns) / 1'000'000'000.0;
  for (const auto &[key, t] : tracks) {
    if (t.bytes.size() != samples.size())
      continue; // not there the whole window
    if (steady_growth(t.bytes, min_bytes, min_rises))
      out.push_back(
          growth_finding(std::get<0>(key), std::get<1>(key), std::get<2>(key), t.bytes, seconds));
  }
  sort_growth(out);
  return out;
}

bool steady_growth(const std::vector<uint64_t> &bytes, uint64_t min_bytes, size_t min_rises) {
  if (bytes.size() < 2)
    return false;
  size_t rises = 0;
  for (size_t i = 1; i < bytes.size(); ++i) {
    if (bytes[i] < bytes[i - 1])
      return false;
    rises += bytes[i] > bytes[i - 1];
  }
  return rises >= min_rises && bytes.back() - bytes.front() >= min_bytes;
}

GrowthFinding growth_finding(std::string what, std::string id, std::string name,
                             const std::vector<uint64_t> &bytes, double seconds) {
  GrowthFinding g;
  g.what = std::move(what);
  g.id = std::move(id);
  g.name = std::move(name);
  g.from_bytes = bytes.front();
  g.to_bytes = bytes.back();
  g.seconds = seconds;
  g.bytes_per_s = seconds > 0 ? static_cast<double>(g.to_bytes - g.from_bytes) / seconds : 0;
  return g;
}

void sort_growth(std::vector<GrowthFinding> &findings) {
  std::sort(findings.begin(), findings.end(), [](const GrowthFinding &a, const GrowthFinding &b) {
    return std::tie(b.bytes_per_s, a.what, a.id, a.name) <
           std::tie(a.bytes_per_s, b.what, b.id, b.name);
  });
}

std::vector<BusErrorMount> bus_error_mounts(const std::vector<BusError> &faults) {
  std::map<std::pair<std::string, std::string>, BusErrorMount> by_mount;
  for (const BusError &b : faults) {
    BusErrorMount &m = by_mount[{b.container.id, b.mountpoint}];
    m.container = b.container;
    m.mountpoint = b.mountpoint;
    ++m.count;
    m.last = b; // oldest first: the last one stays
  }
  std::vector<BusErrorMount> out;
  out.reserve(by_mount.size());
  for (auto &[key, m] : by_mount)
    out.push_back(std::move(m));
  std::stable_sort(out.begin(), out.end(), [](const BusErrorMount &a, const BusErrorMount &b) {
    return a.count > b.count;
  });
  return out;
}

} // namespace shmbpf
