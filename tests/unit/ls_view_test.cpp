#include "views/ls_view.hpp"

#include "views/columns.hpp"
#include "views/escape.hpp"
#include "views/relations.hpp"

#include "text_checks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using nlohmann::json;
using test::fields_of;

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

constexpr uint64_t sec = 1'000'000'000;
constexpr uint64_t now = 1000 * sec;

SegmentInfo tmpfs_segment() {
  SegmentInfo s;
  s.key = SegmentKey::file((0u << 20) | 25u, 4242);
  s.kind = Kind::tmpfs;
  s.path = "/dev/shm/torch_100_abc_0";
  s.mountpoint = "/dev/shm";
  s.size = 1024 * 1024;
  s.bytes = 64 * 1024;
  s.state = SegmentState::linked;
  s.creator.pid = 100;
  s.creator.uid = 1000;
  s.creator.comm = "python3";
  s.creator.known = true;
  s.creator.container_id = "0123456789abcdef0123";
  s.container = ContainerRef{"0123456789abcdef0123", "docker", ""};
  s.created_ns = now - 5 * sec;
  s.holders = {100, 101, 102, 103, 104};
  s.pattern = NamePattern::torch;
  s.nlink = 2; // a hard link, its name escaped as every name
  s.other_paths = {"/dev/shm/l\n2"};
  return s;
}

SegmentInfo sysv_segment() {
  SegmentInfo s;
  s.key = SegmentKey::sysv(4026531839u, 7);
  s.kind = Kind::sysv;
  s.path = "SYSV0000abcd";
  s.size = 4096;
  s.bytes = 4096;
  s.state = SegmentState::unlinked;
  s.existed_before = true; // creator unknown, age unknown
  s.sysv_key = 0xabcd;
  return s;
}

TEST(LsViewTest, SegmentsTable) {
  SegmentInfo exited = tmpfs_segment();
  exited.creator.exited = true;
  exited.holders.clear();
  exited.orphan = true;
  SegmentInfo sysv = sysv_segment();
  sysv.nattch = 2;
  const std::string t = segments_table({tmpfs_segment(), sysv, exited}, now);
  // top's segments columns, in order.
  EXPECT_TRUE(t.starts_with("PATH/NAME ")) << t;
  std::size_t at = 0;
  for (const char *col :
       {"PATH/NAME", "KIND", "SIZE", "BYTES", "STATE", "CREATOR", "HOLDERS", "AGE"}) {
    at = t.find(col, at);
    ASSERT_NE(at, std::string::npos) << col << "\n" << t;
  }
  EXPECT_NE(t.find("/dev/shm/torch_100_abc_0"), std::string::npos);
  EXPECT_NE(t.find("1.0M"), std::string::npos);
  EXPECT_NE(t.find("64K"), std::string::npos);
  EXPECT_NE(t.find("100/python3"), std::string::npos);
  EXPECT_NE(t.find("100,101,102,+2"), std::string::npos);
  EXPECT_NE(t.find("5s"), std::string::npos);
  EXPECT_NE(t.find("(exited)"), std::string::npos);
  EXPECT_NE(t.find("SYSV0000abcd"), std::string::npos);
  EXPECT_NE(t.find("unlinked"), std::string::npos);
  EXPECT_NE(t.find("2 attached"), std::string::npos) << t; // SysV: no holder known
  EXPECT_NE(t.find("linked orphan"), std::string::npos) << t;
  // header + 3 rows, no trailing blanks
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4);
  EXPECT_EQ(t.find(" \n"), std::string::npos);
}

TEST(LsViewTest, SegmentsTableEscapesHostilePath) {
  SegmentInfo s = tmpfs_segment();
  s.path = "/dev/shm/\x1b]0;pwned\x07\x1b[2J\nfake";
  s.creator.comm = "c\x1b[31m";
  const std::string t = segments_table({s}, now);
  EXPECT_EQ(t.find('\x1b'), std::string::npos);
  EXPECT_EQ(t.find('\x07'), std::string::npos);
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 2);
  const std::string j = segments_json({s}, now);
  EXPECT_EQ(j.find('\x1b'), std::string::npos);
  // The one escaping rule: JSON carries the text the table shows.
  EXPECT_EQ(json::parse(j)["segments"][0]["path"], escape_text(s.path));
}

