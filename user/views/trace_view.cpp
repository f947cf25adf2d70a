#include "views/trace_view.hpp"

#include "model/bus_errors.hpp"
#include "views/errno_name.hpp"
#include "views/escape.hpp"
#include "views/json.hpp"
#include "views/text_width.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <concepts>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string_view>

namespace shmbpf {
namespace {

constexpr int64_t ns_per_sec = 1'000'000'000;
constexpr int32_t at_fdcwd = -100;

// Column widths of trace_line(); the last fixed column is RESULT.
constexpr std::size_t w_time = 12; // HH:MM:SS.mmm
constexpr std::size_t w_pid = 7;
constexpr std::size_t w_comm = 16;
constexpr std::size_t w_event = 12; // "memfd_create"
constexpr std::size_t w_kind = 5;
constexpr std::size_t w_size = 11;
constexpr std::size_t w_result = 7;

// Wall-clock time of an event as whole seconds and nanoseconds (>= 0).
struct WallTime {
  time_t sec = 0;
  long nsec = 0;
};

WallTime wall_time(uint64_t ts_ns, const TraceClock &clock) {
  const int64_t ns = static_cast<int64_t>(ts_ns) + clock.boot_to_realtime_ns;
  int64_t sec = ns / ns_per_sec;
  int64_t rem = ns % ns_per_sec;
  if (rem < 0) {
    rem += ns_per_sec;
    --sec;
  }
  return {static_cast<time_t>(sec), static_cast<long>(rem)};
}

template <std::integral T> void append_base(std::string &out, T v, int base) {
  char buf[32];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v, base).ptr);
}

template <std::integral T> void append_dec(std::string &out, T v) { append_base(out, v, 10); }

template <std::integral T> void append_hex(std::string &out, T v) {
  out += "0x";
  append_base(out, v, 16);
}

// "maj:min", as dev_string(), composed on the stack: for a line's details
// and a JSON string alike.
struct DevText {
  explicit DevText(uint32_t kdev) {
    char *p = write_decimal(buf, uint64_t{dev_major(kdev)});
    *p++ = ':';
    len = static_cast<std::size_t>(write_decimal(p, uint64_t{dev_minor(kdev)}) - buf);
  }
  std::string_view text() const { return {buf, len}; }
  char buf[24];
  std::size_t len;
};

// Events with a file's fields: a write without space has them too.
bool is_file_event(const Event &e) {
  const EventType t = e.type;
  return t == EventType::create || t == EventType::open || t == EventType::memfd_create ||
         t == EventType::resize || (t == EventType::nospace && !is_create_nospace(e));
}

// A resize, or a write that found no space: a size asked for.
bool asks_size(EventType t) { return t == EventType::resize || t == EventType::nospace; }

bool is_sysv_event(EventType t) {
  return t == EventType::shmget || t == EventType::shmat || t == EventType::shmdt ||
         t == EventType::shm_rmid;
}

// A rename's or a link's second path.
bool has_newpath(EventType t) { return t == EventType::rename || t == EventType::link; }

// The new name of a rename or link: resolved, else as passed.
std::string_view new_path(const Event &e) {
  return e.full_newpath.empty() ? std::string_view(e.newpath) : e.full_newpath;
}

// The best name we have for the object: resolved path, in-mount name, or
// the argument as passed.
std::string_view best_path(const Event &e) {
  if (!e.full_path.empty())
    return e.full_path;
  if (!e.name.empty())
    return e.name;
  return e.path;
}

// Decoded wait status (exit_code is code << 8 | signal, as from wait(2)).
struct WaitStatus {
  uint32_t exit_status = 0;
  uint32_t signal = 0;
  bool core = false;
};

WaitStatus wait_status(uint32_t code) {
  return {(code >> 8) & 0xff, code & 0x7f, (code & 0x80) != 0};
}

// Ends the column that starts at out[from]: pads it to width, then one space.
void end_column(std::string &out, std::size_t from, std::size_t width) {
  const std::size_t n = terminal_width(std::string_view(out).substr(from));
  if (n < width)
    out.append(width - n, ' ');
  out += ' ';
}

void column(std::string &out, std::string_view text, std::size_t width) {
  const std::size_t from = out.size();
  out += text;
  end_column(out, from, width);
}

