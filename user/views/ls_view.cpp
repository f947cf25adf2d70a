#include "views/ls_view.hpp"

#include "decode/event.hpp"
#include "views/columns.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/table.hpp"

#include <cstdint>
#include <functional>
#include <string_view>

namespace shmbpf {
namespace {

constexpr std::size_t gap = 2; // blanks between columns: a table read at leisure

// ---- JSON ------------------------------------------------------------------

// The document in pieces: sink(text) gets about flush_bytes at a time, so
// that a large one (100,000 segments make tens of megabytes) is never held
// whole. each(fn) calls fn once per item, in order.
template <typename Each, typename F>
void document(std::string_view name, Each each, F item,
              const std::function<void(std::string_view)> &sink, std::size_t flush_bytes) {
  // One item per line: readable, and greppable by line.
  std::string out = "{";
  append_json_text(out, name);
  out += ": [";
  bool first = true;
  each([&](const auto &value) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    JsonWriter w(out);
    item(w, value);
    if (out.size() >= flush_bytes) {
      sink(out);
      out.clear();
    }
  });
  out += first ? "]}\n" : "\n]}\n";
  sink(out);
}

template <typename T> auto each_of(const std::vector<T> &items) {
  return [&items](const auto &fn) {
    for (const T &x : items)
      fn(x);
  };
}

template <typename T, typename F>
std::string document(std::string_view name, const std::vector<T> &items, F item) {
  std::string out;
  document(
      name, each_of(items), item, [&](std::string_view piece) { out += piece; }, SIZE_MAX);
  return out;
}

} // namespace

std::string container_text(const ContainerRef &c) {
  if (c.id.empty())
    return "host";
  std::string out = c.name.empty() ? short_id(c.id) : escape_text(c.name);
  if (!c.pod.empty())
    out +=
        " in pod " + escape_text(c.pod_namespace.empty() ? c.pod : c.pod_namespace + "/" + c.pod);
  return out + " (" + escape_text(c.runtime) + ")";
}

void write_container(JsonWriter &w, const ContainerRef &c) {
  if (c.id.empty()) {
    w.null();
    return;
  }
  w.begin_object().str("id", c.id);
  w.key("name").str_or_null(c.name);
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod").str_or_null(c.pod);
  w.key("namespace").str_or_null(c.pod_namespace);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.end_object();
}

void write_segment(JsonWriter &w, const SegmentInfo &s, uint64_t now_ns) {
  w.begin_object();
  w.str("kind", to_string(s.kind)).str("path", s.path);
  if (s.kind == Kind::sysv) {
    w.null("dev").null("ino");
    w.num("shmid", static_cast<uint32_t>(s.key.ino_or_shmid));
    w.num("ipcns", s.key.dev_or_ipcns).num("sysv_key", s.sysv_key).num("nattch", s.nattch);
  } else {
    w.str("dev", dev_string(s.key.dev_or_ipcns)).num("ino", s.key.ino_or_shmid).null("shmid");
  }
  // A file's names (hard links): how many, and the others known.
  if (s.key.is_sysv())
    w.null("nlink");
  else
    w.num("nlink", s.nlink);
  w.key("other_paths").begin_array();
  for (const std::string &p : s.other_paths)
    w.str(p);
  w.end_array();
  w.num("size", s.size).num("bytes", s.bytes).str("state", to_string(s.state));
  w.key("mount").str_or_null(s.mountpoint);
  if (const auto age = segment_age_s(s, now_ns))
    w.num("age_s", *age);
  else
    w.null("age_s");
  w.boolean("existed_before", s.existed_before).boolean("orphan", s.orphan);
  w.boolean("restart_orphan", s.restart_orphan);
  w.key("creator");
  if (s.creator.known && s.creator.pid != 0) {
    w.begin_object().num("pid", s.creator.pid).str("comm", s.creator.comm);
    w.num("uid", s.creator.uid).boolean("exited", s.creator.exited).end_object();
  } else {
    w.null();
  }
  w.key("holders").begin_array();
  for (uint32_t pid : s.holders)
    w.num(pid);
  w.end_array();
  w.key("container");
  write_container(w, s.container);
  w.key("pattern");
  if (s.pattern == NamePattern::none)
    w.null();
  else
    w.str(to_string(s.pattern));
  w.key("inferred_pid");
  if (s.inferred_pid != 0)
    w.num(s.inferred_pid);
  else
    w.null();
  w.end_object();
}

void write_process(JsonWriter &w, const ProcessInfo &p) {
  w.begin_object();
  w.num("pid", p.pid).num("ppid", p.ppid).num("uid", p.uid).num("mntns", p.mntns);
  w.str("comm", p.comm).num("cgroup_id", p.cgroup_id);
  w.key("container");
  write_container(w, ContainerRef{p.container_id, p.runtime, p.pod_uid, p.container_name, p.pod,
                                  p.pod_namespace});
  w.num("segments_created", p.segments_created).num("bytes_created", p.bytes_created);
  w.num("segments_held", p.segments_held).num("bytes_held", p.bytes_held);
  w.num("sysv_attachments", p.sysv_attachments);
  w.num("creates", p.creates).num("unlinks", p.unlinks);
  w.real("create_rate", p.create_rate).real("unlink_rate", p.unlink_rate);
  w.num("sigbus", p.sigbus);
  w.end_object();
}

