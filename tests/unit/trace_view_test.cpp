#include "sources/clock.hpp"
#include "views/trace_view.hpp"

#include "views/escape.hpp"

#include "text_checks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using nlohmann::json;

// 2023-11-14T22:13:20Z as CLOCK_REALTIME at boot.
constexpr int64_t boot_epoch_ns = 1'700'000'000'000'000'000;
const TraceClock test_clock{boot_epoch_ns};

// The nastiest strings a file name or comm can carry.
const std::string esc_title = "\x1b]0;x\x07\n";
const std::string nasty = "a\x1b[2J\n\t\xff\xc2\x9b\xe2\x80\xae\\z";

// Local time is used by trace_line; pin it to UTC for exact comparisons.
class ScopedUtc {
public:
  ScopedUtc() {
    if (const char *tz = std::getenv("TZ"))
      old_ = tz;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  ~ScopedUtc() {
    if (old_)
      setenv("TZ", old_->c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }

private:
  std::optional<std::string> old_;
};

using test::has_raw_control;

Kind kind_of(EventType t) {
  switch (t) {
  case EventType::memfd_create:
    return Kind::memfd;
  case EventType::shmget:
  case EventType::shmat:
  case EventType::shmdt:
  case EventType::shm_rmid:
    return Kind::sysv;
  case EventType::sigbus:
  case EventType::exit:
  case EventType::exec:
  case EventType::oom:
    return Kind::none;
  default:
    return Kind::tmpfs;
  }
}

// An event of type t and the kind that type implies, nothing else set.
Event event_of(EventType t) {
  Event e;
  e.type = t;
  e.kind = kind_of(t);
  return e;
}

const std::vector<EventType> all_types = {
    EventType::create, EventType::open,     EventType::memfd_create, EventType::resize,
    EventType::unlink, EventType::rename,   EventType::shmget,       EventType::shmat,
    EventType::shmdt,  EventType::shm_rmid, EventType::free,         EventType::sigbus,
    EventType::exit,   EventType::exec,     EventType::link,         EventType::oom};

// Every field set, every string hostile.
Event hostile_event(EventType t) {
  Event e = event_of(t);
  e.origin = Origin::openat;
  e.ts_ns = 1'500'000'123;
  e.pid = 4242;
  e.tid = 4243;
  e.ppid = 1;
  e.uid = 1000;
  e.mntns = 4026531841u;
  e.ipcns = 4026531839u;
  e.cgroup_id = std::numeric_limits<uint64_t>::max();
  e.comm = nasty;
  e.dev = (0u << 20) | 23u;
  e.ino = 123;
  e.size = 4096;
  e.bytes = 8192;
  e.arg_size = 65536;
  e.flags = 0x42;
  e.mode = 0600;
  e.fd = 3;
  e.is_new = true;
  e.truncated = true;
  e.unlinked = true;
  e.folios = 2;
  e.path = nasty;
  e.name = nasty;
  e.newpath = nasty;
  e.full_path = "/dev/shm/" + nasty;
  e.dirfd = 5;
  e.shmid = 7;
  e.key = 0x1234;
  e.addr = 0x7f0000001000;
  e.created = 1;
  e.target_pid = 99;
  e.target_comm = nasty;
  e.si_code = 2;
  e.exit_code = 9;
  e.old_pid = 4242;
  e.filename = nasty;
  return e;
}

// Column start offsets of the header, so lines can be checked against it.
std::size_t header_col(std::string_view name) { return trace_header().find(name); }

// ---------------------------------------------------------------- TraceClock

TEST(TraceClock, BootToRealtimeIsRealtimeMinusBoottime) {
  timespec r{}, b{};
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_BOOTTIME, &b);
  const int64_t expect = (int64_t{r.tv_sec} - b.tv_sec) * 1'000'000'000 + (r.tv_nsec - b.tv_nsec);
  const TraceClock c{boot_to_realtime_ns()};
  EXPECT_GT(c.boot_to_realtime_ns, 0);
  EXPECT_LT(std::llabs(c.boot_to_realtime_ns - expect), 1'000'000'000); // within a second
}

// ---------------------------------------------------------------- trace_line

TEST(TraceHeader, NamesEveryColumnOnOneLine) {
  const std::string h = trace_header();
  EXPECT_EQ(h.rfind("TIME", 0), 0u);
  std::size_t prev = 0;
  for (const char *col :
       {"PID", "COMM", "EVENT", "KIND", "SIZE", "RESULT", "PATH/NAME", "DETAILS"}) {
    const std::size_t at = h.find(col);
    ASSERT_NE(at, std::string::npos) << col;
    EXPECT_GT(at, prev) << col;
    prev = at;
  }
  EXPECT_FALSE(has_raw_control(h));
}

TEST(TraceLine, CreateLineMatchesHeaderColumns) {
  ScopedUtc utc;
  Event e = event_of(EventType::create);
  e.ts_ns = 1'500'000'123;
  e.pid = 4242;
  e.comm = "writer";
  e.dev = 23;
  e.ino = 123;
  e.size = 4096;
  e.flags = 0x42;
  e.mode = 0600;
  e.fd = 3;
  e.is_new = true;
  e.path = "seg";
  e.full_path = "/dev/shm/seg";
  const std::string line = trace_line(e, test_clock);
  EXPECT_EQ(line.find("22:13:21.500"), 0u) << line;
  EXPECT_EQ(line.find("4242"), header_col("PID")) << line;
  EXPECT_EQ(line.find("writer"), header_col("COMM")) << line;
  EXPECT_EQ(line.find("create"), header_col("EVENT")) << line;
  EXPECT_EQ(line.find("tmpfs"), header_col("KIND")) << line;
  EXPECT_EQ(line.find("4096"), header_col("SIZE")) << line;
  EXPECT_EQ(line.find("ok"), header_col("RESULT")) << line;
  EXPECT_EQ(line.find("/dev/shm/seg"), header_col("PATH/NAME")) << line;
  const std::string tail = line.substr(line.find("/dev/shm/seg"));
  EXPECT_EQ(tail, "/dev/shm/seg  dev=0:23 ino=123 fd=3 flags=0x42 mode=0600 new");
}

TEST(TraceLine, ErrorShowsErrnoName) {
  Event e = event_of(EventType::resize);
  e.ret = -ENOSPC;
  e.err = ENOSPC;
  e.name = "/big";
  const std::string line = trace_line(e, test_clock);
  EXPECT_EQ(line.find("ENOSPC"), header_col("RESULT")) << line;
  EXPECT_NE(line.find(" /big"), std::string::npos) << line;
}

TEST(TraceLine, PathColumnFallbacks) {
  Event e = event_of(EventType::memfd_create);
  e.path = "cache";
  EXPECT_NE(trace_line(e, test_clock).find(" memfd:cache"), std::string::npos);
  e.name = "memfd:cache (deleted)";
  EXPECT_NE(trace_line(e, test_clock).find(" memfd:cache (deleted)"), std::string::npos);

  Event s = event_of(EventType::shmget);
  s.key = 0xbeef;
  s.shmid = 5;
  s.arg_size = 1 << 20;
  s.created = 1;
  const std::string line = trace_line(s, test_clock);
  EXPECT_EQ(line.find("key=0xbeef"), header_col("PATH/NAME")) << line;
  EXPECT_EQ(line.find("1048576"), header_col("SIZE")) << line;
  EXPECT_NE(line.find("shmid=5 key=0xbeef created"), std::string::npos) << line;
}

TEST(TraceLine, DetailsPerEventType) {
  Event fr = event_of(EventType::free);
  fr.dev = 23;
  fr.ino = 7;
  fr.bytes = 4096;
  fr.folios = 1;
  fr.unlinked = true;
  EXPECT_NE(trace_line(fr, test_clock).find("bytes=4096 folios=1 unlinked"), std::string::npos);

  Event sb = event_of(EventType::sigbus);
  sb.target_pid = 1234;
  sb.target_comm = "victim";
  sb.si_code = 2;
  EXPECT_NE(trace_line(sb, test_clock).find("target=1234(victim) code=2"), std::string::npos);
  // A fault in a pid namespace of its own: the pid it has there too.
  sb.pid = 1234;
  sb.fault = FaultLookup::anon;
  sb.target_ns_pid = 7;
  EXPECT_NE(trace_line(sb, test_clock).find("code=2 ns_pid=7 "), std::string::npos)
      << trace_line(sb, test_clock);
  EXPECT_EQ(json::parse(trace_json(sb, test_clock))["ns_pid"], 7);
  sb.target_ns_pid = 0;
  EXPECT_TRUE(json::parse(trace_json(sb, test_clock))["ns_pid"].is_null());
  sb.target_ns_pid = 1234; // the host's own namespace: nothing more to say
  EXPECT_EQ(trace_line(sb, test_clock).find("ns_pid"), std::string::npos);

  Event ex = event_of(EventType::exit);
  ex.exit_code = 3 << 8;
  EXPECT_NE(trace_line(ex, test_clock).find("exit=3"), std::string::npos);
  ex.exit_code = 9;
  EXPECT_NE(trace_line(ex, test_clock).find("sig=9"), std::string::npos);
  EXPECT_EQ(trace_line(ex, test_clock).find("exit="), std::string::npos);

  Event exe = event_of(EventType::exec);
  exe.pid = 10;
  exe.old_pid = 10;
  exe.filename = "/usr/bin/app";
  EXPECT_NE(trace_line(exe, test_clock).find(" -  /usr/bin/app"), std::string::npos);

  Event rn = event_of(EventType::rename);
  rn.path = "a";
  rn.newpath = "b";
  rn.full_path = "/dev/shm/a";
  EXPECT_NE(trace_line(rn, test_clock).find("/dev/shm/a  -> b"), std::string::npos);
  rn.full_newpath = "/dev/shm/b";
  EXPECT_NE(trace_line(rn, test_clock).find("/dev/shm/a  -> /dev/shm/b"), std::string::npos);
}

TEST(TraceLine, AnOomKillNamesTheVictimAndItsCgroupsMemory) {
  Event o = event_of(EventType::oom);
  o.pid = 41;
  o.target_pid = 42;
  EXPECT_NE(trace_line(o, test_clock).find("oom          -     -           ok      -  victim=42"),
            std::string::npos)
      << trace_line(o, test_clock);
  o.target_comm = "python3";
  o.memcg = CgroupMemory{.shmem = 26189824, .usage = 33554432, .limit = {33554432}};
  o.victim_mem = true;
  o.victim_anon_rss = 4096;
  o.victim_file_rss = 8192;
  o.victim_shmem_rss = 26083328;
  o.oom_score_adj = -1000;
  EXPECT_NE(trace_line(o, test_clock)
                .find("victim=42(python3) cgroup_shmem=26189824 cgroup_usage=33554432 "
                      "cgroup_limit=33554432 anon_rss=4096 file_rss=8192 shmem_rss=26083328 "
                      "oom_score_adj=-1000"),
            std::string::npos)
      << trace_line(o, test_clock);
  o.memcg->limit = {};
  EXPECT_NE(trace_line(o, test_clock).find(" cgroup_limit=max "), std::string::npos);
}

TEST(TraceJson, OomFields) {
  Event o = event_of(EventType::oom);
  o.target_pid = 42;
  json j = json::parse(trace_json(o, test_clock));
  EXPECT_EQ(j["victim_pid"], 42);
  for (const char *k : {"victim_comm", "victim_uid", "victim_total_vm", "victim_anon_rss",
                        "victim_file_rss", "victim_shmem_rss", "oom_score_adj", "cgroup_memory"})
    EXPECT_TRUE(j[k].is_null()) << k;
  o.victim_mem = true;
  o.target_comm = "python3";
  o.target_uid = 1000;
  o.victim_total_vm = 1;
  o.victim_anon_rss = 2;
  o.victim_file_rss = 3;
  o.victim_shmem_rss = 4;
  o.oom_score_adj = 5;
  o.memcg = CgroupMemory{.shmem = 6, .usage = 7, .limit = {}};
  j = json::parse(trace_json(o, test_clock));
  EXPECT_EQ(j["victim_comm"], "python3");
  EXPECT_EQ(j["victim_uid"], 1000);
  EXPECT_EQ(j["victim_total_vm"], 1);
  EXPECT_EQ(j["victim_anon_rss"], 2);
  EXPECT_EQ(j["victim_file_rss"], 3);
  EXPECT_EQ(j["victim_shmem_rss"], 4);
  EXPECT_EQ(j["oom_score_adj"], 5);
  EXPECT_EQ(j["cgroup_memory"]["shmem"], 6);
  EXPECT_EQ(j["cgroup_memory"]["usage"], 7);
  EXPECT_TRUE(j["cgroup_memory"]["limit"].is_null());
  o.memcg->limit = {8};
  EXPECT_EQ(json::parse(trace_json(o, test_clock))["cgroup_memory"]["limit"], 8);
}

TEST(TraceLine, LinkShowsBothNames) {
  Event ln = event_of(EventType::link);
  ln.origin = Origin::link;
  ln.path = ln.full_path = "/dev/shm/l1";
  ln.newpath = "l2";
  ln.full_newpath = "/dev/shm/l2";
  ln.dev = 26;
  ln.ino = 7;
  const std::string line = trace_line(ln, test_clock);
  EXPECT_EQ(line.find("link"), header_col("EVENT")) << line;
  EXPECT_EQ(line.find("tmpfs"), header_col("KIND")) << line;
  EXPECT_NE(line.find("/dev/shm/l1  -> /dev/shm/l2 dev=0:26 ino=7"), std::string::npos) << line;

  // linkat(fd, "", ..., AT_EMPTY_PATH): no old name, a new one as passed.
  Event byfd = event_of(EventType::link);
  byfd.newpath = "l3";
  byfd.dirfd = 4;
  byfd.ino = 8;
  EXPECT_NE(trace_line(byfd, test_clock).find(" -  -> l3 dev=0:0 ino=8 dirfd=4"), std::string::npos)
      << trace_line(byfd, test_clock);
}

TEST(TraceLine, HostileStringsNeverReachTheTerminal) {
  for (EventType t : all_types) {
    const std::string line = trace_line(hostile_event(t), test_clock);
    EXPECT_FALSE(has_raw_control(line)) << escape_text(line);
    EXPECT_EQ(line.find("\xe2\x80\xae"), std::string::npos) << escape_text(line);
    EXPECT_EQ(line.find("\xc2\x9b"), std::string::npos) << escape_text(line);
    EXPECT_NE(line.find(escape_text(nasty)), std::string::npos) << escape_text(line);
  }
}

// ---------------------------------------------------------------- trace_json

TEST(TraceJson, EveryTypeIsOneParseableLine) {
  for (EventType t : all_types) {
    const std::string out = trace_json(hostile_event(t), test_clock);
    ASSERT_FALSE(has_raw_control(out)) << escape_text(out); // includes '\n'
    json j;
    ASSERT_NO_THROW(j = json::parse(out)) << escape_text(out);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["event"], std::string(to_string(t)));
    EXPECT_EQ(j["ts_ns"], 1'500'000'123u);
    EXPECT_EQ(j["time"], "2023-11-14T22:13:21.500000123Z");
    EXPECT_EQ(j["pid"], 4242);
    EXPECT_EQ(j["tid"], 4243);
    EXPECT_EQ(j["ppid"], 1);
    EXPECT_EQ(j["uid"], 1000);
    EXPECT_EQ(j["comm"], escape_text(nasty));
    EXPECT_EQ(j["cgroup_id"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(j["mntns"], 4026531841u);
    EXPECT_EQ(j["ipcns"], 4026531839u);
    EXPECT_EQ(j["errno"], 0);
    EXPECT_EQ(j["ret"], 0);
    if (kind_of(t) == Kind::none)
      EXPECT_TRUE(j["kind"].is_null());
    else
      EXPECT_EQ(j["kind"], std::string(to_string(kind_of(t))));
  }
}

TEST(TraceJson, FileEventFields) {
  const json j = json::parse(trace_json(hostile_event(EventType::create), test_clock));
  EXPECT_EQ(j["dev"], "0:23");
  EXPECT_EQ(j["ino"], 123);
  EXPECT_EQ(j["size"], 4096);
  EXPECT_EQ(j["bytes"], 8192);
  EXPECT_EQ(j["path"], "/dev/shm/" + escape_text(nasty));
  EXPECT_EQ(j["path_arg"], escape_text(nasty));
  EXPECT_EQ(j["name"], escape_text(nasty));
  EXPECT_EQ(j["flags"], 0x42);
  EXPECT_EQ(j["mode"], 0600);
  EXPECT_EQ(j["fd"], 3);
  EXPECT_EQ(j["new"], true);
  EXPECT_EQ(j["origin"], "openat");
  EXPECT_EQ(j["truncated"], true);
  EXPECT_FALSE(j.contains("arg_size"));

  const json o = json::parse(trace_json(hostile_event(EventType::open), test_clock));
  EXPECT_FALSE(o.contains("new"));

  Event r = hostile_event(EventType::resize);
  r.origin = Origin::ftruncate;
  const json rj = json::parse(trace_json(r, test_clock));
  EXPECT_EQ(rj["arg_size"], 65536);
  EXPECT_EQ(rj["origin"], "ftruncate");
  EXPECT_FALSE(rj.contains("path_arg"));
  EXPECT_FALSE(rj.contains("new"));
}

TEST(TraceJson, PathFallsBackToNameThenArgument) {
  Event e = hostile_event(EventType::open);
  e.full_path.clear();
  e.name = "/in-mount";
  EXPECT_EQ(json::parse(trace_json(e, test_clock))["path"], "/in-mount");
  e.name.clear();
  e.path = "rel";
  EXPECT_EQ(json::parse(trace_json(e, test_clock))["path"], "rel");
}

TEST(TraceJson, FreeFields) {
  const json j = json::parse(trace_json(hostile_event(EventType::free), test_clock));
  EXPECT_EQ(j["dev"], "0:23");
  EXPECT_EQ(j["ino"], 123);
  EXPECT_EQ(j["bytes"], 8192);
  EXPECT_EQ(j["folios"], 2);
  EXPECT_EQ(j["nlink"], 0);
  EXPECT_EQ(j["unlinked"], true);
}

TEST(TraceJson, UnlinkAndRenameFields) {
  Event u = hostile_event(EventType::unlink);
  u.full_path.clear();
  json j = json::parse(trace_json(u, test_clock));
  EXPECT_EQ(j["path"], escape_text(nasty));
  EXPECT_EQ(j["path_arg"], escape_text(nasty));
  EXPECT_EQ(j["dirfd"], 5);
  EXPECT_EQ(j["dev"], "0:23");
  EXPECT_EQ(j["ino"], 123);
  EXPECT_FALSE(j.contains("newpath"));

  u.ino = 0;
  j = json::parse(trace_json(u, test_clock));
  EXPECT_FALSE(j.contains("dev"));
  EXPECT_FALSE(j.contains("ino"));

  Event r = hostile_event(EventType::rename);
  r.newpath = "new\nname";
  j = json::parse(trace_json(r, test_clock));
  EXPECT_EQ(j["path"], "/dev/shm/" + escape_text(nasty));
  EXPECT_EQ(j["newpath"], "new\\nname");
  EXPECT_EQ(j["newpath_arg"], "new\\nname");
  r.full_newpath = "/dev/shm/new\nname";
  j = json::parse(trace_json(r, test_clock));
  EXPECT_EQ(j["newpath"], "/dev/shm/new\\nname"); // resolved
  EXPECT_EQ(j["newpath_arg"], "new\\nname");      // as passed
}

TEST(TraceJson, LinkFields) {
  Event l = hostile_event(EventType::link);
  l.origin = Origin::linkat;
  l.newpath = "l2";
  l.full_newpath = "/dev/shm/l2";
  l.newdirfd = 6;
  l.flags = 0x400; // AT_SYMLINK_FOLLOW
  const json j = json::parse(trace_json(l, test_clock));
  EXPECT_EQ(j["event"], "link");
  EXPECT_EQ(j["kind"], "tmpfs");
  EXPECT_EQ(j["path"], "/dev/shm/" + escape_text(nasty));
  EXPECT_EQ(j["path_arg"], escape_text(nasty));
  EXPECT_EQ(j["dirfd"], 5);
  EXPECT_EQ(j["newpath"], "/dev/shm/l2");
  EXPECT_EQ(j["newpath_arg"], "l2");
  EXPECT_EQ(j["newdirfd"], 6);
  EXPECT_EQ(j["dev"], "0:23");
  EXPECT_EQ(j["ino"], 123);
  EXPECT_EQ(j["flags"], 0x400);
  EXPECT_EQ(j["origin"], "linkat");
  EXPECT_EQ(j["truncated"], true);
  EXPECT_FALSE(j.contains("size"));
}

TEST(TraceJson, SysvFields) {
  Event g = hostile_event(EventType::shmget);
  json j = json::parse(trace_json(g, test_clock));
  EXPECT_EQ(j["shmid"], 7);
  EXPECT_EQ(j["key"], 0x1234);
  EXPECT_EQ(j["size"], 65536); // arg_size for shmget
  EXPECT_EQ(j["addr"], 0x7f0000001000u);
  EXPECT_EQ(j["shmflg"], 0x42);
  EXPECT_EQ(j["created"], true);
  g.created = 0;
  EXPECT_EQ(json::parse(trace_json(g, test_clock))["created"], false);
  g.created = 2;
  EXPECT_TRUE(json::parse(trace_json(g, test_clock))["created"].is_null());

  Event d = hostile_event(EventType::shmdt);
  d.shmid = -1;
  j = json::parse(trace_json(d, test_clock));
  EXPECT_EQ(j["shmid"], -1);
  EXPECT_EQ(j["size"], 4096);

  // IPC_RMID names a shmid, not a key: no made-up key=0x0 for a segment
  // made before tracing, in JSON or on the line.
  Event r = hostile_event(EventType::shm_rmid);
  r.shmid = 42;
  r.key = 0;
  j = json::parse(trace_json(r, test_clock));
  EXPECT_EQ(j["shmid"], 42);
  EXPECT_TRUE(j["key"].is_null());
  const std::string line = trace_line(r, test_clock);
  EXPECT_EQ(line.find("key="), std::string::npos) << line;
  EXPECT_NE(line.find("shmid=42"), std::string::npos) << line;
}

TEST(TraceJson, ProcessEventFields) {
  json j = json::parse(trace_json(hostile_event(EventType::sigbus), test_clock));
  EXPECT_EQ(j["target_pid"], 99);
  EXPECT_EQ(j["target_comm"], escape_text(nasty));
  EXPECT_EQ(j["si_code"], 2);
  EXPECT_FALSE(j.contains("path"));

  Event x = hostile_event(EventType::exit);
  x.exit_code = (3 << 8);
  j = json::parse(trace_json(x, test_clock));
  EXPECT_EQ(j["exit_code"], 768);
  EXPECT_EQ(j["exit_status"], 3);
  EXPECT_EQ(j["signal"], 0);
  x.exit_code = 0x80 | 11; // SIGSEGV with core
  j = json::parse(trace_json(x, test_clock));
  EXPECT_EQ(j["exit_status"], 0);
  EXPECT_EQ(j["signal"], 11);

  j = json::parse(trace_json(hostile_event(EventType::exec), test_clock));
  EXPECT_EQ(j["filename"], escape_text(nasty));
  EXPECT_EQ(j["old_pid"], 4242);
}

TEST(TraceJson, ErrorsAndNegativeNumbers) {
  Event e = hostile_event(EventType::open);
  e.ret = -EACCES;
  e.err = EACCES;
  e.fd = -1;
  const json j = json::parse(trace_json(e, test_clock));
  EXPECT_EQ(j["errno"], EACCES);
  EXPECT_EQ(j["ret"], -EACCES);
  EXPECT_EQ(j["fd"], -1);
}

TEST(TraceJson, TerminalTitleSequenceRoundTripsAsText) {
  Event e = hostile_event(EventType::create);
  e.full_path = "/dev/shm/" + esc_title;
  const std::string out = trace_json(e, test_clock);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  const std::string path = json::parse(out)["path"];
  EXPECT_EQ(path, "/dev/shm/\\x1b]0;x\\x07\\n");
  EXPECT_EQ(path.find('\x1b'), std::string::npos);
  EXPECT_EQ(path.find('\x07'), std::string::npos);
  EXPECT_EQ(path.find('\n'), std::string::npos);
}

TEST(TraceJson, InvalidUtf8AndBidiRoundTripAsText) {
  Event e = hostile_event(EventType::open);
  e.full_path = "/dev/shm/\xff\xe2\x80\xae";
  const std::string path = json::parse(trace_json(e, test_clock))["path"];
  EXPECT_EQ(path, "/dev/shm/\\xff\\u{202e}");
}

TEST(TraceJson, TimeBeforeSecondBoundary) {
  Event e = hostile_event(EventType::exit);
  e.ts_ns = 999'999'999;
  EXPECT_EQ(json::parse(trace_json(e, test_clock))["time"], "2023-11-14T22:13:20.999999999Z");
  e.ts_ns = 0;
  // Floor division: one nanosecond before the epoch, not a negative fraction.
  EXPECT_EQ(json::parse(trace_json(e, TraceClock{-1}))["time"], "1969-12-31T23:59:59.999999999Z");
}

// One formatter for a whole stream (it caches the formatted second) gives
// the same bytes as formatting each event on its own, across second
// boundaries, backwards jumps and every event type.
TEST(TraceFormatter, StreamEqualsEventByEvent) {
  ScopedUtc utc;
  TraceFormatter fmt(test_clock);
  std::string out;
  const uint64_t times[] = {0,           999'999'999,        1'000'000'000,     1'000'000'001,
                            500'000'000, 86'400'000'000'000, 86'399'999'999'999};
  for (uint64_t ts : times)
    for (EventType t : all_types) {
      Event e = event_of(t);
      e.ts_ns = ts;
      e.pid = 7;
      e.comm = nasty;
      e.path = esc_title;
      e.name = "/name";
      e.mode = 0640;
      e.ino = 12;
      e.dev = (8u << 20) | 3;
      e.err = ts % 2 ? ENOSPC : 0;
      out.clear();
      fmt.append_json(out, e);
      EXPECT_EQ(out, trace_json(e, test_clock));
      out = "kept ";
      fmt.append_line(out, e);
      EXPECT_EQ(out, "kept " + trace_line(e, test_clock));
    }
}

} // namespace
} // namespace shmbpf