// Space-separated "key=value" words for the DETAILS column, written
// straight into the line.
class Details {
public:
  explicit Details(std::string &out) : out_(out), start_(out.size()) {}
  std::string &word() {
    if (out_.size() != start_)
      out_ += ' ';
    return out_;
  }
  void word(std::string_view w) { word() += w; }
  // "k=" after a separator; the caller appends the value.
  std::string &key(std::string_view k) {
    word() += k;
    out_ += '=';
    return out_;
  }
  void text(std::string_view k, std::string_view v) { append_escaped_text(key(k), v); }
  template <std::integral T> void dec(std::string_view k, T v) { append_dec(key(k), v); }
  template <std::integral T> void hex(std::string_view k, T v) { append_hex(key(k), v); }

private:
  std::string &out_;
  std::size_t start_;
};

void size_column(std::string &out, const Event &e) {
  const std::size_t from = out.size();
  if (e.err != 0)
    out += '-';
  else if (is_file_event(e))
    append_dec(out, e.size);
  else if (e.type == EventType::shmget)
    append_dec(out, e.arg_size);
  else if (e.type == EventType::free)
    append_dec(out, e.bytes);
  else
    out += '-';
  end_column(out, from, w_size);
}

void path_column(std::string &out, const Event &e) {
  if ((e.type == EventType::sigbus && e.fault != FaultLookup::file) || e.type == EventType::exit ||
      e.type == EventType::exec || e.type == EventType::oom)
    out += '-';
  else if (!e.full_path.empty())
    append_escaped_text(out, e.full_path);
  else if (!e.name.empty())
    append_escaped_text(out, e.name);
  else if (!e.path.empty()) {
    if (e.type == EventType::memfd_create)
      out += "memfd:";
    append_escaped_text(out, e.path);
  } else if (e.type == EventType::shmget) {
    out += "key=";
    append_hex(out, e.key);
  } else if (is_sysv_event(e.type) && e.shmid >= 0) {
    // Only shmget names the key; the others name the segment by shmid.
    out += "shmid=";
    append_dec(out, e.shmid);
  } else
    out += '-';
}

void inode_details(Details &d, const Event &e) {
  if (e.ino == 0)
    return;
  d.key("dev") += DevText(e.dev).text();
  d.dec("ino", e.ino);
}

// The victim, then its memory cgroup (as read when the record came) and
// what the kernel said of the victim's own memory.
void oom_details(Details &d, const Event &e) {
  std::string &out = d.key("victim");
  append_dec(out, e.target_pid);
  if (!e.target_comm.empty()) {
    out += '(';
    append_escaped_text(out, e.target_comm);
    out += ')';
  }
  if (e.memcg) {
    d.dec("cgroup_shmem", e.memcg->shmem);
    d.dec("cgroup_usage", e.memcg->usage);
    if (e.memcg->limit.bytes)
      d.dec("cgroup_limit", *e.memcg->limit.bytes);
    else
      d.word("cgroup_limit=max");
  }
  if (e.victim_mem) {
    d.dec("anon_rss", e.victim_anon_rss);
    d.dec("file_rss", e.victim_file_rss);
    d.dec("shmem_rss", e.victim_shmem_rss);
  }
  if (e.oom_score_adj)
    d.dec("oom_score_adj", *e.oom_score_adj);
}

