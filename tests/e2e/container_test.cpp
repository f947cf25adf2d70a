// `shmbpf ls` and `shmbpf leaks` against a simulated docker container: its
// own /dev/shm tmpfs (size=64m) in its own mount namespace, its own IPC and
// PID namespaces, and a docker-<id>.scope cgroup.
#include "container_sim.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

constexpr uint64_t MiB = 1024 * 1024;

std::string devstr(dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); }

// A file made inside the container, as the host sees it.
struct CtrFile {
  std::string name;
  size_t size = 0;
  bool held = false;
  struct stat st {};
  uint64_t bytes() const { return static_cast<uint64_t>(st.st_blocks) * 512; }
};

const json *find_file(const json &segs, const struct stat &st) {
  for (const auto &s : segs)
    if (s["kind"] != "sysv" && s["dev"] == devstr(st.st_dev) && s["ino"] == st.st_ino)
      return &s;
  return nullptr;
}

const json *find_sysv(const json &segs, uint32_t key) {
  for (const auto &s : segs)
    if (s["kind"] == "sysv" && s.value("sysv_key", json()) == key)
      return &s;
  return nullptr;
}

bool has_pid(const json &pids, pid_t pid) {
  return pids.is_array() && std::find(pids.begin(), pids.end(), json(pid)) != pids.end();
}

std::string container_id_of(const json &seg) {
  return seg.contains("container") && seg["container"].is_object()
             ? seg["container"].value("id", std::string())
             : std::string();
}

// A running container holding files (some held by a process inside, one not)
// and a System V segment; the host holds a file of its own in /dev/shm.
class ContainerE2E : public ::testing::Test {
protected:
  void SetUp() override {
    SHMBPF_REQUIRE_ROOT();
    std::string why = ctr_.start();
    ASSERT_EQ(why, "") << "cannot build the simulated container";
    tag_ = "e2e-ctr-" + std::to_string(getpid());
    // Distinct sizes, none a multiple of the page size.
    files_ = {{tag_ + "-a", 1 * MiB + 100, true},
              {tag_ + "-b", 3 * MiB + 5000, true},
              {tag_ + "-c", 5 * MiB + 12345, true},
              {tag_ + "-loose", 256 * 1024 + 7, false}};
    sysv_key_ = 0x5eb00000u | (static_cast<uint32_t>(getpid()) & 0xffffu);

    Shared<int> shmid;
    *shmid = -1;
    const auto files = files_;
    const key_t key = static_cast<key_t>(sysv_key_);
    holder_ = ctr_.spawn([&, files, key] {
      for (const auto &f : files)
        if (f.held && write_shm_file("/dev/shm/" + f.name, f.size) < 0)
          return false;
      *shmid = make_sysv_segment(key, sysv_size, /*attach=*/true);
      return *shmid >= 0;
    });
    ASSERT_GT(holder_, 0) << "the holder could not set up inside the container";
    shmid_ = *shmid;
    for (const auto &f : files_) {
      if (f.held)
        continue;
      int made = ctr_.run([&] {
        int fd = write_shm_file("/dev/shm/" + f.name, f.size);
        return fd < 0 ? 1 : (close(fd), 0);
      });
      ASSERT_EQ(made, 0) << "cannot create " << f.name << " inside the container";
    }
    for (auto &f : files_)
      ASSERT_EQ(stat(ctr_.host_path("/dev/shm/" + f.name).c_str(), &f.st), 0) << f.name;

    // Named unlike the container's files, so that their globs never match it.
    host_file_ = "/dev/shm/e2e-hostfile-" + std::to_string(getpid());
    int fd = write_shm_file(host_file_, 128 * 1024 + 3);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(stat(host_file_.c_str(), &host_st_), 0);
  }

  void TearDown() override {
    if (!host_file_.empty())
      unlink(host_file_.c_str());
    ctr_.stop();
  }

  uint64_t file_bytes() const {
    uint64_t sum = 0;
    for (const auto &f : files_)
      sum += f.bytes();
    return sum;
  }

  static constexpr size_t sysv_size = 2 * MiB + 4096;
  ContainerSim ctr_;
  std::string tag_;
  std::vector<CtrFile> files_;
  uint32_t sysv_key_ = 0;
  int shmid_ = -1;
  pid_t holder_ = -1;
  std::string host_file_;
  struct stat host_st_ {};
};

