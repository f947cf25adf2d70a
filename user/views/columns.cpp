#include "views/columns.hpp"

#include "decode/event.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"

#include <algorithm>
#include <cmath>

namespace shmbpf {

namespace {

constexpr Align right = Align::right;

std::string number(uint64_t n) { return std::to_string(n); }

} // namespace

std::string user_cell(uint32_t uid, const CellContext &ctx) {
  if (ctx.users) {
    auto it = ctx.users->find(uid);
    if (it != ctx.users->end())
      return escape_text(it->second);
  }
  return std::to_string(uid);
}

UserNames user_names(const std::vector<ProcessInfo> &processes,
                     const std::function<std::string(uint32_t uid)> &name_of) {
  UserNames out;
  for (const ProcessInfo &p : processes) {
    if (out.count(p.uid))
      continue;
    std::string name = name_of(p.uid);
    if (!name.empty())
      out.emplace(p.uid, std::move(name));
  }
  return out;
}

const ColumnSet<ProcessInfo> &process_columns() {
  using P = ProcessInfo;
  using C = CellContext;
  static const ColumnSet<ProcessInfo> set = {
      {{"PID", right}, [](const P &p, const C &) { return number(p.pid); }},
      {{"USER"}, [](const P &p, const C &c) { return user_cell(p.uid, c); }},
      {{"COMM", Align::left, true}, [](const P &p, const C &) { return escape_text(p.comm); }},
      {{"CONTAINER"},
       [](const P &p, const C &) { return container_cell(p.container_id, p.container_name); }},
      {{"SEGS", right}, [](const P &p, const C &) { return number(p.segments_created); }},
      {{"BYTES", right}, [](const P &p, const C &) { return human_bytes(p.bytes_created); }},
      {{"HELD", right}, [](const P &p, const C &) { return human_bytes(p.bytes_held); }},
      {{"CREATE/s", right}, [](const P &p, const C &) { return rate_text(p.create_rate); }},
      {{"UNHELD", right}, [](const P &p, const C &) { return number(p.segments_unheld); }},
  };
  return set;
}

const ColumnSet<ContainerInfo> &container_columns() {
  using K = ContainerInfo;
  using C = CellContext;
  static const ColumnSet<ContainerInfo> set = {
      {{"ID", Align::left, true},
       [](const K &k, const C &) {
         return k.cgroup.empty() ? container_label(k.id) : "host" + escape_text(k.cgroup);
       }},
      {{"NAME", Align::left, true}, [](const K &k, const C &) { return or_dash(k.name); }},
      {{"RUNTIME"}, [](const K &k, const C &) { return or_dash(k.runtime); }},
      {{"POD", Align::left, true},
       [](const K &k, const C &) { return or_dash(k.pod.empty() ? k.pod_uid : k.pod); }},
      {{"NAMESPACE"}, [](const K &k, const C &) { return or_dash(k.pod_namespace); }},
      // A host cgroup's row has its memory only.
      {{"PROCS", right},
       [](const K &k, const C &) { return k.cgroup.empty() ? number(k.processes) : "-"; }},
      {{"SEGS", right},
       [](const K &k, const C &) { return k.cgroup.empty() ? number(k.segments) : "-"; }},
      {{"BYTES", right},
       [](const K &k, const C &) { return k.cgroup.empty() ? human_bytes(k.bytes) : "-"; }},
      // Its memory cgroup: the shared memory charged to it, and its limit.
      {{"SHMEM", right},
       [](const K &k, const C &) {
         return k.memory ? human_bytes(k.memory->shmem) : std::string("-");
       }},
      {{"LIMIT", right},
       [](const K &k, const C &) {
         return !k.memory               ? std::string("-")
                : k.memory->limit.bytes ? human_bytes(*k.memory->limit.bytes)
                                        : std::string("none");
       }},
      {{"SHM MOUNT %", right},
       [](const K &k, const C &c) {
         const MountUsage *shm =
             c.relations && k.cgroup.empty() ? c.relations->shm_of(k.id) : nullptr;
         return shm ? percent_text(shm->percent) : std::string("-");
       }},
  };
  return set;
}

const ColumnSet<ContainerInfo> &container_columns_for(const std::vector<ContainerInfo> &rows) {
  static const ColumnSet<ContainerInfo> outside_pods = [] {
    ColumnSet<ContainerInfo> set = container_columns();
    std::erase_if(set, [](const EntityColumn<ContainerInfo> &c) {
      return c.column.title == "POD" || c.column.title == "NAMESPACE";
    });
    return set;
  }();
  const bool pods = std::any_of(rows.begin(), rows.end(), [](const ContainerInfo &c) {
    return !c.pod_uid.empty() || !c.pod.empty() || !c.pod_namespace.empty();
  });
  return pods ? container_columns() : outside_pods;
}

std::string container_cell(std::string_view id, std::string_view name) {
  return name.empty() ? short_id(id) : escape_text(name);
}

const ColumnSet<MountUsage> &mount_columns() {
  using M = MountUsage;
  using C = CellContext;
  static const ColumnSet<MountUsage> set = {
      {{"MOUNTPOINT", Align::left, true, true},
       [](const M &m, const C &) { return escape_text(m.mount.mountpoint); }},
      {{"OWNER"},
       [](const M &m, const C &c) {
         return c.relations ? c.relations->mount_owner(m) : std::string("-");
       }},
      {{"SIZE", right}, [](const M &m, const C &) { return size_limit_text(m.mount.size_limit); }},
      {{"USED", right}, [](const M &m, const C &) { return human_bytes(m.mount.used_bytes); }},
      {{"PEAK", right}, [](const M &m, const C &) { return human_bytes(m.peak_used_bytes); }},
      {{"USE%", right}, [](const M &m, const C &) { return percent_text(m.percent); }},
      {{"GROWTH", right},
       [](const M &m, const C &) { return bytes_rate_text(m.growth_bytes_per_s, true); }},
      {{"FULL IN", right},
       [](const M &m, const C &) {
         const auto ttf = seconds_to_full(m);
         return ttf ? human_age(*ttf) : std::string("-");
       }},
      {{"SEGS", right}, [](const M &m, const C &) { return number(m.segments); }},
      {{"TRACKED", right}, [](const M &m, const C &) { return human_bytes(m.tracked_bytes); }},
      {{"ENOSPC", right},
       [](const M &m, const C &) { return m.enospc ? number(m.enospc) : std::string("-"); }},
      {{"SIGBUS", right},
       [](const M &m, const C &) { return m.sigbus ? number(m.sigbus) : std::string("-"); }},
      // The owner's memory limit at this growth, and which comes first.
      {{"MEM LIMIT IN", right},
       [](const M &m, const C &) {
         if (!m.memory_room)
           return std::string("-");
         const auto ttl = m.seconds_to_memory_limit;
         if (!ttl || !std::isfinite(*ttl)) // not growing: which is first, not when
           return std::string(oom_before_full(m) ? "(first)" : "-");
         const std::string t = human_age(static_cast<uint64_t>(*ttl));
         return oom_before_full(m) ? t + " (first)" : t;
       }},
      {{"RIGHT SIZE"}, [](const M &m, const C &) { return right_size_text(m); }},
  };
  return set;
}

const ColumnSet<SegmentInfo> &segment_columns() {
  using S = SegmentInfo;
  using C = CellContext;
  static const ColumnSet<SegmentInfo> set = {
      {{"PATH/NAME", Align::left, true, true},
       [](const S &s, const C &) { return escape_text(s.path); }},
      {{"KIND"}, [](const S &s, const C &) { return std::string(to_string(s.kind)); }},
      {{"SIZE", right}, [](const S &s, const C &) { return human_bytes(s.size); }},
      {{"BYTES", right}, [](const S &s, const C &) { return human_bytes(s.bytes); }},
      {{"STATE"}, [](const S &s, const C &) { return state_cell(s); }},
      {{"CREATOR", Align::left, true},
       [](const S &s, const C &) { return creator_cell(s.creator); }},
      {{"HOLDERS"}, [](const S &s, const C &) { return holders_cell(s); }},
      {{"AGE", right}, [](const S &s, const C &c) { return age_cell(s, c.now_ns); }},
      {{"CONTAINER", Align::left, false, false, true},
       [](const S &s, const C &) { return container_cell(s.container.id, s.container.name); }},
  };
  return set;
}

const ColumnSet<ProducerInfo> &producer_columns() {
  using P = ProducerInfo;
  using C = CellContext;
  static const ColumnSet<ProducerInfo> set = {
      {{"PRODUCER", Align::left, true},
       [](const P &p, const C &) { return std::string(producer_name(p.pattern)); }},
      {{"SEGS", right}, [](const P &p, const C &) { return number(p.segments); }},
      {{"BYTES", right}, [](const P &p, const C &) { return human_bytes(p.bytes); }},
      {{"ORPHANS", right}, [](const P &p, const C &) { return number(p.orphans); }},
      {{"ORPHANED", right}, [](const P &p, const C &) { return human_bytes(p.orphan_bytes); }},
      {{"RESTART", right}, [](const P &p, const C &) { return number(p.restart_orphans); }},
      {{"CREATORS", right}, [](const P &p, const C &) { return number(p.creators); }},
      {{"WHAT"}, [](const P &p, const C &) { return std::string(producer_text(p.pattern)); }},
  };
  return set;
}

} // namespace shmbpf