// Streamed in pieces, the document is byte for byte the one built whole,
// and a large one does come in several pieces.
TEST(LsViewTest, SegmentsJsonStreamed) {
  std::vector<SegmentInfo> many;
  for (int i = 0; i < 10000; ++i) {
    SegmentInfo s = i % 2 ? tmpfs_segment() : sysv_segment();
    s.path += std::to_string(i);
    many.push_back(std::move(s));
  }
  const std::vector<SegmentInfo> none;
  const std::vector<SegmentInfo> *docs[] = {&many, &none};
  for (const std::vector<SegmentInfo> *v : docs) {
    std::string streamed;
    size_t pieces = 0;
    auto each = [v](const std::function<void(const SegmentInfo &)> &fn) {
      for (const SegmentInfo &s : *v)
        fn(s);
    };
    segments_json(each, now, [&](std::string_view piece) {
      streamed += piece;
      ++pieces;
    });
    EXPECT_EQ(streamed, segments_json(*v, now));
    EXPECT_EQ(pieces > 1, !v->empty()) << pieces;
  }
}

TEST(LsViewTest, SegmentsJson) {
  const std::string out = segments_json({tmpfs_segment(), sysv_segment()}, now);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  const json doc = json::parse(out);
  ASSERT_TRUE(doc["segments"].is_array());
  ASSERT_EQ(doc["segments"].size(), 2u);

  const json &f = doc["segments"][0];
  for (const char *k :
       {"kind", "path", "dev", "ino", "shmid", "nlink", "other_paths", "size", "bytes", "state",
        "mount", "age_s", "orphan", "creator", "holders", "container", "pattern"})
    EXPECT_TRUE(f.contains(k)) << k;
  EXPECT_EQ(f["nlink"], 2);
  EXPECT_EQ(f["other_paths"], json::array({"/dev/shm/l\\n2"}));
  EXPECT_EQ(f["kind"], "tmpfs");
  EXPECT_EQ(f["dev"], "0:25");
  EXPECT_EQ(f["ino"], 4242);
  EXPECT_TRUE(f["shmid"].is_null());
  EXPECT_EQ(f["size"], 1024 * 1024);
  EXPECT_EQ(f["bytes"], 64 * 1024);
  EXPECT_EQ(f["state"], "linked");
  EXPECT_EQ(f["mount"], "/dev/shm");
  EXPECT_EQ(f["age_s"], 5);
  EXPECT_EQ(f["orphan"], false);
  EXPECT_EQ(f["creator"]["pid"], 100);
  EXPECT_EQ(f["creator"]["comm"], "python3");
  EXPECT_EQ(f["creator"]["uid"], 1000);
  EXPECT_EQ(f["creator"]["exited"], false);
  EXPECT_EQ(f["holders"], json::array({100, 101, 102, 103, 104}));
  EXPECT_EQ(f["container"]["id"], "0123456789abcdef0123");
  EXPECT_EQ(f["container"]["runtime"], "docker");
  EXPECT_TRUE(f["container"]["pod_uid"].is_null());
  EXPECT_EQ(f["pattern"], "torch");

  const json &v = doc["segments"][1];
  EXPECT_EQ(v["kind"], "sysv");
  EXPECT_TRUE(v["dev"].is_null());
  EXPECT_TRUE(v["ino"].is_null());
  EXPECT_EQ(v["shmid"], 7);
  EXPECT_TRUE(v["mount"].is_null());
  EXPECT_TRUE(v["age_s"].is_null());
  EXPECT_TRUE(v["creator"].is_null());
  EXPECT_TRUE(v["container"].is_null());
  EXPECT_TRUE(v["holders"].is_array());
  EXPECT_TRUE(v["holders"].empty());
  EXPECT_TRUE(v["pattern"].is_null());
  EXPECT_TRUE(v["nlink"].is_null());
  EXPECT_EQ(v["other_paths"], json::array());

  EXPECT_EQ(json::parse(segments_json({}, now)), json::parse(R"({"segments": []})"));
}