// Its memory cgroup: the shared memory charged to it, its usage and limit
// (null when not read, or no limit).
void write_container_memory(JsonWriter &w, const ContainerInfo &c) {
  if (!c.memory) {
    w.null("shmem_bytes").null("memory_usage_bytes").null("memory_limit_bytes");
    return;
  }
  w.num("shmem_bytes", c.memory->shmem).num("memory_usage_bytes", c.memory->usage);
  if (c.memory->limit.bytes)
    w.num("memory_limit_bytes", *c.memory->limit.bytes);
  else
    w.null("memory_limit_bytes");
}

void write_container_row(JsonWriter &w, const ContainerInfo &c) {
  w.begin_object();
  w.str("id", c.id).boolean("host", c.id.empty());
  w.key("cgroup").str_or_null(c.cgroup);
  w.key("name").str_or_null(c.name);
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod").str_or_null(c.pod);
  w.key("namespace").str_or_null(c.pod_namespace);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.num("processes", c.processes).num("segments", c.segments).num("bytes", c.bytes);
  w.num("creates", c.creates).num("unlinks", c.unlinks).real("create_rate", c.create_rate);
  write_container_memory(w, c);
  w.end_object();
}

void write_mount_limits(JsonWriter &w, const MountUsage &m) {
  w.num("peak_used_bytes", m.peak_used_bytes);
  if (m.memory_room)
    w.num("memory_room_bytes", *m.memory_room);
  else
    w.null("memory_room_bytes");
  if (m.seconds_to_memory_limit)
    w.real("seconds_to_memory_limit", *m.seconds_to_memory_limit);
  else
    w.null("seconds_to_memory_limit");
  w.boolean("oom_before_full", oom_before_full(m));
  if (const auto size = right_size(m))
    w.num("right_size_bytes", *size);
  else
    w.null("right_size_bytes");
}

void write_mount(JsonWriter &w, const MountUsage &m) {
  w.begin_object();
  w.str("mountpoint", m.mount.mountpoint).num("mntns", m.mount.mntns);
  w.num("mnt_id", m.mount.mnt_id).str("dev", dev_string(m.mount.dev));
  if (m.mount.size_limit == 0)
    w.null("size_bytes");
  else
    w.num("size_bytes", m.mount.size_limit);
  w.num("used_bytes", m.mount.used_bytes).num("tracked_bytes", m.tracked_bytes);
  w.num("segments", m.segments);
  if (m.percent)
    w.real("percent", *m.percent);
  else
    w.null("percent");
  w.real("growth_bytes_per_s", m.growth_bytes_per_s);
  if (m.seconds_to_full)
    w.real("seconds_to_full", *m.seconds_to_full);
  else
    w.null("seconds_to_full");
  w.num("enospc", m.enospc).num("sigbus", m.sigbus);
  write_mount_limits(w, m);
  w.end_object();
}

std::string segments_table(const std::vector<SegmentInfo> &segments, uint64_t now_ns) {
  const CellContext ctx{now_ns, nullptr, nullptr};
  return table_text(table_of(segment_columns(), segments, ctx, gap));
}

std::string processes_table(const std::vector<ProcessInfo> &processes, const UserNames &users) {
  const CellContext ctx{0, &users, nullptr};
  return table_text(table_of(process_columns(), processes, ctx, gap));
}

std::string containers_table(const std::vector<ContainerInfo> &containers,
                             const Relations &relations) {
  const CellContext ctx{0, nullptr, &relations};
  return table_text(table_of(container_columns_for(containers), containers, ctx, gap));
}

std::string mounts_table(const std::vector<MountUsage> &mounts, const Relations &relations) {
  const CellContext ctx{0, nullptr, &relations};
  return table_text(table_of(mount_columns(), mounts, ctx, gap));
}

std::string segments_json(const std::vector<SegmentInfo> &segments, uint64_t now_ns) {
  return document("segments", segments,
                  [&](JsonWriter &w, const SegmentInfo &s) { write_segment(w, s, now_ns); });
}

void segments_json(const SegmentSource &segments, uint64_t now_ns,
                   const std::function<void(std::string_view)> &sink) {
  document(
      "segments", segments,
      [&](JsonWriter &w, const SegmentInfo &s) { write_segment(w, s, now_ns); }, sink,
      std::size_t{1} << 20);
}

std::string processes_json(const std::vector<ProcessInfo> &processes) {
  return document("processes", processes, write_process);
}

std::string containers_json(const std::vector<ContainerInfo> &containers) {
  return document("containers", containers, write_container_row);
}

std::string mounts_json(const std::vector<MountUsage> &mounts) {
  return document("mounts", mounts, write_mount);
}

} // namespace shmbpf