TEST_F(ContainerE2E, SegmentsAreAttributedToTheContainer) {
  auto r = run_shmbpf("ls --json");
  ASSERT_EQ(r.code, 0) << r.err;
  json segs = r.json()["segments"];
  ASSERT_TRUE(segs.is_array()) << r.out;

  for (const auto &f : files_) {
    SCOPED_TRACE(f.name);
    const json *s = find_file(segs, f.st);
    ASSERT_NE(s, nullptr) << "container file missing from ls";
    EXPECT_EQ((*s)["kind"], "tmpfs");
    EXPECT_EQ((*s)["state"], "linked");
    EXPECT_TRUE((*s)["path"].get<std::string>().ends_with("/dev/shm/" + f.name)) << (*s)["path"];
    EXPECT_EQ((*s)["mount"], "/dev/shm");
    EXPECT_EQ((*s)["size"], f.size);
    EXPECT_EQ((*s)["bytes"], f.bytes());
    EXPECT_GE(f.bytes(), f.size); // every page was written
    ASSERT_TRUE((*s)["container"].is_object()) << *s;
    EXPECT_EQ((*s)["container"]["id"], ctr_.id());
    EXPECT_EQ((*s)["container"]["runtime"], "docker");
    EXPECT_EQ(has_pid((*s)["holders"], holder_), f.held) << *s;
    EXPECT_EQ((*s)["orphan"], false) << "younger than the default --min-age of 60 s";
  }

  // The host's own /dev/shm is another filesystem, attributed to the host.
  const json *h = find_file(segs, host_st_);
  ASSERT_NE(h, nullptr) << host_file_;
  EXPECT_TRUE((*h)["container"].is_null()) << *h;
  EXPECT_NE(host_st_.st_dev, files_[0].st.st_dev);

  // The SysV segment lives in the container's IPC namespace.
  const json *sv = find_sysv(segs, sysv_key_);
  ASSERT_NE(sv, nullptr) << "SysV segment of the container's IPC namespace missing";
  EXPECT_EQ((*sv)["shmid"], shmid_);
  EXPECT_EQ((*sv)["ipcns"], ctr_.ipcns());
  EXPECT_EQ((*sv)["size"], sysv_size);
  EXPECT_EQ((*sv)["bytes"], sysv_size);
  EXPECT_TRUE(has_pid((*sv)["holders"], holder_)) << *sv;
  EXPECT_EQ(container_id_of(*sv), ctr_.id()) << *sv;
  // /proc/sysvipc/shm names the creator even for a scan: the holder made it.
  ASSERT_TRUE((*sv)["creator"].is_object()) << *sv;
  EXPECT_EQ((*sv)["creator"]["pid"], holder_) << *sv;
  EXPECT_EQ((*sv)["creator"]["comm"], "shmbpf-ctr-proc") << *sv;
  EXPECT_EQ((*sv)["creator"]["exited"], false) << *sv;
}

TEST_F(ContainerE2E, ContainerFilterSelectsOnlyItsSegments) {
  auto r = run_shmbpf("ls --json --container " + ctr_.id().substr(0, 12));
  ASSERT_EQ(r.code, 0) << r.err;
  json segs = r.json()["segments"];
  ASSERT_TRUE(segs.is_array()) << r.out;
  for (const auto &s : segs)
    EXPECT_EQ(container_id_of(s), ctr_.id()) << s;
  for (const auto &f : files_)
    EXPECT_NE(find_file(segs, f.st), nullptr) << f.name;
  EXPECT_NE(find_sysv(segs, sysv_key_), nullptr);
  EXPECT_EQ(find_file(segs, host_st_), nullptr);

  auto host = run_shmbpf("ls --json --container host --match '*e2e-hostfile-" +
                         std::to_string(getpid()) + "'");
  ASSERT_EQ(host.code, 0) << host.err;
  json hs = host.json()["segments"];
  ASSERT_EQ(hs.size(), 1u) << host.out;
  EXPECT_EQ(hs[0]["ino"], host_st_.st_ino);

  // -p selects what the holder holds: its three files and the SysV segment.
  auto byp = run_shmbpf("ls --json -p " + std::to_string(holder_));
  ASSERT_EQ(byp.code, 0) << byp.err;
  json ps = byp.json()["segments"];
  size_t held = 0;
  for (const auto &f : files_)
    held += f.held;
  EXPECT_EQ(ps.size(), held + 1) << "the held files and the SysV segment: " << byp.out;
}