TEST(LsViewTest, ProcessesTableAndJson) {
  ProcessInfo p;
  p.pid = 4321;
  p.uid = 1000;
  p.comm = "worker";
  p.container_id = "fedcba9876543210";
  p.runtime = "containerd";
  p.segments_created = 3;
  p.bytes_created = 2 * 1024 * 1024;
  p.segments_held = 4;
  p.bytes_held = 64 * 1024;
  p.create_rate = 1.5;
  ProcessInfo host;
  host.pid = 1;
  host.comm = "init";

  p.segments_unheld = 2;
  const std::string t = processes_table({p, host}, UserNames{{1000, "alice"}});
  // top's process columns, in order; login names where known, else the uid.
  const auto lines = lines_of(t);
  ASSERT_EQ(lines.size(), 3u) << t;
  EXPECT_EQ(fields_of(lines[0]),
            (std::vector<std::string>{"PID", "USER", "COMM", "CONTAINER", "SEGS", "BYTES", "HELD",
                                      "CREATE/s", "UNHELD"}));
  EXPECT_EQ(fields_of(lines[1]),
            (std::vector<std::string>{"4321", "alice", "worker", "fedcba987654", "3", "2.0M", "64K",
                                      "1.5", "2"}));
  EXPECT_EQ(fields_of(lines[2]),
            (std::vector<std::string>{"1", "0", "init", "-", "0", "0B", "0B", "0", "0"}));

  const std::string out = processes_json({p, host});
  EXPECT_EQ(out.back(), '\n');
  const json doc = json::parse(out);
  ASSERT_EQ(doc["processes"].size(), 2u);
  const json &j = doc["processes"][0];
  EXPECT_EQ(j["pid"], 4321);
  EXPECT_EQ(j["uid"], 1000);
  EXPECT_EQ(j["comm"], "worker");
  EXPECT_EQ(j["container"]["id"], "fedcba9876543210");
  EXPECT_EQ(j["container"]["runtime"], "containerd");
  EXPECT_TRUE(j["container"]["pod_uid"].is_null());
  EXPECT_EQ(j["segments_created"], 3);
  EXPECT_EQ(j["bytes_created"], 2 * 1024 * 1024);
  EXPECT_EQ(j["segments_held"], 4);
  EXPECT_EQ(j["bytes_held"], 64 * 1024);
  EXPECT_DOUBLE_EQ(j["create_rate"].get<double>(), 1.5);
  EXPECT_TRUE(doc["processes"][1]["container"].is_null());
}

TEST(LsViewTest, ContainersTableAndJson) {
  ContainerInfo c;
  c.id = "abcdef0123456789abcdef";
  c.runtime = "docker";
  c.pod_uid = "pod-1";
  c.processes = 2;
  c.segments = 5;
  c.bytes = 3 * 1024;
  ContainerInfo host;
  host.processes = 7;
  c.memory = CgroupMemory{.shmem = 20u << 20, .usage = 24u << 20, .limit = {32u << 20}};

  // The container's processes see a /dev/shm that is a quarter full.
  ProcessInfo in_c;
  in_c.pid = 50;
  in_c.mntns = 4026532001u;
  in_c.container_id = c.id;
  MountUsage shm;
  shm.mount.mountpoint = "/dev/shm";
  shm.mount.mntns = in_c.mntns;
  shm.mount.dev = 77;
  shm.percent = 25.0;
  const std::vector<ProcessInfo> procs = {in_c};
  const std::vector<MountUsage> mounts = {shm};
  const Relations rel(procs, mounts, 4026531840u);
  const std::string t = containers_table({c, host}, rel);
  const auto lines = lines_of(t);
  ASSERT_EQ(lines.size(), 3u) << t;
  EXPECT_TRUE(lines[0].starts_with("ID ")) << t;
  std::size_t at = 0;
  for (const char *col : {"ID", "NAME", "RUNTIME", "POD", "NAMESPACE", "PROCS", "SEGS", "BYTES",
                          "SHMEM", "LIMIT", "SHM MOUNT %"}) {
    at = lines[0].find(col, at);
    ASSERT_NE(at, std::string::npos) << col << "\n" << t;
  }
  EXPECT_EQ(fields_of(lines[1]),
            (std::vector<std::string>{"abcdef012345", "-", "docker", "pod-1", "-", "2", "5", "3.0K",
                                      "20M", "32M", "25.0%"}));
  EXPECT_EQ(fields_of(lines[2]),
            (std::vector<std::string>{"host", "-", "-", "-", "-", "7", "0", "0B", "-", "-", "-"}));

  const json doc = json::parse(containers_json({c, host}));
  ASSERT_EQ(doc["containers"].size(), 2u);
  EXPECT_EQ(doc["containers"][0]["id"], c.id);
  EXPECT_EQ(doc["containers"][0]["runtime"], "docker");
  EXPECT_EQ(doc["containers"][0]["pod_uid"], "pod-1");
  EXPECT_EQ(doc["containers"][0]["processes"], 2);
  EXPECT_EQ(doc["containers"][0]["segments"], 5);
  EXPECT_EQ(doc["containers"][0]["bytes"], 3 * 1024);
  EXPECT_EQ(doc["containers"][0]["shmem_bytes"], 20u << 20);
  EXPECT_EQ(doc["containers"][0]["memory_usage_bytes"], 24u << 20);
  EXPECT_EQ(doc["containers"][0]["memory_limit_bytes"], 32u << 20);
  EXPECT_EQ(doc["containers"][1]["id"], "");
  EXPECT_EQ(doc["containers"][1]["host"], true);
  EXPECT_TRUE(doc["containers"][1]["runtime"].is_null());
  for (const char *k : {"shmem_bytes", "memory_usage_bytes", "memory_limit_bytes"})
    EXPECT_TRUE(doc["containers"][1][k].is_null()) << k;
  EXPECT_TRUE(doc["containers"][1]["cgroup"].is_null());

  // One of the host's top-level cgroups: its memory only.
  ContainerInfo top;
  top.cgroup = "/system.slice";
  top.memory = CgroupMemory{.shmem = 3u << 20, .usage = 300u << 20, .limit = {}};
  const auto cg = lines_of(containers_table({host, top}, rel));
  ASSERT_EQ(cg.size(), 3u);
  EXPECT_EQ(fields_of(cg[2]), (std::vector<std::string>{"host/system.slice", "-", "-", "-", "-",
                                                        "-", "3.0M", "none", "-"}));
  const json row = json::parse(containers_json({top}))["containers"][0];
  EXPECT_EQ(row["cgroup"], "/system.slice");
  EXPECT_EQ(row["host"], true);
  EXPECT_EQ(row["shmem_bytes"], 3u << 20);
  EXPECT_TRUE(row["memory_limit_bytes"].is_null());
}

