#include "views/trace_view.hpp"

#include "views/escape.hpp"
#include "views/json.hpp"

#include <cerrno>
#include <charconv>
#include <concepts>
#include <cstdio>
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

int64_t timespec_ns(const timespec &ts) {
  return static_cast<int64_t>(ts.tv_sec) * ns_per_sec + ts.tv_nsec;
}

// Wall-clock time of an event as whole seconds and nanoseconds (>= 0).
struct WallTime {
  time_t sec = 0;
  long nsec = 0;
};

WallTime wall_time(const Event &e, const TraceClock &clock) {
  const int64_t ns = static_cast<int64_t>(e.ts_ns) + clock.boot_to_realtime_ns;
  int64_t sec = ns / ns_per_sec;
  int64_t rem = ns % ns_per_sec;
  if (rem < 0) {
    rem += ns_per_sec;
    --sec;
  }
  return {static_cast<time_t>(sec), static_cast<long>(rem)};
}

std::string local_hms_ms(const Event &e, const TraceClock &clock) {
  const WallTime w = wall_time(e, clock);
  tm t{};
  localtime_r(&w.sec, &t);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03ld", t.tm_hour, t.tm_min, t.tm_sec,
                w.nsec / 1'000'000);
  return buf;
}

std::string rfc3339_utc(const Event &e, const TraceClock &clock) {
  const WallTime w = wall_time(e, clock);
  tm t{};
  gmtime_r(&w.sec, &t);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, w.nsec);
  return buf;
}

template <std::integral T> std::string in_base(T v, int base, std::string_view prefix) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, base);
  std::string out(prefix);
  out.append(buf, res.ptr);
  return out;
}

template <std::integral T> std::string hex(T v) { return in_base(v, 16, "0x"); }
template <std::integral T> std::string dec(T v) { return in_base(v, 10, ""); }

bool is_file_event(EventType t) {
  return t == EventType::create || t == EventType::open || t == EventType::memfd_create ||
         t == EventType::resize;
}

bool is_sysv_event(EventType t) {
  return t == EventType::shmget || t == EventType::shmat || t == EventType::shmdt ||
         t == EventType::shm_rmid;
}

bool is_path_event(EventType t) { return t == EventType::unlink || t == EventType::rename; }

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

