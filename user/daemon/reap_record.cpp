#include "daemon/reap_record.hpp"

#include "decode/event.hpp"
#include "model/types.hpp"
#include "sources/json_value.hpp"
#include "views/export_view.hpp"

#include <charconv>
#include <optional>

namespace shmbpf {

namespace {

using Type = JsonValue::Type;

template <class T> bool read_number(const JsonValue *v, T &out) {
  if (!v || v->type != Type::number)
    return false;
  const char *end = v->text.data() + v->text.size();
  auto [p, ec] = std::from_chars(v->text.data(), end, out);
  return ec == std::errc() && p == end;
}

// A string, or (nullable) null read as "".
bool read_text(const JsonValue *v, std::string &out, bool nullable = true) {
  if (v && nullable && v->type == Type::null) {
    out.clear();
    return true;
  }
  if (!v || v->type != Type::string)
    return false;
  out = v->text;
  return true;
}

// The value of E from first to last whose name is s.
template <class E> std::optional<E> read_name(std::string_view s, E first, E last) {
  for (auto i = static_cast<int>(first); i <= static_cast<int>(last); ++i)
    if (to_string(static_cast<E>(i)) == s)
      return static_cast<E>(i);
  return std::nullopt;
}

// "8:3": a device in the kernel's encoding.
bool read_dev(const JsonValue *v, uint32_t &dev) {
  std::string text;
  if (!read_text(v, text, false))
    return false;
  const size_t colon = text.find(':');
  uint32_t major = 0, minor = 0;
  if (colon == std::string::npos)
    return false;
  const char *b = text.data(), *m = b + colon, *e = b + text.size();
  auto [p1, ec1] = std::from_chars(b, m, major);
  auto [p2, ec2] = std::from_chars(m + 1, e, minor);
  if (ec1 != std::errc() || p1 != m || ec2 != std::errc() || p2 != e || major >= (1u << 12) ||
      minor >= (1u << 20))
    return false;
  dev = major << 20 | minor;
  return true;
}

bool same(const JsonValue &a, const JsonValue &b) {
  if (a.type != b.type || a.text != b.text || a.items.size() != b.items.size() ||
      a.members.size() != b.members.size())
    return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!same(a.items[i], b.items[i]))
      return false;
  for (size_t i = 0; i < a.members.size(); ++i)
    if (a.members[i].key != b.members[i].key || !same(a.members[i].value, b.members[i].value))
      return false;
  return true;
}

// Everything but the record's place: its members read into r.
bool read_members(const JsonValue &j, ReapRecord &r) {
  ReapOutcome &o = r.outcome;
  SegmentInfo &s = o.target.segment;
  std::string status, reason, kind;
  bool ok = read_number(j.get("ts_ns"), r.ts_ns) && read_text(j.get("status"), status, false) &&
            read_text(j.get("reason"), reason) && read_text(j.get("detail"), o.detail) &&
            read_text(j.get("kind"), kind, false);
  const auto st = read_name(status, ReapStatus::would_free, ReapStatus::gone);
  const auto why = read_name(reason, ReapSkip::none, ReapSkip::failed);
  const auto k = parse_kind(kind);
  if (!ok || !st || !why || !k || (*k != Kind::tmpfs && *k != Kind::sysv))
    return false;
  o.status = *st;
  o.reason = *why;
  s.kind = *k;
  if (*k == Kind::sysv) {
    uint32_t ipcns = 0;
    uint64_t shmid = 0;
    ok = read_number(j.get("ipcns"), ipcns) && read_number(j.get("shmid"), shmid);
    s.key = SegmentKey{Kind::sysv, ipcns, shmid};
  } else {
    uint32_t dev = 0;
    uint64_t ino = 0;
    ok = read_dev(j.get("dev"), dev) && read_number(j.get("ino"), ino);
    s.key = SegmentKey::file(dev, ino);
  }
  const JsonValue *holders = j.get("holders");
  ok = ok && holders && holders->type == Type::array;
  for (size_t i = 0; ok && i < holders->items.size(); ++i)
    ok = read_number(&holders->items[i], o.holders.emplace_back());
  const JsonValue *known = j.get("creator_known");
  ok = ok && known && known->type == Type::boolean;
  s.creator.known = ok && known->text == "true";
  ContainerRef &c = s.container;
  return ok && read_text(j.get("path"), s.path, false) &&
         read_text(j.get("mountpoint"), s.mountpoint) && read_number(j.get("bytes"), o.bytes) &&
         read_number(j.get("age_ns"), o.target.age_ns) &&
         read_number(j.get("creator_pid"), o.target.creator_pid) &&
         read_number(j.get("creator_uid"), s.creator.uid) &&
         read_text(j.get("creator_comm"), s.creator.comm) &&
         read_text(j.get("container_id"), c.id) &&
         read_text(j.get("container_runtime"), c.runtime) &&
         read_text(j.get("container_name"), c.name) && read_text(j.get("pod_uid"), c.pod_uid) &&
         read_text(j.get("pod"), c.pod) && read_text(j.get("namespace"), c.pod_namespace) &&
         read_text(j.get("by"), r.by, false) && read_number(j.get("by_pid"), r.by_pid);
}

} // namespace

Result<ReapRecord> read_reap_record(std::string_view line, ExportFormatter &fmt) {
  const auto doc = parse_json(line);
  if (!doc || doc->type != Type::object)
    return Error{"not a JSON object"};
  if (doc->str("event") != "reap")
    return Error{"not a reap record"};
  ReapRecord r;
  if (!read_members(*doc, r))
    return Error{"a member is missing, of the wrong type or out of range"};
  // Rendered again: the same members in the same order with the same
  // values, its time aside.
  std::string again;
  fmt.append_reap(again, r.ts_ns, r.outcome, r.by, r.by_pid);
  again.pop_back(); // '\n'
  const auto back = parse_json(again);
  bool equal = back && back->members.size() == doc->members.size();
  for (size_t i = 0; equal && i < doc->members.size(); ++i) {
    const JsonMember &a = doc->members[i], &b = back->members[i];
    equal = a.key == b.key && (a.key == "time" || same(a.value, b.value));
  }
  if (!equal)
    return Error{"not a record reap writes (its members, their order or their values)"};
  return r;
}

std::string reap_record_place_problem(const ReapRecord &r, const std::vector<MountUsage> &mounts) {
  const SegmentInfo &s = r.outcome.target.segment;
  if (s.kind == Kind::sysv) {
    const bool named = s.path.size() == 12 && s.path.starts_with("SYSV") &&
                       s.path.find_first_not_of("0123456789abcdef", 4) == std::string::npos;
    return named ? "" : "a System V segment's path is SYSV and its key in 8 hex digits";
  }
  const std::string &mp = s.mountpoint;
  const std::string below = mp == "/" ? mp : mp + "/";
  if (mp.empty() || !s.path.starts_with(below) || s.path.size() == below.size())
    return "its path is not below its mountpoint";
  for (size_t at = below.size(); at <= s.path.size();) {
    size_t slash = s.path.find('/', at);
    if (slash == std::string::npos)
      slash = s.path.size();
    const std::string_view part(s.path.data() + at, slash - at);
    if (part.empty() || part == "." || part == "..")
      return "its path has an empty, . or .. component";
    at = slash + 1;
  }
  for (const MountUsage &m : mounts)
    if (m.mount.dev == s.key.dev_or_ipcns && m.mount.mountpoint == mp)
      return "";
  return "its device and mountpoint are no tmpfs or hugetlbfs mount this daemon knows";
}

} // namespace shmbpf