// A container's owner chooses its name, pod and namespace: escaped by the
// one rule in every table and every JSON string.
TEST(LsViewTest, ContainerNamesInTablesAndJsonEscaped) {
  ContainerInfo c;
  c.id = "abcdef0123456789abcdef";
  c.runtime = "containerd";
  c.pod_uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  c.name = "api\x1b[2J";
  c.pod = "api-6b9c";
  c.pod_namespace = "shop\nx";
  const Relations rel({}, {}, 4026531840u);
  const std::string t = containers_table({c}, rel);
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
  const auto lines = lines_of(t);
  ASSERT_EQ(lines.size(), 2u) << t;
  const auto f = fields_of(lines[1]);
  ASSERT_GE(f.size(), 5u) << t;
  EXPECT_EQ(f[1], escape_text(c.name));
  EXPECT_EQ(f[3], "api-6b9c"); // the pod's name over its uid
  EXPECT_EQ(f[4], escape_text(c.pod_namespace));
  const json row = json::parse(containers_json({c}))["containers"][0];
  EXPECT_EQ(row["name"], escape_text(c.name));
  EXPECT_EQ(row["pod"], "api-6b9c");
  EXPECT_EQ(row["namespace"], escape_text(c.pod_namespace));
  EXPECT_EQ(row["pod_uid"], c.pod_uid);

  SegmentInfo s = tmpfs_segment();
  s.container.name = "web-1";
  s.container.pod = "api-6b9c";
  s.container.pod_namespace = "shop";
  const json seg = json::parse(segments_json({s}, now))["segments"][0]["container"];
  EXPECT_EQ(seg["name"], "web-1");
  EXPECT_EQ(seg["pod"], "api-6b9c");
  EXPECT_EQ(seg["namespace"], "shop");
  const std::string table = segments_table({s}, now);
  EXPECT_EQ(fields_of(lines_of(table)[1]).back(), "web-1") << table;
  // Unnamed: the short id, and null names in JSON.
  const json plain = json::parse(segments_json({tmpfs_segment()}, now))["segments"][0]["container"];
  EXPECT_TRUE(plain["name"].is_null());
  EXPECT_TRUE(plain["namespace"].is_null());
}

