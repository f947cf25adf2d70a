#include "views/top_details.hpp"

#include "decode/event.hpp"
#include "views/columns.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/ls_view.hpp"
#include "views/top_rows.hpp"

#include <cstdio>
#include <string>
#include <string_view>

namespace shmbpf {

namespace {

constexpr std::size_t key_width = 14; // "key:" padded so that values line up

class Details {
public:
  Details(const TopSnapshot &snap, const TopState &st, const Relations &rel)
      : snap_(snap), st_(st), rel_(rel), ctx_{snap.now_ns, &snap.users, &rel} {}

  // One "key:   value" line.
  void kv(std::string_view k, const std::string &v) {
    std::string line(k);
    line += ':';
    line.append(k.size() < key_width ? key_width - k.size() : 1, ' ');
    out_.push_back({line + v, TopStyle::normal});
  }
  void line(std::string text) { out_.push_back({std::move(text), TopStyle::normal}); }

  bool segment(const std::string &id);
  bool process(const std::string &id);
  bool container(const std::string &id);
  bool mount(const std::string &id);
  bool producer(const std::string &id);

  std::vector<TopLine> take() { return std::move(out_); }

private:
  // The segments pick chooses, in the segments view's order.
  void segments_table(const SegmentPick &pick) {
    const std::vector<std::size_t> idx = segment_rows(snap_, st_, pick);
    Table t = table_of(segment_columns(), top_column_gap);
    for (std::size_t i : idx)
      t.rows.push_back(cells_of(segment_columns(), snap_.segments[i], ctx_));
    line(std::to_string(idx.size()) + " segment(s):");
    append_table(out_, t, st_.width);
  }

  std::string comm_of(uint32_t pid) const {
    const ProcessInfo *p = rel_.process(pid);
    return p ? escape_text(p->comm) : std::string("?");
  }

