#include "views/top_json.hpp"

#include "decode/event.hpp"
#include "facts/dev.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/ls_view.hpp"
#include "views/relations.hpp"
#include "views/top_rows.hpp"

#include <optional>
#include <string_view>

namespace shmbpf {

namespace {

void kind_json(JsonWriter &w, std::string_view name, const KindTotals &k) {
  w.key(name).begin_object().num("segments", k.segments).num("bytes", k.bytes).end_object();
}

void opt_real(JsonWriter &w, std::string_view k, std::optional<double> v) {
  if (v)
    w.real(k, *v);
  else
    w.null(k);
}

// Mounts, processes and containers: the field names of `ls --json`, plus
// what top derives (owner and alert, user and orphans, shm_percent).
void mount_json(JsonWriter &w, const Relations &rel, const MountUsage &m) {
  w.begin_object();
  w.str("mountpoint", m.mount.mountpoint).str("owner", rel.mount_owner(m));
  w.num("mntns", m.mount.mntns).num("mnt_id", m.mount.mnt_id).str("dev", dev_string(m.mount.dev));
  if (m.mount.size_limit)
    w.num("size_bytes", m.mount.size_limit);
  else
    w.null("size_bytes");
  w.num("used_bytes", m.mount.used_bytes).num("tracked_bytes", m.tracked_bytes);
  w.num("segments", m.segments);
  opt_real(w, "percent", m.percent);
  w.real("growth_bytes_per_s", m.growth_bytes_per_s);
  opt_real(w, "seconds_to_full", m.seconds_to_full);
  w.num("enospc", m.enospc).num("sigbus", m.sigbus).boolean("alert", mount_alert(m));
  write_mount_limits(w, m);
  w.end_object();
}

void process_json(JsonWriter &w, const TopSnapshot &snap, const ProcessInfo &p) {
  auto u = snap.users.find(p.uid);
  w.begin_object();
  w.num("pid", p.pid).num("ppid", p.ppid).num("uid", p.uid);
  w.key("user").str_or_null(u == snap.users.end() ? std::string_view() : u->second);
  w.str("comm", p.comm);
  w.key("container").str_or_null(p.container_id);
  w.num("segments_created", p.segments_created).num("bytes_created", p.bytes_created);
  w.num("segments_held", p.segments_held).num("bytes_held", p.bytes_held);
  w.real("create_rate", p.create_rate).real("unlink_rate", p.unlink_rate);
  w.num("unheld", p.segments_unheld);
  w.num("sigbus", p.sigbus);
  w.end_object();
}

// An OOM kill as top's header line tells it, in fields.
void oom_kill_json(JsonWriter &w, const OomKill &k) {
  w.begin_object();
  w.num("ts_ns", k.ts_ns).num("pid", k.pid);
  w.key("comm").str_or_null(k.comm);
  w.key("container").str_or_null(k.container.id);
  w.key("container_name").str_or_null(k.container.name);
  if (k.memory) {
    w.num("cgroup_shmem", k.memory->shmem).num("cgroup_usage", k.memory->usage);
    if (k.memory->limit.bytes)
      w.num("cgroup_limit", *k.memory->limit.bytes);
    else
      w.null("cgroup_limit");
  } else {
    w.null("cgroup_shmem").null("cgroup_usage").null("cgroup_limit");
  }
  opt_real(w, "shmem_share", k.shmem_share());
  w.key("largest_files").begin_array();
  for (const OomFile &f : k.largest)
    w.begin_object().str("path", f.path).num("bytes", f.bytes).num("size", f.size).end_object();
  w.end_array();
  w.end_object();
}

void container_json(JsonWriter &w, const Relations &rel, const ContainerInfo &c) {
  const MountUsage *shm = c.cgroup.empty() ? rel.shm_of(c.id) : nullptr;
  w.begin_object();
  w.str("id", c.id).boolean("host", c.id.empty());
  w.key("cgroup").str_or_null(c.cgroup);
  w.key("name").str_or_null(c.name);
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod").str_or_null(c.pod);
  w.key("namespace").str_or_null(c.pod_namespace);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.num("processes", c.processes).num("segments", c.segments).num("bytes", c.bytes);
  w.real("create_rate", c.create_rate);
  opt_real(w, "shm_percent", shm ? shm->percent : std::nullopt);
  w.num("sigbus", c.sigbus).num("oom_kills", c.oom_kills);
  write_container_memory(w, c);
  w.end_object();
}

} // namespace

std::string top_json(const TopSnapshot &snap, const TopState &st) {
  const Relations rel(snap.processes, snap.mounts, snap.host_mntns);
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  if (!snap.clock.empty())
    w.str("time", snap.clock);
  w.num("now_ns", snap.now_ns).str("view", to_string(st.view)).str("sort", to_string(st.sort));
  w.key("filter").str_or_null(st.filter);
  const EngineTotals &t = snap.totals;
  w.key("totals").begin_object();
  kind_json(w, "tmpfs", t.tmpfs);
  kind_json(w, "memfd", t.memfd);
  kind_json(w, "sysv", t.sysv);
  w.num("orphans", t.orphans).num("orphan_bytes", t.orphan_bytes);
  w.num("creates", t.creates).num("unlinks", t.unlinks);
  w.real("create_rate", t.create_rate).real("unlink_rate", t.unlink_rate);
  w.num("sigbus", t.sigbus).num("oom_kills", t.oom_kills);
  w.num("events", snap.events).num("lost", snap.lost);
  w.key("last_oom_kill");
  if (t.last_oom_kill)
    oom_kill_json(w, *t.last_oom_kill);
  else
    w.null();
  w.end_object();
  w.key("mounts").begin_array();
  for (const MountUsage *m : header_mounts(snap, rel))
    mount_json(w, rel, *m);
  w.end_array();
  // Filesystems whose last full scan could not cover every file.
  w.key("scan_gaps").begin_array();
  for (const ScanGap &g : snap.scan_gaps)
    w.begin_object()
        .str("mountpoint", g.mountpoint)
        .str("dev", dev_string(g.dev))
        .num("dirs_too_deep", g.shortfall.dirs_too_deep)
        .boolean("file_limit", g.shortfall.file_limit)
        .end_object();
  w.end_array();
  w.key("rows").begin_array();
  switch (st.view) {
  case TopView::processes:
    for (std::size_t i : process_rows(snap, st))
      process_json(w, snap, snap.processes[i]);
    break;
  case TopView::containers:
    for (std::size_t i : container_rows(snap, st))
      container_json(w, rel, snap.containers[i]);
    break;
  case TopView::mounts:
    for (std::size_t i : mount_rows(st, rel))
      mount_json(w, rel, *rel.filesystems()[i]);
    break;
  case TopView::producers:
    for (std::size_t i : producer_rows(snap, st)) {
      const ProducerInfo &p = snap.producers[i];
      w.begin_object()
          .str("producer", producer_name(p.pattern))
          .str("what", producer_text(p.pattern));
      w.num("segments", p.segments).num("bytes", p.bytes);
      w.num("orphans", p.orphans).num("orphan_bytes", p.orphan_bytes);
      w.num("restart_orphans", p.restart_orphans).num("creators", p.creators).end_object();
    }
    break;
  case TopView::segments:
    // The same objects as `shmbpf ls --json`.
    for (std::size_t i : segment_rows(snap, st))
      write_segment(w, snap.segments[i], snap.now_ns);
    break;
  }
  w.end_array();
  w.end_object();
  return out;
}

} // namespace shmbpf