TEST_F(ContainerE2E, ProcessesAndContainerTotals) {
  std::vector<pid_t> members = ctr_.pids();
  ASSERT_EQ(members.size(), 2u) << "init and the holder";

  // Processes with shared memory are listed: the holder, not init.
  auto procs = run_shmbpf("ls --by process --json");
  ASSERT_EQ(procs.code, 0) << procs.err;
  const json processes = procs.json()["processes"];
  for (pid_t pid : members) {
    SCOPED_TRACE(pid);
    bool found = false;
    for (const auto &p : processes)
      if (p["pid"] == pid) {
        found = true;
        ASSERT_TRUE(p["container"].is_object()) << p;
        EXPECT_EQ(p["container"]["id"], ctr_.id());
        EXPECT_EQ(p["container"]["runtime"], "docker");
        EXPECT_EQ(p["mntns"], ctr_.mntns());
        EXPECT_GT(p["segments_held"], 0) << p;
      }
    EXPECT_EQ(found, pid == holder_) << processes.size() << " processes listed:\n" << procs.out;
  }

  auto ctrs = run_shmbpf("ls --by container --json");
  ASSERT_EQ(ctrs.code, 0) << ctrs.err;
  const json *c = nullptr;
  bool host_seen = false;
  json list = ctrs.json()["containers"];
  for (const auto &e : list) {
    if (e["id"] == ctr_.id())
      c = &e;
    host_seen |= e["id"] == "" || e.value("host", false);
  }
  ASSERT_NE(c, nullptr) << ctrs.out;
  EXPECT_TRUE(host_seen) << "the host is a separate entry";
  EXPECT_EQ((*c)["runtime"], "docker");
  EXPECT_TRUE((*c)["pod_uid"].is_null());
  EXPECT_EQ((*c)["processes"], members.size());
  EXPECT_EQ((*c)["segments"], files_.size() + 1) << "four files and one SysV segment";
  EXPECT_EQ((*c)["bytes"], file_bytes() + sysv_size);
}

// A tmpfs the host unmounts after a container started (another container's
// /dev/shm, which docker mounts on the host) is not the container's: like a
// runtime's, the simulated container keeps no copy of the host's tmpfs
// mounts, which would keep it alive and reachable from its namespace only.
TEST(ContainerSimulation, HostTmpfsUnmountedLaterIsNotTheContainers) {
  SHMBPF_REQUIRE_ROOT();
  char dir[] = "/tmp/shmbpf-e2e-hosttmpfs-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(mount("e2e", dir, "tmpfs", 0, "size=1m"), 0) << std::strerror(errno);
  const std::string name = "e2e-gone-" + std::to_string(getpid());
  int fd = write_shm_file(std::string(dir) + "/" + name, 3);
  ASSERT_GE(fd, 0);
  close(fd);
  ContainerSim ctr;
  const std::string why = ctr.start();
  // The directory stays: removing it would take the copies with it.
  ASSERT_EQ(umount2(dir, MNT_DETACH), 0);
  ASSERT_EQ(why, "");

  auto r = run_shmbpf("ls --by container --json");
  ASSERT_EQ(r.code, 0) << r.err;
  bool found = false;
  const json containers = r.json()["containers"];
  for (const auto &c : containers)
    if (c["id"] == ctr.id()) {
      found = true;
      EXPECT_EQ(c["segments"], 0) << c;
    }
  EXPECT_TRUE(found) << r.out;
  auto all = run_shmbpf("ls --json");
  ASSERT_EQ(all.code, 0) << all.err;
  const json segments = all.json()["segments"];
  for (const auto &s : segments) {
    if (s["path"].is_string()) {
      EXPECT_EQ(s["path"].get<std::string>().find(name), std::string::npos) << s;
    }
  }
  ctr.stop();
  rmdir(dir);
}