  const TopSnapshot &snap_;
  const TopState &st_;
  const Relations &rel_;
  const CellContext ctx_;
  std::vector<TopLine> out_;
};

// A memory cgroup as last read: "shmem 20M, usage 24M of limit 32M".
std::string memory_text(const std::optional<CgroupMemory> &m) {
  if (!m)
    return "not read";
  return "shmem " + human_bytes(m->shmem) + ", usage " + human_bytes(m->usage) + " of " +
         (m->limit.bytes ? "limit " + human_bytes(*m->limit.bytes) : std::string("no limit"));
}

std::string hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool Details::segment(const std::string &id) {
  for (const SegmentInfo &s : snap_.segments) {
    if (segment_row_id(s) != id)
      continue;
    kv("path", escape_text(s.path));
    kv("kind", std::string(to_string(s.kind)));
    if (s.key.is_sysv())
      kv("shmid", std::to_string(static_cast<uint32_t>(s.key.ino_or_shmid)) + " (ipcns " +
                      std::to_string(s.key.dev_or_ipcns) + ", key 0x" + hex8(s.sysv_key) + ")");
    else
      kv("inode", dev_string(s.key.dev_or_ipcns) + " " + std::to_string(s.key.ino_or_shmid));
    if (!s.key.is_sysv()) {
      kv("nlink", std::to_string(s.nlink) + (s.other_paths.empty() ? "" : ", also:"));
      for (const std::string &p : s.other_paths)
        line("  " + escape_text(p));
    }
    kv("mount", or_dash(s.mountpoint));
    kv("size", human_bytes(s.size) + " (" + std::to_string(s.size) + " bytes)");
    kv("resident", human_bytes(s.bytes) + " (" + std::to_string(s.bytes) + " bytes)");
    kv("state", state_cell(s));
    if (s.restart_orphan)
      kv("left by", container_text(s.container) + " " + short_id(s.container.id) +
                        ", ended; its pod runs a newer container (a restart)");
    kv("age", age_cell(s, snap_.now_ns) + (s.existed_before ? " (existed before shmbpf)" : ""));
    std::string creator = creator_cell(s.creator);
    if (s.creator.known && s.creator.pid)
      creator += "  uid " + std::to_string(s.creator.uid);
    if (!s.creator.known && s.inferred_pid)
      creator += "  (pid " + std::to_string(s.inferred_pid) + " from the name)";
    kv("creator", creator);
    const std::string_view ctr = segment_container(s);
    kv("container", ctr.empty()
                        ? std::string("host")
                        : escape_text(ctr) + (s.container.runtime.empty()
                                                  ? std::string()
                                                  : " (" + escape_text(s.container.runtime) + ")"));
    if (!s.container.name.empty())
      kv("name", escape_text(s.container.name));
    if (s.pattern != NamePattern::none)
      kv("pattern", std::string(to_string(s.pattern)));
    if (s.key.is_sysv())
      kv("attached", std::to_string(s.nattch));
    kv("holders", std::to_string(s.holders.size()));
    for (uint32_t pid : s.holders)
      line("  " + std::to_string(pid) + "  " + comm_of(pid));
    // The latest fault on this very segment, if one is still remembered.
    for (auto b = snap_.sigbus.rbegin(); b != snap_.sigbus.rend(); ++b)
      if (b->fault == FaultLookup::file &&
          (s.key.is_sysv() ? b->kind == Kind::sysv && b->shmid >= 0 &&
                                 static_cast<uint64_t>(b->shmid) == s.key.ino_or_shmid
                           : b->dev == s.key.dev_or_ipcns && b->ino == s.key.ino_or_shmid)) {
        kv("sigbus", bus_error_text(*b, snap_.now_ns));
        break;
      }
    return true;
  }
  return false;
}

bool Details::process(const std::string &id) {
  for (const ProcessInfo &p : snap_.processes) {
    if (process_row_id(p) != id)
      continue;
    kv("pid", std::to_string(p.pid) + "  ppid " + std::to_string(p.ppid));
    kv("comm", escape_text(p.comm));
    kv("user", user_cell(p.uid, ctx_) + " (uid " + std::to_string(p.uid) + ")");
    kv("container", p.container_id.empty()
                        ? std::string("host")
                        : escape_text(p.container_id) + " (" + or_dash(p.runtime) + ")");
    if (!p.container_name.empty())
      kv("name", escape_text(p.container_name));
    kv("created",
       std::to_string(p.segments_created) + " live segments, " + human_bytes(p.bytes_created));
    kv("holds", std::to_string(p.segments_held) + " segments, " + human_bytes(p.bytes_held) + "; " +
                    std::to_string(p.sysv_attachments) + " SysV attachments");
    kv("activity", std::to_string(p.creates) + " creates (" + rate_text(p.create_rate) + "/s), " +
                       std::to_string(p.unlinks) + " unlinks (" + rate_text(p.unlink_rate) +
                       "/s), " + std::to_string(p.sigbus) + " SIGBUS");
    const uint32_t pid = p.pid;
    segments_table([pid](const SegmentInfo &s) { return segment_involves(s, pid); });
    return true;
  }
  return false;
}

bool Details::container(const std::string &id) {
  for (const ContainerInfo &c : snap_.containers) {
    if (container_row_id(c) != id)
      continue;
    if (!c.cgroup.empty()) { // one of the host's top-level cgroups
      kv("cgroup", escape_text(c.cgroup));
      kv("memory", memory_text(c.memory));
      return true;
    }
    kv("container", c.id.empty() ? std::string("host") : escape_text(c.id));
    kv("name", or_dash(c.name));
    kv("runtime", or_dash(c.runtime));
    kv("pod", c.pod.empty() ? or_dash(c.pod_uid)
                            : escape_text(c.pod) + " (uid " + or_dash(c.pod_uid) + ")");
    if (!c.pod_namespace.empty())
      kv("namespace", escape_text(c.pod_namespace));
    kv("segments", std::to_string(c.segments) + " (" + human_bytes(c.bytes) + ")");
    kv("activity", std::to_string(c.creates) + " creates (" + rate_text(c.create_rate) + "/s), " +
                       std::to_string(c.unlinks) + " unlinks");
    if (const MountUsage *m = rel_.shm_of(c.id))
      kv("/dev/shm", percent_text(m->percent) + " of " + size_limit_text(m->mount.size_limit));
    kv("memory", memory_text(c.memory));
    if (c.sigbus)
      kv("sigbus",
         std::to_string(c.sigbus) + ", last " + bus_error_text(*c.last_sigbus, snap_.now_ns));
    if (c.oom_kills)
      kv("oom kills",
         std::to_string(c.oom_kills) +
             (c.last_oom_kill ? ", last " + oom_kill_text(*c.last_oom_kill, snap_.now_ns)
                              : std::string()));
    Table t = table_of(process_columns(), top_column_gap);
    for (const ProcessInfo &p : snap_.processes)
      if (p.container_id == c.id &&
          (p.segments_created || p.segments_held || p.sysv_attachments || p.creates))
        t.rows.push_back(cells_of(process_columns(), p, ctx_));
    line(std::to_string(t.rows.size()) + " process(es) using shared memory:");
    append_table(out_, t, st_.width);
    return true;
  }
  return false;
}

bool Details::mount(const std::string &id) {
  for (const MountUsage *m : rel_.filesystems()) {
    if (mount_row_id(*m) != id)
      continue;
    kv("mountpoint", escape_text(m->mount.mountpoint));
    kv("owner", rel_.mount_owner(*m) + " (mntns " + std::to_string(m->mount.mntns) + ", mount id " +
                    std::to_string(m->mount.mnt_id) + ")");
    kv("device", dev_string(m->mount.dev));
    kv("usage", human_bytes(m->mount.used_bytes) + " of " + size_limit_text(m->mount.size_limit) +
                    " (" + percent_text(m->percent) + ")");
    const auto ttf = seconds_to_full(*m);
    kv("growth", bytes_rate_text(m->growth_bytes_per_s, true) + ", full in " +
                     (ttf ? human_age(*ttf) : std::string("-")));
    kv("enospc", std::to_string(m->enospc) + " writes, resizes or creates found no space");
    kv("sigbus", std::to_string(m->sigbus) +
                     (m->last_sigbus ? ", last " + bus_error_text(*m->last_sigbus, snap_.now_ns)
                                     : std::string()));
    const uint32_t dev = m->mount.dev;
    segments_table(
        [dev](const SegmentInfo &s) { return !s.key.is_sysv() && s.key.dev_or_ipcns == dev; });
    return true;
  }
  return false;
}

bool Details::producer(const std::string &id) {
  for (const ProducerInfo &p : snap_.producers) {
    if (producer_row_id(p) != id)
      continue;
    kv("producer",
       std::string(producer_name(p.pattern)) + " (" + std::string(producer_text(p.pattern)) + ")");
    kv("segments", std::to_string(p.segments) + ", " + human_bytes(p.bytes) + " resident");
    kv("orphans", std::to_string(p.orphans) + ", " + human_bytes(p.orphan_bytes) + "; " +
                      std::to_string(p.restart_orphans) + " left by a restart");
    kv("creators", std::to_string(p.creators) + " live processes created some of them");
    const NamePattern pattern = p.pattern;
    segments_table([pattern](const SegmentInfo &s) { return s.pattern == pattern; });
    return true;
  }
  return false;
}

} // namespace

std::vector<TopLine> top_details_lines(const TopSnapshot &snap, const TopState &st,
                                       const Relations &rel) {
  Details d(snap, st, rel);
  bool found = false;
  switch (st.details_view) {
  case TopView::segments:
    found = d.segment(st.details_id);
    break;
  case TopView::processes:
    found = d.process(st.details_id);
    break;
  case TopView::containers:
    found = d.container(st.details_id);
    break;
  case TopView::mounts:
    found = d.mount(st.details_id);
    break;
  case TopView::producers:
    found = d.producer(st.details_id);
    break;
  }
  if (!found)
    d.line("(gone: it no longer exists)");
  return d.take();
}

} // namespace shmbpf
