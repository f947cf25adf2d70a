// Reap's records as serve takes them from the socket: read back into their
// values and rendered again, so that only what reap writes is exported
// (docs/SECURITY.md, finding 8).
#include "daemon/reap_record.hpp"
#include "model/types.hpp"
#include "views/export_view.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

const TraceClock kClock{1'700'000'000'000'000'000};
constexpr uint32_t kShmDev = 23u << 20 | 7;

ReapOutcome file_outcome() {
  ReapOutcome o;
  SegmentInfo &s = o.target.segment;
  s.kind = Kind::tmpfs;
  s.key = SegmentKey::file(kShmDev, 4242);
  s.path = "/dev/shm/torch_12_34_5";
  s.mountpoint = "/dev/shm";
  s.creator.known = true;
  s.creator.uid = 1000;
  s.creator.comm = "python3";
  s.container.id = std::string(64, 'a');
  s.container.runtime = "docker";
  o.target.age_ns = 900'000'000'000;
  o.target.creator_pid = 12;
  o.status = ReapStatus::freed;
  o.bytes = 1 << 20;
  return o;
}

std::vector<MountUsage> shm_mounts() {
  MountUsage m;
  m.mount.mountpoint = "/dev/shm";
  m.mount.dev = kShmDev;
  return {m};
}

std::string render(const ReapOutcome &o, uint64_t ts = 5'000'000'000,
                   const TraceClock &c = kClock) {
  ExportFormatter fmt(c);
  std::string out;
  fmt.append_reap(out, ts, o, "reap", 777);
  out.pop_back();
  return out;
}

Result<ReapRecord> read(const std::string &line) {
  ExportFormatter fmt(kClock);
  return read_reap_record(line, fmt);
}

std::string replaced(std::string s, const std::string &from, const std::string &to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(ReapRecord, WhatReapWritesReadsBackAndRendersTheSame) {
  ReapOutcome held = file_outcome();
  held.status = ReapStatus::skipped;
  held.reason = ReapSkip::held;
  held.detail = "held by 2 processes";
  held.holders = {31, 32};
  held.target.segment.container = {};
  held.target.segment.creator.comm.clear();
  ReapOutcome sysv;
  sysv.target.segment.kind = Kind::sysv;
  sysv.target.segment.key = SegmentKey::sysv(4026531839u, 65538);
  sysv.target.segment.path = "SYSV0000beef";
  sysv.status = ReapStatus::would_free;
  for (const ReapOutcome &o : {file_outcome(), held, sysv}) {
    const std::string line = render(o);
    auto r = read(line);
    ASSERT_TRUE(r) << r.error() << "\n" << line;
    EXPECT_EQ(render(r->outcome, r->ts_ns), line);
    EXPECT_EQ(r->by, "reap");
    EXPECT_EQ(r->by_pid, 777u);
    EXPECT_EQ(reap_record_place_problem(*r, shm_mounts()), "") << line;
  }
  // Another process's clock writes another time for the same instant: taken.
  EXPECT_TRUE(read(render(file_outcome(), 5'000'000'000, TraceClock{1'700'000'000'000'000'123})));
}

TEST(ReapRecord, AnythingElseIsRefused) {
  const std::string good = render(file_outcome());
  std::vector<std::string> bad = {"freed /etc/passwd", "{\"event\":\"reap\",\"path\":\"/forged\"}",
                                  "[1,2]", good + " x"};
  // reap's own record, one member changed: another event, status or
  // reason, a number as a string, negative or not whole, a device without
  // its minor, a kind reap does not remove, a member more, an empty name
  // reap writes as null, members out of order or one twice.
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"event\":\"reap\"", "\"event\":\"orphan\""},
      {"\"status\":\"freed\"", "\"status\":\"burned\""},
      {"\"reason\":null", "\"reason\":\"because\""},
      {"\"ino\":4242", "\"ino\":\"4242\""},
      {"\"ino\":4242", "\"ino\":-1"},
      {"\"ino\":4242", "\"ino\":4.5"},
      {"\"dev\":\"23:7\"", "\"dev\":\"23\""},
      {"\"kind\":\"tmpfs\"", "\"kind\":\"memfd\""},
      {"\"by_pid\":777}", "\"by_pid\":777,\"extra\":1}"},
      {"\"creator_comm\":\"python3\"", "\"creator_comm\":\"\""},
      {"\"by\":\"reap\",\"by_pid\":777", "\"by_pid\":777,\"by\":\"reap\""},
      {"\"by\":\"reap\"", "\"by\":\"reap\",\"by\":\"serve\""},
  };
  for (const auto &[from, to] : edits)
    bad.push_back(replaced(good, from, to));
  for (const auto &line : bad)
    EXPECT_FALSE(read(line)) << line;
}

TEST(ReapRecord, AFileMustBeOnAShmMountThisDaemonKnows) {
  const auto problem = [](const std::string &path, const std::string &mountpoint,
                          uint32_t dev = kShmDev) {
    ReapOutcome o = file_outcome();
    o.target.segment.path = path;
    o.target.segment.mountpoint = mountpoint;
    o.target.segment.key = SegmentKey::file(dev, 4242);
    auto r = read(render(o));
    EXPECT_TRUE(r) << path;
    return r ? reap_record_place_problem(*r, shm_mounts()) : std::string("unread");
  };
  EXPECT_EQ(problem("/dev/shm/a/b", "/dev/shm"), "");
  EXPECT_NE(problem("/etc/passwd", "/etc"), "");     // no such mount
  EXPECT_NE(problem("/etc/passwd", "/dev/shm"), ""); // not below it
  EXPECT_NE(problem("/dev/shm/../etc/passwd", "/dev/shm"), "");
  EXPECT_NE(problem("/dev/shm//x", "/dev/shm"), "");
  EXPECT_NE(problem("/dev/shm", "/dev/shm"), "");
  EXPECT_NE(problem("/dev/shm/x", "/dev/shm", 8u << 20 | 1), ""); // another device
  ReapOutcome sysv;
  sysv.target.segment.kind = Kind::sysv;
  sysv.target.segment.key = SegmentKey::sysv(1, 2);
  sysv.target.segment.path = "/etc/passwd";
  auto r = read(render(sysv));
  ASSERT_TRUE(r);
  EXPECT_NE(reap_record_place_problem(*r, shm_mounts()), "");
}

} // namespace
} // namespace shmbpf
