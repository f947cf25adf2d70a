// The Engine's OOM kills: each kill recorded with its cgroup's memory and
// the largest shared memory files charged to that cgroup as far as shmbpf
// can tell (created by its processes, or living in its container), named
// from the victim's exit when the kernel did not name it.
#include "model/engine.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace shmbpf {

uint64_t Engine::oom_cgroup(const Event &e) const {
  if (e.target_pid == e.pid)
    return e.cgroup_id;
  auto it = procs_.find(e.target_pid);
  if (it != procs_.end() && it->second.cgroup_id != 0)
    return it->second.cgroup_id;
  return e.cgroup_id; // in a cgroup's OOM, the charging task's cgroup is the victim's
}

template <class Fn>
void Engine::for_each_charged(uint64_t cgroup_id, uint32_t victim, Fn &&fn) const {
  const ContainerRef *container = container_of(cgroup_id);
  const LiveView ns = container ? live_view() : LiveView{};
  for (auto it = segs_.begin(); it != segs_.end(); ++it) {
    const Segment &s = it->second;
    const bool mine = victim != 0 && (s.creator_pid == victim || s.holders.contains(victim));
    bool charged = mine || (s.creator_cgroup == cgroup_id && cgroup_id != 0);
    if (!charged && container) {
      const ContainerRef *c = segment_container(it->first, s, ns);
      charged = c && c->id == container->id;
    }
    if (charged)
      fn(it->first, s, mine);
  }
}

std::vector<SegmentKey> Engine::oom_candidates(const Event &e, size_t n) const {
  // The victim's own first, then by size: the pages a fault added since
  // the last stat are not counted yet, and a file cannot hold more than
  // its size.
  std::vector<std::tuple<bool, uint64_t, SegmentKey>> found;
  for_each_charged(oom_cgroup(e), e.target_pid,
                   [&](const SegmentKey &key, const Segment &s, bool mine) {
                     if (!key.is_sysv() && s.state == SegmentState::linked && (s.flags & kPathFull))
                       found.emplace_back(mine, std::max(s.size, s.bytes), key);
                   });
  const size_t keep = std::min(n, found.size());
  std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end(),
                    [](const auto &a, const auto &b) {
                      return std::tie(std::get<0>(a), std::get<1>(a)) >
                             std::tie(std::get<0>(b), std::get<1>(b));
                    });
  std::vector<SegmentKey> out;
  for (size_t i = 0; i < keep; ++i)
    out.push_back(std::get<2>(found[i]));
  return out;
}

std::vector<OomFile> Engine::largest_charged(uint64_t cgroup_id, uint32_t victim) const {
  // The victim's own files first (a host's cgroup v2 id, on a host whose
  // memory controller is v1, is shared by unrelated processes), then the
  // rest, each by resident bytes; a file whose pages were never counted
  // (filled by faults, and out of reach by the time of the kill: its
  // container gone with its victim) after those, by its size.
  using Ranked = std::pair<bool, OomFile>;
  std::vector<Ranked> out;
  auto before = [](const Ranked &a, const Ranked &b) {
    const OomFile &x = a.second, &y = b.second;
    if (a.first != b.first)
      return a.first;
    if ((x.bytes != 0) != (y.bytes != 0))
      return x.bytes != 0;
    if (x.bytes != y.bytes)
      return x.bytes > y.bytes;
    return x.size != y.size ? x.size > y.size : x.path < y.path;
  };
  for_each_charged(cgroup_id, victim, [&](const SegmentKey &key, const Segment &s, bool mine) {
    if (s.bytes == 0 && s.size == 0)
      return;
    Ranked f{mine,
             {key.is_sysv() ? sysv_name(s.sysv_key) : std::string(s.path.view()), s.bytes, s.size}};
    if (out.size() == OomKillLog::kLargest && !before(f, out.back()))
      return;
    if (out.size() == OomKillLog::kLargest)
      out.pop_back();
    out.insert(std::upper_bound(out.begin(), out.end(), f, before), std::move(f));
  });
  std::vector<OomFile> files;
  for (auto &[mine, f] : out)
    files.push_back(std::move(f));
  return files;
}

void Engine::on_oom(const Event &e) {
  OomKill k;
  k.ts_ns = e.ts_ns;
  k.pid = e.target_pid;
  k.cgroup_id = oom_cgroup(e);
  if (!e.target_comm.empty())
    k.comm = e.target_comm;
  else if (e.target_pid == e.pid)
    k.comm = e.comm;
  else if (auto it = procs_.find(e.target_pid); it != procs_.end())
    k.comm = it->second.comm;
  k.memory = e.memcg;
  if (e.victim_mem) {
    k.victim_shmem_rss = e.victim_shmem_rss;
    // The kernel's count at the kill of the victim's mapped shared memory
    // is a floor: the cgroup is read a moment later, when a container that
    // died with its victim may have let its /dev/shm go already.
    if (k.memory)
      k.memory->shmem = std::max(k.memory->shmem, e.victim_shmem_rss);
  }
  k.largest = largest_charged(k.cgroup_id, k.pid);
  failures_.record_oom(std::move(k));
}

std::vector<OomKill> Engine::oom_kills_since(uint64_t since_ns) const {
  std::vector<OomKill> out;
  for (const OomKill &k : failures_.oom_kills().recent())
    if (k.ts_ns >= since_ns)
      out.push_back(with_container(k));
  return out;
}

std::set<std::string> Engine::live_containers() const {
  std::set<std::string> out;
  for (const auto &[id, pid] : container_pids())
    out.insert(id);
  return out;
}

bool Engine::oom_shown(uint64_t cgroup_id, uint64_t last_ns, uint64_t now_ns,
                       const std::set<std::string> &live) const {
  const bool recent = now_ns < last_ns || now_ns - last_ns < kOomShownNs;
  // A cgroup not described yet (a new container's, resolved within a
  // second or two) waits, rather than count as the host's and then move:
  // a counter never goes down. One that never gets described is the host's.
  if (cgroup_id != 0 && !cgroup_container(cgroup_id))
    return !(now_ns < last_ns || now_ns - last_ns < kOomUnknownWaitNs);
  const ContainerRef *c = container_of(cgroup_id);
  return !c || live.contains(c->id) || recent;
}

std::vector<FailureGroup> Engine::oom_groups(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  const std::set<std::string> live = live_containers();
  FailureCounts counts;
  for (const auto &[cgroup, c] : failures_.oom_kills().by_cgroup())
    if (oom_shown(cgroup, c.last_ns, now_ns, live))
      counts[{std::string(), cgroup}] += c.count;
  return groups_of(counts);
}

std::vector<OomKill> Engine::last_oom_kills(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  const std::set<std::string> live = live_containers();
  std::map<std::string, OomKill> last; // by container id, the latest wins
  for (const OomKill &k : failures_.oom_kills().recent())
    if (oom_shown(k.cgroup_id, k.ts_ns, now_ns, live)) {
      OomKill with = with_container(k);
      const std::string id = with.container.id;
      last.insert_or_assign(id, std::move(with));
    }
  std::vector<OomKill> out;
  out.reserve(last.size());
  for (auto &[id, k] : last)
    out.push_back(std::move(k));
  return out;
}

} // namespace shmbpf