TEST(LsViewTest, MountsTableAndJson) {
  MountUsage m;
  m.mount.mountpoint = "/dev/shm";
  m.mount.mntns = 4026531840u;
  m.mount.size_limit = 64ull << 20;
  m.mount.used_bytes = 16ull << 20;
  m.percent = 25.0;
  m.growth_bytes_per_s = 1024.0 * 1024.0;
  m.seconds_to_full = 48.0;
  m.peak_used_bytes = 20ull << 20;
  MountUsage unlimited;
  unlimited.mount.mountpoint = "/run/shm";
  unlimited.mount.used_bytes = 4096;
  unlimited.peak_used_bytes = 4096;

  unlimited.mount.mntns = 4026532001u; // nothing known runs there
  m.segments = 3;
  m.tracked_bytes = 8ull << 20;
  m.enospc = 2;
  const std::vector<MountUsage> mounts = {m, unlimited};
  const std::vector<ProcessInfo> no_processes;
  const Relations rel(no_processes, mounts, m.mount.mntns);
  const std::string t = mounts_table(mounts, rel);
  const auto lines = lines_of(t);
  ASSERT_EQ(lines.size(), 3u) << t;
  std::size_t at = 0;
  for (const char *col :
       {"MOUNTPOINT", "OWNER", "SIZE", "USED", "PEAK", "USE%", "GROWTH", "FULL IN", "SEGS",
        "TRACKED", "ENOSPC", "SIGBUS", "MEM LIMIT IN", "RIGHT SIZE"}) {
    at = lines[0].find(col, at);
    ASSERT_NE(at, std::string::npos) << col << "\n" << t;
  }
  EXPECT_EQ(fields_of(lines[1]),
            (std::vector<std::string>{"/dev/shm", "host", "64M", "16M", "20M", "25.0%", "+1.0M/s",
                                      "48s", "3", "8.0M", "2", "-", "-", "-"}));
  EXPECT_EQ(fields_of(lines[2]),
            (std::vector<std::string>{"/run/shm", "mntns:4026532001", "unlimited", "4.0K", "4.0K",
                                      "-", "0/s", "-", "0", "0B", "-", "-", "-", "-"}));

  const std::string out = mounts_json({m, unlimited});
  EXPECT_EQ(out.back(), '\n');
  const json doc = json::parse(out);
  ASSERT_EQ(doc["mounts"].size(), 2u);
  const json &a = doc["mounts"][0];
  EXPECT_EQ(a["mountpoint"], "/dev/shm");
  EXPECT_EQ(a["mntns"], 4026531840u);
  EXPECT_EQ(a["size_bytes"], 64ull << 20);
  EXPECT_EQ(a["used_bytes"], 16ull << 20);
  EXPECT_DOUBLE_EQ(a["percent"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(a["growth_bytes_per_s"].get<double>(), 1048576.0);
  EXPECT_DOUBLE_EQ(a["seconds_to_full"].get<double>(), 48.0);
  EXPECT_EQ(a["peak_used_bytes"], 20ull << 20);
  EXPECT_TRUE(a["memory_room_bytes"].is_null());
  EXPECT_TRUE(a["seconds_to_memory_limit"].is_null());
  EXPECT_EQ(a["oom_before_full"], false);
  EXPECT_TRUE(a["right_size_bytes"].is_null()); // the host's
  const json &b = doc["mounts"][1];
  EXPECT_TRUE(b["size_bytes"].is_null());
  EXPECT_TRUE(b["percent"].is_null());
  EXPECT_TRUE(b["seconds_to_full"].is_null());
  EXPECT_TRUE(b["growth_bytes_per_s"].is_number());
  EXPECT_EQ(b["used_bytes"], 4096);

  // A container's /dev/shm that meets its memory limit first, and the
  // size it needs.
  MountUsage c = m;
  c.container.id = std::string(64, 'c');
  c.memory_room = 8ull << 20;
  c.seconds_to_memory_limit = 8.0;
  const json cj = json::parse(mounts_json({c}))["mounts"][0];
  EXPECT_EQ(cj["memory_room_bytes"], 8ull << 20);
  EXPECT_DOUBLE_EQ(cj["seconds_to_memory_limit"].get<double>(), 8.0);
  EXPECT_EQ(cj["oom_before_full"], true);
  EXPECT_EQ(cj["right_size_bytes"], 25ull << 20);
  const auto row = fields_of(lines_of(mounts_table({c}, rel))[1]);
  ASSERT_GE(row.size(), 3u);
  EXPECT_EQ(row[row.size() - 3], "8s");
  EXPECT_EQ(row[row.size() - 2], "(first)");
  EXPECT_EQ(row.back(), "--shm-size=25m");
}

} // namespace
} // namespace shmbpf