void details_column(Details &d, const Event &e) {
  if (is_file_event(e)) {
    inode_details(d, e);
    if (e.fd >= 0)
      d.dec("fd", e.fd);
    if (!asks_size(e.type) || e.flags != 0)
      d.hex("flags", e.flags);
    if (!asks_size(e.type) && e.mode != 0) {
      std::string &out = d.key("mode");
      out += '0';
      append_base(out, e.mode, 8);
    }
    if (e.is_new)
      d.word("new");
    if (asks_size(e.type)) {
      d.dec("arg_size", e.arg_size);
      d.dec("bytes", e.bytes);
      d.text("origin", to_string(e.origin));
    }
  } else if (is_by_path(e)) {
    if (has_newpath(e.type)) {
      d.word("->");
      if (new_path(e).empty())
        d.word("-");
      else
        append_escaped_text(d.word(), new_path(e));
    }
    inode_details(d, e);
    if (e.type == EventType::nospace)
      d.text("origin", to_string(e.origin));
    // An unresolved relative path means nothing without its directory.
    if (e.full_path.empty() && e.dirfd != at_fdcwd)
      d.dec("dirfd", e.dirfd);
  } else if (is_sysv_event(e.type)) {
    if (e.shmid >= 0)
      d.dec("shmid", e.shmid);
    if (e.type == EventType::shmget)
      d.hex("key", e.key);
    if (e.type == EventType::shmget) {
      if (e.created == 1)
        d.word("created");
      else if (e.created == 0)
        d.word("existing");
      d.hex("shmflg", e.flags);
    } else if (e.type == EventType::shmat) {
      d.hex("addr", e.addr);
      d.hex("shmflg", e.flags);
    } else if (e.type == EventType::shmdt) {
      d.hex("addr", e.addr);
    }
  } else if (e.type == EventType::free) {
    inode_details(d, e);
    d.dec("bytes", e.bytes);
    d.dec("folios", e.folios);
    if (e.unlinked)
      d.word("unlinked");
  } else if (e.type == EventType::sigbus) {
    std::string &out = d.key("target");
    append_dec(out, e.target_pid);
    out += '(';
    append_escaped_text(out, e.target_comm);
    out += ')';
    d.dec("code", e.si_code);
    if (e.fault == FaultLookup::not_a_fault)
      return;
    if (e.target_ns_pid != 0 && e.target_ns_pid != e.pid)
      d.dec("ns_pid", e.target_ns_pid);
    if (e.addr != 0)
      d.hex("addr", e.addr);
    if (e.fault != FaultLookup::file) {
      d.text("mapping", to_string(e.fault));
      return;
    }
    inode_details(d, e);
    d.dec("offset", e.offset);
    d.dec("size", e.size);
    if (e.mount_size != 0) {
      std::string &m = d.key("mount");
      append_dec(m, e.mount_used);
      m += '/';
      append_dec(m, e.mount_size);
    }
    d.text("cause", to_string(bus_cause(e)));
  } else if (e.type == EventType::oom) {
    oom_details(d, e);
  } else if (e.type == EventType::exit) {
    const WaitStatus w = wait_status(e.exit_code);
    if (w.signal != 0) {
      d.dec("sig", w.signal);
      if (w.core)
        d.word("core");
    } else {
      d.dec("exit", w.exit_status);
    }
  } else if (e.type == EventType::exec) {
    if (e.filename.empty())
      d.word("-");
    else
      append_escaped_text(d.word(), e.filename);
    // Exec from a non-leader thread changes the pid.
    if (e.old_pid != 0 && e.old_pid != e.pid)
      d.dec("old_pid", e.old_pid);
  }
  if (e.truncated)
    d.word("truncated");
}

// v in decimal, zero-padded on the left to `digits` (v < 10^digits).
char *write_fixed(char *p, uint64_t v, int digits) {
  for (int i = digits - 1; i >= 0; --i, v /= 10)
    p[i] = static_cast<char>('0' + v % 10);
  return p + digits;
}

} // namespace

std::string trace_header() {
  std::string out;
  column(out, "TIME", w_time);
  column(out, "PID", w_pid);
  column(out, "COMM", w_comm);
  column(out, "EVENT", w_event);
  column(out, "KIND", w_kind);
  column(out, "SIZE", w_size);
  column(out, "RESULT", w_result);
  out += "PATH/NAME  DETAILS";
  return out;
}

void TraceFormatter::append_local_time(std::string &out, int64_t sec, long nsec) {
  // localtime_r is the expensive part (time zone rules): once per second.
  if (!local_.valid || local_.sec != sec) {
    const time_t t_sec = static_cast<time_t>(sec);
    tm t{};
    localtime_r(&t_sec, &t);
    char *p = write_fixed(local_.text, static_cast<uint64_t>(t.tm_hour), 2);
    *p++ = ':';
    p = write_fixed(p, static_cast<uint64_t>(t.tm_min), 2);
    *p++ = ':';
    p = write_fixed(p, static_cast<uint64_t>(t.tm_sec), 2);
    *p++ = '.';
    local_.len = static_cast<std::size_t>(p - local_.text);
    local_.sec = sec;
    local_.valid = true;
  }
  char ms[3];
  out.append(local_.text, local_.len);
  out.append(ms, write_fixed(ms, static_cast<uint64_t>(nsec / 1'000'000), 3));
}

