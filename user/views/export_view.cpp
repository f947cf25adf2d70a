#include "views/export_view.hpp"

#include "facts/dev.hpp"
#include "model/leaks.hpp"
#include "views/json.hpp"

#include <algorithm>
#include <unordered_set>

namespace shmbpf {

namespace {

// The same keys in every record that has a container, whatever is known:
// names the runtime's files did not give are null.
void container_fields(JsonWriter &j, const ContainerRef *c) {
  if (c == nullptr || c->id.empty()) {
    j.null("container_id").null("container_runtime").null("container_name");
    j.null("pod_uid").null("pod").null("namespace");
    return;
  }
  j.str("container_id", c->id);
  j.key("container_runtime").str_or_null(c->runtime);
  j.key("container_name").str_or_null(c->name);
  j.key("pod_uid").str_or_null(c->pod_uid);
  j.key("pod").str_or_null(c->pod);
  j.key("namespace").str_or_null(c->pod_namespace);
}

// Kind, identity, path and place of a segment.
void segment_fields(JsonWriter &j, const SegmentInfo &s) {
  j.str("kind", to_string(s.kind));
  if (s.key.is_sysv()) {
    j.num("ipcns", s.key.dev_or_ipcns).num("shmid", s.key.ino_or_shmid);
  } else {
    j.str("dev", dev_string(s.key.dev_or_ipcns)).num("ino", s.key.ino_or_shmid);
  }
  j.str("path", s.path);
  j.key("mountpoint").str_or_null(s.mountpoint);
}

} // namespace

void ExportFormatter::append_event(std::string &out, const Event &e,
                                   std::optional<const ContainerRef *> container,
                                   const OomKill *kill) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object();
  trace_.write_json_fields(j, e);
  j.boolean("container_known", container.has_value());
  container_fields(j, container.value_or(nullptr));
  if (kill) {
    // What the model made of it: the victim's container (the header's is
    // the charging task's) and the largest files charged to its cgroup.
    j.key("victim").begin_object();
    j.key("comm").str_or_null(kill->comm);
    container_fields(j, &kill->container);
    j.end_object();
    j.key("largest_files").begin_array();
    for (const OomFile &f : kill->largest)
      j.begin_object().str("path", f.path).num("bytes", f.bytes).num("size", f.size).end_object();
    j.end_array();
  }
  j.end_object();
  out += '\n';
}

void ExportFormatter::append_lost(std::string &out, uint64_t ts_ns, uint64_t count,
                                  uint64_t total) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object().str("event", "lost");
  trace_.write_time_fields(j, ts_ns);
  j.num("count", count).num("total", total).end_object();
  out += '\n';
}

void ExportFormatter::append_dropped(std::string &out, uint64_t ts_ns, uint64_t count) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object().str("event", "export_dropped");
  trace_.write_time_fields(j, ts_ns);
  j.num("count", count).end_object();
  out += '\n';
}

void ExportFormatter::append_orphan(std::string &out, uint64_t ts_ns, const SegmentInfo &s) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object().str("event", "orphan");
  trace_.write_time_fields(j, ts_ns);
  segment_fields(j, s);
  j.str("state", to_string(s.state)).num("size", s.size).num("bytes", s.bytes);
  if (s.age_ns)
    j.num("age_ns", *s.age_ns);
  else
    j.null("age_ns");
  j.boolean("creator_known", s.creator.known).boolean("restart_orphan", s.restart_orphan);
  j.num("creator_pid", s.creator.pid).num("creator_uid", s.creator.uid);
  j.key("creator_comm").str_or_null(s.creator.comm);
  container_fields(j, &s.container);
  j.end_object();
  out += '\n';
}

void ExportFormatter::append_orphan_gone(std::string &out, uint64_t ts_ns, const SegmentInfo &s,
                                         bool exists) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object().str("event", "orphan_gone");
  trace_.write_time_fields(j, ts_ns);
  segment_fields(j, s);
  j.num("bytes", s.bytes).boolean("exists", exists);
  container_fields(j, &s.container);
  j.end_object();
  out += '\n';
}

void ExportFormatter::append_reap(std::string &out, uint64_t ts_ns, const ReapOutcome &o,
                                  std::string_view by, uint32_t by_pid) {
  const SegmentInfo &s = o.target.segment;
  JsonWriter j(out, /*compact=*/true);
  j.begin_object().str("event", "reap");
  trace_.write_time_fields(j, ts_ns);
  j.str("status", to_string(o.status));
  if (o.reason == ReapSkip::none)
    j.null("reason").null("detail");
  else
    j.str("reason", to_string(o.reason)).str("detail", o.detail);
  segment_fields(j, s);
  j.num("bytes", o.bytes).num("age_ns", o.target.age_ns);
  j.key("holders").begin_array();
  for (uint32_t pid : o.holders)
    j.num(pid);
  j.end_array();
  j.boolean("creator_known", s.creator.known);
  j.num("creator_pid", o.target.creator_pid).num("creator_uid", s.creator.uid);
  j.key("creator_comm").str_or_null(s.creator.comm);
  container_fields(j, &s.container);
  j.str("by", by).num("by_pid", by_pid);
  j.end_object();
  out += '\n';
}

OrphanWatch::Changes OrphanWatch::update(const std::vector<Orphan> &orphans) {
  Changes c;
  std::unordered_set<SegmentKey, SegmentKeyHash> now;
  for (const Orphan &o : orphans) {
    now.insert(o.segment.key);
    auto [it, fresh] = seen_.try_emplace(o.segment.key, o.segment);
    if (fresh)
      c.appeared.push_back(o.segment);
    else
      it->second = o.segment; // what orphan_gone will say
  }
  for (auto it = seen_.begin(); it != seen_.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    c.gone.push_back(std::move(it->second));
    it = seen_.erase(it);
  }
  std::sort(c.gone.begin(), c.gone.end(),
            [](const SegmentInfo &a, const SegmentInfo &b) { return a.key < b.key; });
  return c;
}

} // namespace shmbpf