// Display width of escaped text, which is valid UTF-8: one column per code point.
std::size_t text_width(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

void column(std::string &out, std::string_view text, std::size_t width) {
  out += text;
  for (std::size_t n = text_width(text); n < width; ++n)
    out += ' ';
  out += ' ';
}

// Space-separated "key=value" words for the DETAILS column.
class Details {
public:
  void word(std::string_view w) {
    if (!out_.empty())
      out_ += ' ';
    out_ += w;
  }
  void kv(std::string_view k, std::string_view v) {
    word(k);
    out_ += '=';
    out_ += v;
  }
  const std::string &str() const { return out_; }

private:
  std::string out_;
};

std::string size_column(const Event &e) {
  if (e.err != 0)
    return "-";
  if (is_file_event(e.type))
    return dec(e.size);
  if (e.type == EventType::shmget)
    return dec(e.arg_size);
  if (e.type == EventType::free)
    return dec(e.bytes);
  return "-";
}

std::string path_column(const Event &e) {
  if (e.type == EventType::sigbus || e.type == EventType::exit || e.type == EventType::exec)
    return "-";
  if (!e.full_path.empty())
    return escape_text(e.full_path);
  if (!e.name.empty())
    return escape_text(e.name);
  if (!e.path.empty()) {
    if (e.type == EventType::memfd_create)
      return "memfd:" + escape_text(e.path);
    return escape_text(e.path);
  }
  if (is_sysv_event(e.type))
    return "key=" + hex(e.key);
  return "-";
}

void inode_details(Details &d, const Event &e) {
  if (e.ino == 0)
    return;
  d.kv("dev", escape_text(dev_string(e.dev)));
  d.kv("ino", dec(e.ino));
}

std::string details_column(const Event &e) {
  Details d;
  if (is_file_event(e.type)) {
    inode_details(d, e);
    if (e.fd >= 0)
      d.kv("fd", dec(e.fd));
    if (e.type != EventType::resize || e.flags != 0)
      d.kv("flags", hex(e.flags));
    if (e.type != EventType::resize && e.mode != 0)
      d.kv("mode", in_base(e.mode, 8, "0"));
    if (e.is_new)
      d.word("new");
    if (e.type == EventType::resize) {
      d.kv("arg_size", dec(e.arg_size));
      d.kv("bytes", dec(e.bytes));
      d.kv("origin", escape_text(to_string(e.origin)));
    }
  } else if (is_path_event(e.type)) {
    if (e.type == EventType::rename) {
      d.word("->");
      d.word(e.newpath.empty() ? std::string("-") : escape_text(e.newpath));
    }
    inode_details(d, e);
    // An unresolved relative path means nothing without its directory.
    if (e.full_path.empty() && e.dirfd != at_fdcwd)
      d.kv("dirfd", dec(e.dirfd));
  } else if (is_sysv_event(e.type)) {
    if (e.shmid >= 0)
      d.kv("shmid", dec(e.shmid));
    d.kv("key", hex(e.key));
    if (e.type == EventType::shmget) {
      if (e.created == 1)
        d.word("created");
      else if (e.created == 0)
        d.word("existing");
      d.kv("shmflg", hex(e.flags));
    } else if (e.type == EventType::shmat) {
      d.kv("addr", hex(e.addr));
      d.kv("shmflg", hex(e.flags));
    } else if (e.type == EventType::shmdt) {
      d.kv("addr", hex(e.addr));
    }
  } else if (e.type == EventType::free) {
    inode_details(d, e);
    d.kv("bytes", dec(e.bytes));
    d.kv("folios", dec(e.folios));
    if (e.unlinked)
      d.word("unlinked");
  } else if (e.type == EventType::sigbus) {
    d.kv("target", dec(e.target_pid) + "(" + escape_text(e.target_comm) + ")");
    d.kv("code", dec(e.si_code));
  } else if (e.type == EventType::exit) {
    const WaitStatus w = wait_status(e.exit_code);
    if (w.signal != 0) {
      d.kv("sig", dec(w.signal));
      if (w.core)
        d.word("core");
    } else {
      d.kv("exit", dec(w.exit_status));
    }
  } else if (e.type == EventType::exec) {
    d.word(e.filename.empty() ? std::string("-") : escape_text(e.filename));
    // Exec from a non-leader thread changes the pid.
    if (e.old_pid != 0 && e.old_pid != e.pid)
      d.kv("old_pid", dec(e.old_pid));
  }
  if (e.truncated)
    d.word("truncated");
  return d.str();
}

// One compact JSON object per event. String values are escape_text()ed
// first, so no decoded value carries control characters, bidi controls or
// raw bytes, and the JSON shows names exactly as the text lines do.
class EventJson {
public:
  EventJson() : w_(out_, /*compact=*/true) { w_.begin_object(); }

  EventJson &str(std::string_view k, std::string_view v) {
    w_.str(k, escape_text(v));
    return *this;
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) EventJson &num(std::string_view k, T v) {
    w_.num(k, v);
    return *this;
  }
  EventJson &boolean(std::string_view k, bool v) {
    w_.boolean(k, v);
    return *this;
  }
  EventJson &null(std::string_view k) {
    w_.null(k);
    return *this;
  }
  std::string finish() {
    w_.end_object();
    return std::move(out_);
  }

private:
  std::string out_;
  JsonWriter w_;
};

} // namespace

TraceClock TraceClock::now() {
  // Bracket the realtime read between two boottime reads and use their
  // midpoint, which halves the error from being preempted in between.
  timespec b1{}, r{}, b2{};
  clock_gettime(CLOCK_BOOTTIME, &b1);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_BOOTTIME, &b2);
  const int64_t boot = timespec_ns(b1) + (timespec_ns(b2) - timespec_ns(b1)) / 2;
  return {timespec_ns(r) - boot};
}

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

std::string trace_line(const Event &e, const TraceClock &clock) {
  std::string out;
  out.reserve(160);
  column(out, local_hms_ms(e, clock), w_time);
  column(out, dec(e.pid), w_pid);
  column(out, e.comm.empty() ? std::string("-") : escape_text(e.comm), w_comm);
  column(out, escape_text(to_string(e.type)), w_event);
  column(out, e.kind == Kind::none ? std::string("-") : escape_text(to_string(e.kind)), w_kind);
  column(out, size_column(e), w_size);
  column(out, e.err != 0 ? errno_name(e.err) : std::string("ok"), w_result);
  out += path_column(e);
  const std::string details = details_column(e);
  if (!details.empty()) {
    out += "  ";
    out += details;
  }
  return out;
}

