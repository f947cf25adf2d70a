// serve --export-file without the kernel: the records (trace's schema plus
// the container, lost, orphan and orphan_gone), the orphan diff, the
// rotating file on a temporary directory (sizes, backups, names, modes, no
// split record, a reopen, errors counted on /dev/full, a write cut short
// cut back) and the exporter's writer falling behind a reader that does
// not read.
#include "daemon/export_file.hpp"
#include "daemon/exporter.hpp"
#include "views/export_view.hpp"

#include "synthetic_events.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMiB = 1 << 20;
constexpr FileAt kShm{26, 25};
const std::string kDockerId(64, 'd');

// A fresh directory, removed with what it holds.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-export-test-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
};

std::string read_all(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

unsigned mode_of(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// Records of exactly n bytes, '\n' included, numbered: {"n":7,"pad":"xx"}.
std::string record(int i, size_t n) {
  std::string r = "{\"n\":" + std::to_string(i) + ",\"pad\":\"";
  r.append(n - r.size() - 3, 'x');
  r += "\"}\n";
  return r;
}

// An engine with /dev/shm, a docker container's cgroup (11), the host's
// (13) and a process in each.
Engine host_and_container() {
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  engine.set_cgroup_path(13, "/user.slice/user-1000.slice/session-2.scope");
  engine.set_mount({kShm.mnt_id, 7000, "/dev/shm", kShm.dev, 0, 0, true});
  engine.add_process(500, 1, 0, "app", 11, 7000);
  engine.add_process(600, 1, 0, "tool", 13, 7000);
  return engine;
}

Event in_cgroup(Event e, uint64_t cgroup) {
  e.cgroup_id = cgroup;
  return e;
}

// --- the records ------------------------------------------------------------

TEST(ExportView, EventsAreTracesSchemaPlusTheirContainer) {
  Engine engine = host_and_container();
  const Event e = in_cgroup(created_file(kShm, 500, 77, "/dev/shm/a", 4096, 5 * kSec), 11);
  engine.apply(e);
  ExportFormatter fmt(TraceClock{1'700'000'000 * static_cast<int64_t>(kSec)});
  std::string out;
  fmt.append_event(out, e, engine.cgroup_container(11));
  ASSERT_EQ(out.back(), '\n');
  ASSERT_EQ(out.find('\n'), out.size() - 1) << out;
  const json j = json::parse(out);
  // Every field trace --json has, with the same value.
  const json t = json::parse(trace_json(e, TraceClock{1'700'000'000 * static_cast<int64_t>(kSec)}));
  for (const auto &[k, v] : t.items())
    EXPECT_EQ(j.at(k), v) << k;
  EXPECT_EQ(j["event"], "create");
  EXPECT_EQ(j["pid"], 500);
  EXPECT_EQ(j["ino"], 77);
  EXPECT_EQ(j["path"], "/dev/shm/a");
  EXPECT_EQ(j["time"], "2023-11-14T22:13:25.000000000Z");
  EXPECT_EQ(j["container_known"], true);
  EXPECT_EQ(j["container_id"], kDockerId);
  EXPECT_EQ(j["container_runtime"], "docker");
  for (const char *k : {"container_name", "pod_uid", "pod", "namespace"})
    EXPECT_TRUE(j.at(k).is_null()) << k;

  // The host: known, no container; a cgroup not resolved yet: unknown.
  for (auto [cgroup, known] : {std::pair<uint64_t, bool>{13, true}, {99, false}}) {
    const Event h = in_cgroup(created_file(kShm, 600, 78, "/dev/shm/b", 0, 6 * kSec), cgroup);
    std::string line;
    fmt.append_event(line, h, engine.cgroup_container(cgroup));
    const json hj = json::parse(line);
    EXPECT_EQ(hj["container_known"], known) << cgroup;
    EXPECT_EQ(hj["cgroup_id"], cgroup);
    for (const char *k :
         {"container_id", "container_runtime", "container_name", "pod_uid", "pod", "namespace"})
      EXPECT_TRUE(hj.at(k).is_null()) << k;
  }
}

// An OOM kill's record: the event, and what the model recorded of it (the
// victim's container and the largest files charged to its cgroup).
TEST(ExportView, AnOomKillCarriesTheVictimAndTheLargestFiles) {
  Engine engine = host_and_container();
  engine.apply(in_cgroup(created_file(kShm, 500, 77, "/dev/shm/a", 8 * kMiB, 5 * kSec), 11));
  Event e = in_cgroup(process_event(EventType::oom, 500, 6 * kSec), 11);
  e.target_pid = 500;
  engine.apply(e);
  const OomKill kill = engine.oom_kills_since(0).at(0);
  ExportFormatter fmt(TraceClock{0});
  std::string out;
  fmt.append_event(out, e, engine.cgroup_container(11), &kill);
  const json j = json::parse(out);
  EXPECT_EQ(j["event"], "oom");
  EXPECT_EQ(j["victim_pid"], 500);
  EXPECT_EQ(j["container_id"], kDockerId);
  EXPECT_EQ(j["victim"]["comm"], "p500");
  EXPECT_EQ(j["victim"]["container_id"], kDockerId);
  ASSERT_EQ(j["largest_files"].size(), 1u);
  EXPECT_EQ(j["largest_files"][0]["path"], "/dev/shm/a");
  EXPECT_EQ(j["largest_files"][0]["bytes"], 8 * kMiB);
  // Any other record has neither.
  std::string plain;
  fmt.append_event(plain, e, engine.cgroup_container(11));
  EXPECT_FALSE(json::parse(plain).contains("largest_files"));
}

TEST(ExportView, LostAndDroppedRecordsCarryCountsAndTime) {
  ExportFormatter fmt(TraceClock{0});
  std::string out;
  fmt.append_lost(out, 3 * kSec + 5, 17, 40);
  fmt.append_dropped(out, 4 * kSec, 9);
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u);
  const json lost = json::parse(lines[0]);
  EXPECT_EQ(lost["event"], "lost");
  EXPECT_EQ(lost["count"], 17);
  EXPECT_EQ(lost["total"], 40);
  EXPECT_EQ(lost["ts_ns"], 3 * kSec + 5);
  EXPECT_EQ(lost["time"], "1970-01-01T00:00:03.000000005Z");
  const json dropped = json::parse(lines[1]);
  EXPECT_EQ(dropped["event"], "export_dropped");
  EXPECT_EQ(dropped["count"], 9);
}

TEST(ExportView, OrphansAppearAndGoOnceEachWithTheirIdentity) {
  Engine engine = host_and_container();
  engine.apply(in_cgroup(created_file(kShm, 500, 77, "/dev/shm/leak", 8192, 5 * kSec), 11));
  engine.apply(in_cgroup(created_file(kShm, 600, 78, "/dev/shm/kept", 4096, 5 * kSec), 13));
  engine.apply(created_sysv(600, 4026531839u, 12, 0x1234, 4096, 5 * kSec));
  OrphanWatch watch;
  EXPECT_TRUE(watch.update(engine.orphans(6 * kSec, 0)).appeared.empty());

  // The container's app exits: its file has nobody left.
  engine.apply(in_cgroup(process_event(EventType::exit, 500, 7 * kSec), 11));
  auto c = watch.update(engine.orphans(8 * kSec, 0));
  ASSERT_EQ(c.appeared.size(), 1u);
  EXPECT_TRUE(c.gone.empty());
  ExportFormatter fmt(TraceClock{0});
  std::string out;
  fmt.append_orphan(out, 8 * kSec, c.appeared[0]);
  json o = json::parse(out);
  EXPECT_EQ(o["event"], "orphan");
  EXPECT_EQ(o["ts_ns"], 8 * kSec);
  EXPECT_EQ(o["kind"], "tmpfs");
  EXPECT_EQ(o["dev"], "0:26");
  EXPECT_EQ(o["ino"], 77);
  EXPECT_EQ(o["path"], "/dev/shm/leak");
  EXPECT_EQ(o["mountpoint"], "/dev/shm");
  EXPECT_EQ(o["state"], "linked");
  EXPECT_EQ(o["bytes"], 8192);
  EXPECT_EQ(o["age_ns"], 3 * kSec);
  EXPECT_EQ(o["creator_known"], true);
  EXPECT_EQ(o["creator_pid"], 500);
  EXPECT_EQ(o["creator_comm"], "p500");
  EXPECT_EQ(o["container_id"], kDockerId);
  EXPECT_EQ(o["container_runtime"], "docker");

  // Still an orphan: nothing new. The host's tool exits too: its file and
  // its SysV segment (with an IPC namespace and shmid for identity) appear.
  EXPECT_TRUE(watch.update(engine.orphans(9 * kSec, 0)).appeared.empty());
  engine.apply(in_cgroup(process_event(EventType::exit, 600, 10 * kSec), 13));
  c = watch.update(engine.orphans(11 * kSec, 0));
  ASSERT_EQ(c.appeared.size(), 2u);
  EXPECT_EQ(watch.size(), 3u);
  std::string sysv;
  for (const SegmentInfo &s : c.appeared)
    if (s.key.is_sysv())
      fmt.append_orphan(sysv, 11 * kSec, s);
  ASSERT_FALSE(sysv.empty());
  const json sj = json::parse(sysv);
  EXPECT_EQ(sj["kind"], "sysv");
  EXPECT_EQ(sj["shmid"], 12);
  EXPECT_EQ(sj["ipcns"], 4026531839u);
  EXPECT_FALSE(sj.contains("ino"));
  EXPECT_TRUE(sj["container_id"].is_null());

  // The leak is removed: gone, and the engine no longer has it.
  Event rm = process_event(EventType::unlink, 600, 12 * kSec);
  rm.kind = Kind::tmpfs;
  rm.dev = kShm.dev;
  rm.ino = 77;
  rm.path = rm.full_path = "/dev/shm/leak";
  rm.absolute = true;
  engine.apply(rm);
  // Unlinked, its pages still pin memory: an orphan until they are freed.
  EXPECT_TRUE(watch.update(engine.orphans(12 * kSec, 0)).gone.empty());
  Event freed = process_event(EventType::free, 0, 12 * kSec);
  freed.kind = Kind::tmpfs;
  freed.dev = kShm.dev;
  freed.ino = 77;
  freed.bytes = 8192;
  freed.folios = 2;
  freed.unlinked = true;
  engine.apply(freed);
  c = watch.update(engine.orphans(13 * kSec, 0));
  EXPECT_TRUE(c.appeared.empty());
  ASSERT_EQ(c.gone.size(), 1u);
  out.clear();
  fmt.append_orphan_gone(out, 13 * kSec, c.gone[0], engine.contains(c.gone[0].key));
  o = json::parse(out);
  EXPECT_EQ(o["event"], "orphan_gone");
  EXPECT_EQ(o["ino"], 77);
  EXPECT_EQ(o["path"], "/dev/shm/leak");
  EXPECT_EQ(o["exists"], false);
  EXPECT_EQ(o["container_id"], kDockerId);
  EXPECT_EQ(watch.size(), 2u);
}

TEST(ExportView, OrdinaryFilesOfRunAreNotOrphansOfTheExport) {
  Engine engine = host_and_container();
  engine.set_mount({30, 7000, "/run", 27, 0, 0, true});
  engine.apply(in_cgroup(created_file({27, 30}, 600, 5, "/run/x.pid", 4096, kSec), 13));
  engine.apply(in_cgroup(process_event(EventType::exit, 600, 2 * kSec), 13));
  // An orphan only to whoever asks for every mount (leaks --all-mounts).
  ASSERT_EQ(engine.orphans(3 * kSec, 0, OrphanScope::all_mounts).size(), 1u);
  EXPECT_TRUE(engine.orphans(3 * kSec, 0).empty());
  OrphanWatch watch;
  EXPECT_TRUE(watch.update(engine.orphans(3 * kSec, 0)).appeared.empty());
}

// --- the file ---------------------------------------------------------------

TEST(ExportFileSetting, SizesInMibWithFractions) {
  EXPECT_EQ(ExportFileSetting::max_bytes(0).value(), 0u);
  EXPECT_EQ(ExportFileSetting::max_bytes(1).value(), 1u << 20);
  EXPECT_EQ(ExportFileSetting::max_bytes(0.5).value(), 1u << 19);
  EXPECT_EQ(ExportFileSetting::max_bytes(0.01).value(), 10486u);
  for (double bad : {-1.0, 1e-12, 2e6, std::nan(""), HUGE_VAL})
    EXPECT_FALSE(ExportFileSetting::max_bytes(bad)) << bad;
}

TEST(RotatingFile, RotatesBeforeTheLimitKeepsNBackupsAndNeverSplitsARecord) {
  TempDir dir;
  const std::string path = dir / "x.ndjson";
  auto f = RotatingFile::open(path, {100, 2});
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(mode_of(path), 0600u);
  // 30-byte records: three fit in 100 bytes, the fourth rotates.
  std::string all;
  for (int i = 0; i < 20; ++i)
    all += record(i, 30);
  // In one go and in pieces: the same rules.
  auto out = f->append(std::string_view(all).substr(0, 7 * 30));
  EXPECT_EQ(out.written, 7u);
  EXPECT_EQ(out.failed, 0u);
  EXPECT_EQ(out.problems, 0u);
  for (int i = 7; i < 20; ++i)
    EXPECT_EQ(f->append(record(i, 30)).written, 1u);
  EXPECT_EQ(f->rotations(), 6u);

  // x.ndjson holds 20 - 6*3 = 2 records, .1 and .2 three each; no .3.
  EXPECT_FALSE(fs::exists(path + ".3"));
  std::vector<std::string> kept;
  for (const std::string &p : {path + ".2", path + ".1", path}) {
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_EQ(mode_of(p), 0600u) << p;
    const std::string text = read_all(p);
    EXPECT_LE(text.size(), 100u) << p;
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n') << p;
    for (const std::string &l : lines_of(text))
      kept.push_back(l);
  }
  // The newest 8 records, whole and in order, across the three files.
  ASSERT_EQ(kept.size(), 8u);
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_EQ(kept[i] + "\n", record(static_cast<int>(12 + i), 30));
}

TEST(RotatingFile, ARecordLargerThanTheLimitHasAFileOfItsOwn) {
  TempDir dir;
  const std::string path = dir / "x";
  auto f = RotatingFile::open(path, {50, 3});
  ASSERT_TRUE(f) << f.error();
  const std::string small = record(0, 20), big = record(1, 120);
  auto out = f->append(small + big + small);
  EXPECT_EQ(out.written, 3u);
  EXPECT_EQ(read_all(path + ".2"), small);
  EXPECT_EQ(read_all(path + ".1"), big);
  EXPECT_EQ(read_all(path), small);
}

TEST(RotatingFile, NoBackupsStartsAfreshAndZeroNeverRotates) {
  TempDir dir;
  auto f = RotatingFile::open(dir / "a", {40, 0});
  ASSERT_TRUE(f);
  f->append(record(0, 30) + record(1, 30));
  EXPECT_EQ(read_all(dir / "a"), record(1, 30));
  EXPECT_FALSE(fs::exists(dir / "a.1"));
  auto g = RotatingFile::open(dir / "b", {0, 3});
  ASSERT_TRUE(g);
  for (int i = 0; i < 50; ++i)
    g->append(record(i, 30));
  EXPECT_EQ(fs::file_size(dir / "b"), 1500u);
  EXPECT_EQ(g->rotations(), 0u);
}

TEST(RotatingFile, AppendsToAnExistingFileAndCountsItsSize) {
  TempDir dir;
  const std::string path = dir / "x";
  { std::ofstream(path) << record(0, 30) << record(1, 30); }
  chmod(path.c_str(), 0644); // nobody else reads root's audit trail: made 0600
  auto f = RotatingFile::open(path, {100, 1});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->size(), 60u);
  f->append(record(2, 30) + record(3, 30));
  EXPECT_EQ(read_all(path + ".1"), record(0, 30) + record(1, 30) + record(2, 30));
  EXPECT_EQ(read_all(path), record(3, 30));
  EXPECT_EQ(mode_of(path + ".1"), 0600u);
  EXPECT_EQ(mode_of(path), 0600u);
}

TEST(RotatingFile, ReopenAfterAMoveWritesToAFreshFile) {
  TempDir dir;
  const std::string path = dir / "x";
  auto f = RotatingFile::open(path, {0, 1});
  ASSERT_TRUE(f);
  f->append(record(0, 30));
  fs::rename(path, path + ".old"); // logrotate
  f->append(record(1, 30));        // still the moved file until the reopen
  EXPECT_EQ(f->reopen(), "");
  f->append(record(2, 30));
  EXPECT_EQ(read_all(path + ".old"), record(0, 30) + record(1, 30));
  EXPECT_EQ(read_all(path), record(2, 30));
  EXPECT_EQ(mode_of(path), 0600u);

  // The directory is gone: the error says so, the open file stays in use.
  const std::string gone = dir / "sub";
  fs::create_directory(gone);
  auto g = RotatingFile::open(gone + "/y", {0, 1});
  ASSERT_TRUE(g);
  fs::rename(gone, dir / "moved");
  const std::string why = g->reopen();
  EXPECT_NE(why.find(gone + "/y"), std::string::npos) << why;
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
  EXPECT_EQ(g->append(record(3, 30)).written, 1u);
  EXPECT_EQ(read_all(dir / "moved/y"), record(3, 30));
}

TEST(RotatingFile, OpenRefusesWhatCannotBeWrittenWithTheReason) {
  TempDir dir;
  auto missing = RotatingFile::open(dir / "no/such/dir/x", {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no/such/dir/x"), std::string::npos) << missing.error();
  EXPECT_NE(missing.error().find("No such file"), std::string::npos) << missing.error();
  fs::create_directory(dir / "sub");
  auto directory = RotatingFile::open(dir / "sub", {});
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().find("Is a directory"), std::string::npos) << directory.error();
}

// What another user could have put at the path or around it is refused,
// not written through (daemon/own_file; as root in tests/attack).
TEST(RotatingFile, OpenRefusesLinksFifosAndADirectoryEveryoneWrites) {
  TempDir dir;
  const std::string victim = dir / "victim";
  { std::ofstream(victim) << "root's\n"; }
  fs::create_symlink(victim, dir / "link");
  auto link = RotatingFile::open(dir / "link", {});
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().find("symbolic link"), std::string::npos) << link.error();
  fs::create_hard_link(victim, dir / "hard");
  auto hard = RotatingFile::open(dir / "hard", {});
  ASSERT_FALSE(hard);
  EXPECT_NE(hard.error().find("2 names"), std::string::npos) << hard.error();
  EXPECT_EQ(read_all(victim), "root's\n");
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto no_reader = RotatingFile::open(fifo, {});
  ASSERT_FALSE(no_reader);
  EXPECT_NE(no_reader.error().find("not a regular file"), std::string::npos) << no_reader.error();
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  auto with_reader = RotatingFile::open(fifo, {});
  close(reader);
  ASSERT_FALSE(with_reader);
  EXPECT_NE(with_reader.error().find("not a regular file"), std::string::npos);
  auto device = RotatingFile::open("/dev/full", {});
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().find("not a regular file"), std::string::npos) << device.error();
  fs::create_directory(dir / "open");
  chmod((dir / "open").c_str(), 01777);
  auto open_dir = RotatingFile::open(dir / "open/x", {});
  ASSERT_FALSE(open_dir);
  EXPECT_NE(open_dir.error().find("writable by every user"), std::string::npos) << open_dir.error();
  EXPECT_FALSE(fs::exists(dir / "open/x"));
}

TEST(RotatingFile, AFullDeviceIsCountedAndTriedAgain) {
  const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  auto f = std::optional<RotatingFile>(RotatingFile::over_descriptor(full, "/dev/full"));
  for (int round = 0; round < 2; ++round) {
    auto out = f->append(record(0, 30) + record(1, 30) + record(2, 30));
    EXPECT_EQ(out.written, 0u);
    EXPECT_EQ(out.failed, 3u);
    EXPECT_EQ(out.problems, 1u);
    EXPECT_NE(out.error.find("No space left"), std::string::npos) << out.error;
  }
  EXPECT_EQ(f->rotations(), 0u);
  EXPECT_FALSE(fs::exists("/dev/full.1"));
}

TEST(RotatingFile, AWriteCutShortIsCutBackToWholeRecords) {
  TempDir dir;
  const std::string path = dir / "x";
  auto f = RotatingFile::open(path, {0, 1});
  ASSERT_TRUE(f);
  ASSERT_EQ(f->append(record(0, 30)).written, 1u);
  // A file size limit 45 bytes in: the next write stops halfway (then
  // EFBIG instead of the signal).
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGXFSZ, &ignore, &old);
  rlimit was{};
  getrlimit(RLIMIT_FSIZE, &was);
  rlimit small = was;
  small.rlim_cur = 45;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  auto out = f->append(record(1, 30) + record(2, 30));
  setrlimit(RLIMIT_FSIZE, &was);
  sigaction(SIGXFSZ, &old, nullptr);
  EXPECT_EQ(out.written, 0u);
  EXPECT_EQ(out.failed, 2u);
  EXPECT_NE(out.error.find("File too large"), std::string::npos) << out.error;
  EXPECT_EQ(read_all(path), record(0, 30));
  // And the next records follow the last whole one.
  EXPECT_EQ(f->append(record(3, 30)).written, 1u);
  EXPECT_EQ(read_all(path), record(0, 30) + record(3, 30));
}

// --- the exporter -------------------------------------------------------------

TEST(Exporter, EventsReachTheFileAndAreCounted) {
  TempDir dir;
  const std::string path = dir / "x";
  auto f = RotatingFile::open(path, {0, 1});
  ASSERT_TRUE(f);
  Log log;
  Exporter ex(std::move(*f), TraceClock{0}, log);
  Engine engine = host_and_container();
  for (uint64_t i = 0; i < 100; ++i) {
    const Event e = in_cgroup(
        created_file(kShm, 500, 1000 + i, "/dev/shm/f" + std::to_string(i), 0, kSec + i), 11);
    engine.apply(e);
    ex.event(e, engine);
  }
  ex.hand_over();
  ex.close();
  const auto lines = lines_of(read_all(path));
  ASSERT_EQ(lines.size(), 100u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const json j = json::parse(lines[i]);
    EXPECT_EQ(j["ino"], 1000 + i);
    EXPECT_EQ(j["container_id"], kDockerId);
  }
  const ExportCounters c = ex.counters();
  EXPECT_EQ(c.records, 100u);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.errors, 0u);
}

TEST(Exporter, AFullDiskDropsAndCountsWithoutStopping) {
  const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  Log log;
  Exporter ex(RotatingFile::over_descriptor(full, "/dev/full"), TraceClock{0}, log);
  Engine engine = host_and_container();
  for (int round = 0; round < 3; ++round) {
    const Event e = created_file(kShm, 600, 5, "/dev/shm/a", 0, kSec);
    for (int i = 0; i < 10; ++i)
      ex.event(e, engine);
    ex.hand_over();
  }
  ex.close();
  const ExportCounters c = ex.counters();
  EXPECT_EQ(c.records, 0u);
  EXPECT_EQ(c.dropped, 30u);
  EXPECT_GE(c.errors, 1u);
}

TEST(Exporter, AWriterBehindDropsWhatDoesNotFitAndSaysSoWhenItCatchesUp) {
  // A pipe nobody reads yet: the writer blocks in write() once the pipe is
  // full, as on a stuck disk, and the consumer must not.
  TempDir dir;
  const std::string path = dir / "fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const int reader = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  // serve opens no FIFO (OwnFile.*): the pipe is handed over as it is.
  const int writer = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  Log log;
  Exporter ex(RotatingFile::over_descriptor(writer, path), TraceClock{0}, log);
  Engine engine = host_and_container();
  const Event e = created_file(kShm, 600, 5, "/dev/shm/" + std::string(200, 'n'), 0, kSec);
  std::string one;
  ExportFormatter(TraceClock{0}).append_event(one, e, engine.cgroup_container(0));
  const size_t n = 2 * Exporter::kMaxQueued / one.size();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i)
    ex.event(e, engine);
  ex.hand_over();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  const uint64_t dropped = ex.counters().dropped;
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, n);

  // The reader reads now: everything that was not dropped arrives, whole,
  // after an export_dropped record that counts what is missing.
  std::string got;
  std::thread drain([&] {
    fcntl(reader, F_SETFL, 0); // blocking, until the writer closes
    char buf[1 << 16];
    for (ssize_t r; (r = read(reader, buf, sizeof buf)) != 0;)
      if (r > 0)
        got.append(buf, static_cast<size_t>(r));
  });
  ex.close();
  drain.join();
  close(reader);
  size_t lines = 0, events = 0, told = 0;
  for (const std::string &l : lines_of(got)) {
    ++lines;
    const json j = json::parse(l);
    if (j["event"] == "export_dropped")
      told += j["count"].get<size_t>();
    else
      ++events;
  }
  EXPECT_EQ(events + dropped, n);
  EXPECT_EQ(told, dropped);
  EXPECT_EQ(ex.counters().records, lines);
  EXPECT_EQ(ex.counters().dropped, dropped);
}

} // namespace
} // namespace shmbpf::test