char *TraceFormatter::write_utc_time(char *p, int64_t sec, long nsec) {
  if (!utc_.valid || utc_.sec != sec) {
    const time_t t_sec = static_cast<time_t>(sec);
    tm t{};
    gmtime_r(&t_sec, &t);
    char buf[80];
    const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.", t.tm_year + 1900,
                                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
    utc_.len = std::min(n > 0 ? static_cast<std::size_t>(n) : 0, sizeof utc_.text);
    std::copy_n(buf, utc_.len, utc_.text);
    utc_.sec = sec;
    utc_.valid = true;
  }
  p = std::copy_n(utc_.text, utc_.len, p);
  p = write_fixed(p, static_cast<uint64_t>(nsec), 9);
  *p++ = 'Z';
  return p;
}

void TraceFormatter::append_line(std::string &out, const Event &e) {
  std::size_t from = out.size();
  const WallTime w = wall_time(e.ts_ns, clock_);
  append_local_time(out, w.sec, w.nsec);
  end_column(out, from, w_time);

  from = out.size();
  append_dec(out, e.pid);
  end_column(out, from, w_pid);

  from = out.size();
  if (e.comm.empty())
    out += '-';
  else
    append_escaped_text(out, e.comm);
  end_column(out, from, w_comm);

  column(out, to_string(e.type), w_event);
  column(out, e.kind == Kind::none ? std::string_view("-") : to_string(e.kind), w_kind);
  size_column(out, e);

  from = out.size();
  if (e.err == 0)
    out += "ok";
  else if (const char *name = errno_literal(e.err))
    out += name;
  else
    append_dec(out, e.err);
  end_column(out, from, w_result);

  path_column(out, e);
  const std::size_t mark = out.size();
  out += "  ";
  Details d(out);
  details_column(d, e);
  if (out.size() == mark + 2)
    out.resize(mark); // no details
}

void TraceFormatter::append_json(std::string &out, const Event &e) {
  JsonWriter j(out, /*compact=*/true);
  j.begin_object();
  write_json_fields(j, e);
  j.end_object();
}

void TraceFormatter::write_time_fields(JsonWriter &j, uint64_t ts_ns) {
  j.num("ts_ns", ts_ns);
  const WallTime w = wall_time(ts_ns, clock_);
  char text[sizeof utc_.text + 16];
  const char *end = write_utc_time(text, w.sec, w.nsec);
  j.str("time", std::string_view(text, static_cast<std::size_t>(end - text)));
}