std::string trace_json(const Event &e, const TraceClock &clock) {
  EventJson j;
  j.str("event", to_string(e.type));
  if (e.kind == Kind::none)
    j.null("kind");
  else
    j.str("kind", to_string(e.kind));
  j.num("ts_ns", e.ts_ns)
      .str("time", rfc3339_utc(e, clock))
      .num("pid", e.pid)
      .num("tid", e.tid)
      .num("ppid", e.ppid)
      .num("uid", e.uid)
      .str("comm", e.comm)
      .num("cgroup_id", e.cgroup_id)
      .num("mntns", e.mntns)
      .num("ipcns", e.ipcns)
      .num("errno", e.err)
      .num("ret", e.ret);

  if (is_file_event(e.type)) {
    j.str("dev", dev_string(e.dev))
        .num("ino", e.ino)
        .num("size", e.size)
        .num("bytes", e.bytes)
        .str("path", best_path(e));
    if (e.type != EventType::resize)
      j.str("path_arg", e.path);
    j.str("name", e.name).num("flags", e.flags).num("mode", e.mode).num("fd", e.fd);
    if (e.type == EventType::create)
      j.boolean("new", e.is_new);
    if (e.type == EventType::resize)
      j.num("arg_size", e.arg_size);
    j.str("origin", to_string(e.origin)).boolean("truncated", e.truncated);
  } else if (e.type == EventType::free) {
    j.str("dev", dev_string(e.dev))
        .num("ino", e.ino)
        .str("path", best_path(e))
        .str("name", e.name)
        .num("bytes", e.bytes)
        .num("folios", e.folios)
        .num("nlink", e.nlink)
        .boolean("unlinked", e.unlinked);
  } else if (is_path_event(e.type)) {
    j.str("path", e.full_path.empty() ? std::string_view(e.path) : e.full_path)
        .str("path_arg", e.path)
        .num("dirfd", e.dirfd);
    if (e.type == EventType::rename)
      j.str("newpath", e.newpath).num("newdirfd", e.newdirfd);
    if (e.ino != 0)
      j.str("dev", dev_string(e.dev)).num("ino", e.ino);
    j.num("flags", e.flags).str("origin", to_string(e.origin)).boolean("truncated", e.truncated);
  } else if (is_sysv_event(e.type)) {
    j.num("shmid", e.shmid)
        .num("key", e.key)
        .num("size", e.type == EventType::shmget ? e.arg_size : e.size)
        .num("addr", e.addr)
        .num("shmflg", e.flags);
    if (e.created == 1 || e.created == 0)
      j.boolean("created", e.created == 1);
    else
      j.null("created");
  } else if (e.type == EventType::sigbus) {
    j.num("target_pid", e.target_pid).str("target_comm", e.target_comm).num("si_code", e.si_code);
  } else if (e.type == EventType::exit) {
    const WaitStatus w = wait_status(e.exit_code);
    j.num("exit_code", e.exit_code).num("exit_status", w.exit_status).num("signal", w.signal);
  } else if (e.type == EventType::exec) {
    j.str("filename", e.filename).num("old_pid", e.old_pid);
  }
  return j.finish();
}

std::string errno_name(int err) {
  switch (err) {
  case EPERM:
    return "EPERM";
  case ENOENT:
    return "ENOENT";
  case ESRCH:
    return "ESRCH";
  case EINTR:
    return "EINTR";
  case EIO:
    return "EIO";
  case ENXIO:
    return "ENXIO";
  case E2BIG:
    return "E2BIG";
  case ENOEXEC:
    return "ENOEXEC";
  case EBADF:
    return "EBADF";
  case ECHILD:
    return "ECHILD";
  case EAGAIN:
    return "EAGAIN";
  case ENOMEM:
    return "ENOMEM";
  case EACCES:
    return "EACCES";
  case EFAULT:
    return "EFAULT";
  case EBUSY:
    return "EBUSY";
  case EEXIST:
    return "EEXIST";
  case EXDEV:
    return "EXDEV";
  case ENODEV:
    return "ENODEV";
  case ENOTDIR:
    return "ENOTDIR";
  case EISDIR:
    return "EISDIR";
  case EINVAL:
    return "EINVAL";
  case ENFILE:
    return "ENFILE";
  case EMFILE:
    return "EMFILE";
  case ETXTBSY:
    return "ETXTBSY";
  case EFBIG:
    return "EFBIG";
  case ENOSPC:
    return "ENOSPC";
  case ESPIPE:
    return "ESPIPE";
  case EROFS:
    return "EROFS";
  case EMLINK:
    return "EMLINK";
  case ERANGE:
    return "ERANGE";
  case ENAMETOOLONG:
    return "ENAMETOOLONG";
  case ENOSYS:
    return "ENOSYS";
  case ENOTEMPTY:
    return "ENOTEMPTY";
  case ELOOP:
    return "ELOOP";
  case EIDRM:
    return "EIDRM";
  case EOVERFLOW:
    return "EOVERFLOW";
  case EOPNOTSUPP:
    return "EOPNOTSUPP";
  case EDQUOT:
    return "EDQUOT";
  default:
    return dec(err);
  }
}

} // namespace shmbpf