TEST_F(ContainerE2E, MountHasTheLimitAndUsage) {
  struct statvfs vfs {};
  ASSERT_EQ(statvfs(ctr_.host_path("/dev/shm").c_str(), &vfs), 0);
  const uint64_t used = (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
  ASSERT_EQ(used, file_bytes()) << "only our files live on the container's tmpfs";

  auto r = run_shmbpf("ls --by mount --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const uint32_t own_mntns = ns_inode("/proc/self/ns/mnt");
  const json *ctr_mount = nullptr, *host_mount = nullptr;
  json mounts = r.json()["mounts"];
  for (const auto &m : mounts) {
    if (m["mountpoint"] != "/dev/shm")
      continue;
    if (m["mntns"] == ctr_.mntns())
      ctr_mount = &m;
    else if (m["mntns"] == own_mntns)
      host_mount = &m;
  }
  ASSERT_NE(ctr_mount, nullptr) << r.out;
  ASSERT_NE(host_mount, nullptr) << "the host's /dev/shm is its own entry: " << r.out;
  EXPECT_EQ((*ctr_mount)["size_bytes"], 64 * MiB);
  EXPECT_EQ((*ctr_mount)["used_bytes"], used);
  ASSERT_TRUE((*ctr_mount)["percent"].is_number()) << *ctr_mount;
  const double expect = 100.0 * static_cast<double>(used) / static_cast<double>(64 * MiB);
  EXPECT_NEAR((*ctr_mount)["percent"].get<double>(), expect, 0.01) << *ctr_mount;
  EXPECT_EQ((*ctr_mount)["dev"], devstr(files_[0].st.st_dev));
  EXPECT_EQ((*host_mount)["dev"], devstr(host_st_.st_dev));

  auto only = run_shmbpf("ls --json --mount /dev/shm --container " + ctr_.id());
  ASSERT_EQ(only.code, 0) << only.err;
  json segs = only.json()["segments"];
  EXPECT_EQ(segs.size(), files_.size()) << "the SysV segment is on no mount: " << only.out;
}

TEST_F(ContainerE2E, FilesLeftBehindAreTheContainersOrphans) {
  const std::string glob = "'*" + tag_ + "-*'";
  // Fresh files are not leaks under the default --min-age (60 s).
  auto fresh = run_shmbpf("leaks --match " + glob);
  EXPECT_EQ(fresh.code, 0) << fresh.out << fresh.err;

  // Before the holder dies only the loose file has no holder.
  auto before = run_shmbpf("leaks --min-age 0 --json --match " + glob);
  ASSERT_EQ(before.code, 1) << before.out << before.err;
  json jb = before.json();
  ASSERT_EQ(jb["orphans"].size(), 1u) << before.out;
  EXPECT_EQ(jb["orphans"][0]["ino"], files_[3].st.st_ino);

  ASSERT_TRUE(ctr_.kill(holder_));
  auto r = run_shmbpf("leaks --min-age 0 --json --match " + glob);
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  json j = r.json();
  ASSERT_TRUE(j["orphans"].is_array()) << r.out;
  std::set<uint64_t> want, got;
  for (const auto &f : files_)
    want.insert(f.st.st_ino);
  for (const auto &o : j["orphans"]) {
    got.insert(o["ino"].get<uint64_t>());
    EXPECT_EQ(o["orphan"], true) << o;
    EXPECT_EQ(o["dev"], devstr(files_[0].st.st_dev)) << o;
    EXPECT_EQ(container_id_of(o), ctr_.id()) << o;
    EXPECT_TRUE(o["holders"].empty()) << o;
  }
  EXPECT_EQ(got, want) << r.out;
  EXPECT_EQ(j["orphan_count"], files_.size());
  EXPECT_EQ(j["orphan_bytes"], file_bytes());

  ASSERT_TRUE(j["by_container"].is_array()) << r.out;
  ASSERT_EQ(j["by_container"].size(), 1u) << r.out;
  const json &bc = j["by_container"][0];
  ASSERT_TRUE(bc["container"].is_object()) << bc;
  EXPECT_EQ(bc["container"]["id"], ctr_.id());
  EXPECT_EQ(bc["container"]["runtime"], "docker");
  EXPECT_EQ(bc["count"], files_.size());
  EXPECT_EQ(bc["bytes"], file_bytes());

  ASSERT_EQ(j["by_mount"].size(), 1u) << r.out;
  EXPECT_EQ(j["by_mount"][0]["mount"], "/dev/shm");
  EXPECT_EQ(j["by_mount"][0]["count"], files_.size());
  EXPECT_EQ(j["by_mount"][0]["bytes"], file_bytes());

  // The SysV segment nobody removed is an orphan of the container too.
  char sysv_name[32];
  std::snprintf(sysv_name, sizeof sysv_name, "SYSV%08x", sysv_key_);
  auto sv = run_shmbpf(std::string("leaks --min-age 0 --json --match '*") + sysv_name + "'");
  ASSERT_EQ(sv.code, 1) << sv.out << sv.err;
  json jsv = sv.json();
  ASSERT_EQ(jsv["orphans"].size(), 1u) << sv.out;
  EXPECT_EQ(jsv["orphans"][0]["shmid"], shmid_);
  EXPECT_EQ(container_id_of(jsv["orphans"][0]), ctr_.id());
  EXPECT_EQ(jsv["orphan_bytes"], sysv_size);

  // Nothing matches: no leak.
  auto none = run_shmbpf("leaks --min-age 0 --match '*" + tag_ + "-no-such-file*'");
  EXPECT_EQ(none.code, 0) << none.out << none.err;
  auto nonej = run_shmbpf("leaks --min-age 0 --json --match '*" + tag_ + "-no-such-file*'");
  EXPECT_EQ(nonej.code, 0);
  EXPECT_EQ(nonej.json()["orphan_count"], 0);
  EXPECT_EQ(nonej.json()["orphans"].size(), 0u);

  auto bad = run_shmbpf("leaks --min-age not-a-number");
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
}

} // namespace
} // namespace shmbpf::test