void TraceFormatter::write_json_fields(JsonWriter &j, const Event &e) {
  j.str("event", to_string(e.type));
  if (e.kind == Kind::none)
    j.null("kind");
  else
    j.str("kind", to_string(e.kind));
  write_time_fields(j, e.ts_ns);
  j.num("pid", e.pid)
      .num("tid", e.tid)
      .num("ppid", e.ppid)
      .num("uid", e.uid)
      .str("comm", e.comm)
      .num("cgroup_id", e.cgroup_id)
      .num("mntns", e.mntns)
      .num("ipcns", e.ipcns)
      .num("errno", e.err)
      .num("ret", e.ret);

  if (is_file_event(e)) {
    j.str("dev", DevText(e.dev).text());
    j.num("ino", e.ino).num("size", e.size).num("bytes", e.bytes).str("path", best_path(e));
    if (!asks_size(e.type))
      j.str("path_arg", e.path);
    j.str("name", e.name).num("flags", e.flags).num("mode", e.mode).num("fd", e.fd);
    if (e.type == EventType::create)
      j.boolean("new", e.is_new).boolean("path_from_call", e.by_path);
    if (e.type == EventType::resize)
      j.boolean("path_from_model", e.path_from_model);
    if (asks_size(e.type))
      j.num("arg_size", e.arg_size);
    j.str("origin", to_string(e.origin)).boolean("truncated", e.truncated);
  } else if (e.type == EventType::free) {
    j.str("dev", DevText(e.dev).text());
    j.num("ino", e.ino)
        .str("path", best_path(e))
        .str("name", e.name)
        .num("bytes", e.bytes)
        .num("folios", e.folios)
        .num("nlink", e.nlink)
        .boolean("unlinked", e.unlinked);
  } else if (is_by_path(e)) {
    j.str("path", e.full_path.empty() ? std::string_view(e.path) : e.full_path)
        .str("path_arg", e.path)
        .num("dirfd", e.dirfd);
    if (has_newpath(e.type))
      j.str("newpath", new_path(e)).str("newpath_arg", e.newpath).num("newdirfd", e.newdirfd);
    if (e.ino != 0 || (e.type == EventType::nospace && e.dev != 0))
      j.str("dev", DevText(e.dev).text());
    if (e.ino != 0)
      j.num("ino", e.ino);
    j.num("flags", e.flags).str("origin", to_string(e.origin)).boolean("truncated", e.truncated);
  } else if (is_sysv_event(e.type)) {
    j.num("shmid", e.shmid);
    // Only shmget's caller names the key: null, not a made-up 0, elsewhere.
    if (e.type == EventType::shmget)
      j.num("key", e.key);
    else
      j.null("key");
    j.num("size", e.type == EventType::shmget ? e.arg_size : e.size)
        .num("addr", e.addr)
        .num("shmflg", e.flags);
    if (e.created == 1 || e.created == 0)
      j.boolean("created", e.created == 1);
    else
      j.null("created");
  } else if (e.type == EventType::sigbus) {
    j.num("target_pid", e.target_pid).str("target_comm", e.target_comm).num("si_code", e.si_code);
    // The fault: what the kernel found at its address (docs/EVENTS.md).
    j.str("fault", to_string(e.fault));
    if (e.fault == FaultLookup::not_a_fault)
      return;
    if (e.target_ns_pid != 0)
      j.num("ns_pid", e.target_ns_pid);
    else
      j.null("ns_pid");
    j.num("addr", e.addr);
    if (e.fault != FaultLookup::file)
      return;
    j.str("dev", DevText(e.dev).text());
    j.num("ino", e.ino)
        .str("path", best_path(e))
        .str("name", e.name)
        .num("mnt_id", e.mnt_id)
        .num("offset", e.offset)
        .num("size", e.size)
        .num("bytes", e.bytes)
        .boolean("beyond_eof", e.beyond_eof)
        .boolean("unlinked", e.unlinked);
    if (e.kind == Kind::sysv)
      j.num("shmid", e.shmid);
    if (e.mount_size != 0)
      j.num("mount_size", e.mount_size).num("mount_used", e.mount_used);
    else
      j.null("mount_size").null("mount_used");
    j.str("cause", to_string(bus_cause(e)));
  } else if (e.type == EventType::oom) {
    write_oom_fields(j, e);
  } else if (e.type == EventType::exit) {
    const WaitStatus w = wait_status(e.exit_code);
    j.num("exit_code", e.exit_code).num("exit_status", w.exit_status).num("signal", w.signal);
  } else if (e.type == EventType::exec) {
    j.str("filename", e.filename).num("old_pid", e.old_pid);
    // The program it loaded: on tmpfs or hugetlbfs, or a memfd ("memfd:...").
    j.key("exe").begin_object();
    j.str("dev", DevText(e.dev).text());
    j.num("ino", e.ino).str("name", e.name).boolean("on_shm", e.fs != 0).end_object();
  }
}

void TraceFormatter::write_oom_fields(JsonWriter &j, const Event &e) {
  j.num("victim_pid", e.target_pid);
  if (e.victim_mem) {
    j.str("victim_comm", e.target_comm)
        .num("victim_uid", e.target_uid)
        .num("victim_total_vm", e.victim_total_vm)
        .num("victim_anon_rss", e.victim_anon_rss)
        .num("victim_file_rss", e.victim_file_rss)
        .num("victim_shmem_rss", e.victim_shmem_rss);
  } else {
    for (std::string_view k : {"victim_comm", "victim_uid", "victim_total_vm", "victim_anon_rss",
                               "victim_file_rss", "victim_shmem_rss"})
      j.null(k);
  }
  if (e.oom_score_adj)
    j.num("oom_score_adj", *e.oom_score_adj);
  else
    j.null("oom_score_adj");
  if (!e.memcg) {
    j.null("cgroup_memory");
    return;
  }
  j.key("cgroup_memory").begin_object();
  j.num("shmem", e.memcg->shmem).num("usage", e.memcg->usage);
  if (e.memcg->limit.bytes)
    j.num("limit", *e.memcg->limit.bytes);
  else
    j.null("limit");
  j.end_object();
}

std::string trace_line(const Event &e, const TraceClock &clock) {
  std::string out;
  out.reserve(160);
  TraceFormatter(clock).append_line(out, e);
  return out;
}

std::string trace_json(const Event &e, const TraceClock &clock) {
  std::string out;
  TraceFormatter(clock).append_json(out, e);
  return out;
}

} // namespace shmbpf
