#include "sources/mountinfo.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {
namespace {

// A hybrid-cgroup host with propagation tags, a bind-mounted tmpfs subtree, an
// escaped mountpoint and an empty source field.
constexpr std::string_view kSample =
    "21 26 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "26 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw,errors=remount-ro\n"
    "24 23 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=65536k,inode64\n"
    "30 22 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,nosuid shared:13 - cgroup2 cgroup2 rw,nsdelegate\n"
    "612 26 0:23 /containers/abc /var/lib/app/shm rw,relatime shared:1 master:2 - tmpfs tmpfs "
    "rw,size=1g\n"
    "700 26 0:50 / /mnt/my\\040data\\011x rw master:7 - tmpfs my\\134src rw,size=4096\n"
    "701 26 0:51 / /mnt/nosrc rw - tmpfs  rw\n"
    "702 26 0:52 / /dev/hugepages rw,relatime shared:30 - hugetlbfs hugetlbfs rw,pagesize=2M\n";

TEST(Mountinfo, ParsesAllFields) {
  auto mounts = parse_mountinfo(kSample);
  ASSERT_EQ(mounts.size(), 11u);

  const MountInfo &shm = mounts[2];
  EXPECT_EQ(shm.mnt_id, 24u);
  EXPECT_EQ(shm.parent_id, 23u);
  EXPECT_EQ(shm.dev, 23u);
  EXPECT_EQ(shm.root, "/");
  EXPECT_EQ(shm.mountpoint, "/dev/shm");
  EXPECT_EQ(shm.fstype, "tmpfs");
  EXPECT_EQ(shm.source, "tmpfs");
  EXPECT_EQ(shm.mount_options, "rw,nosuid,nodev");
  EXPECT_EQ(shm.super_options, "rw,size=65536k,inode64");
  EXPECT_TRUE(shm.is_tmpfs());

  const MountInfo &rootfs = mounts[1];
  EXPECT_EQ(rootfs.dev, (259u << 20) | 1u);
  EXPECT_EQ(rootfs.source, "/dev/nvme0n1p1");
  EXPECT_FALSE(rootfs.is_tmpfs());
}

TEST(Mountinfo, MultipleOptionalFields) {
  auto mounts = parse_mountinfo(kSample);
  ASSERT_EQ(mounts.size(), 11u);
  const MountInfo &bind = mounts[7];
  EXPECT_EQ(bind.mnt_id, 612u);
  EXPECT_EQ(bind.root, "/containers/abc");
  EXPECT_EQ(bind.mountpoint, "/var/lib/app/shm");
  EXPECT_EQ(bind.mount_options, "rw,relatime");
  EXPECT_EQ(bind.fstype, "tmpfs");
  EXPECT_EQ(bind.super_options, "rw,size=1g");
}

TEST(Mountinfo, UnescapesOctal) {
  auto mounts = parse_mountinfo(kSample);
  ASSERT_EQ(mounts.size(), 11u);
  EXPECT_EQ(mounts[8].mountpoint, "/mnt/my data\tx");
  EXPECT_EQ(mounts[8].source, "my\\src");
  EXPECT_EQ(mounts[8].mount_options, "rw");

  auto nl = parse_mountinfo("5 1 0:9 /a\\012b /x\\134y rw - tmpfs t rw\n");
  ASSERT_EQ(nl.size(), 1u);
  EXPECT_EQ(nl[0].root, "/a\nb");
  EXPECT_EQ(nl[0].mountpoint, "/x\\y");

  // A backslash not followed by three octal digits is kept literally.
  auto odd = parse_mountinfo("5 1 0:9 / /a\\9b\\04 rw - tmpfs t rw\n");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].mountpoint, "/a\\9b\\04");
}

TEST(Mountinfo, EmptySourceField) {
  auto mounts = parse_mountinfo(kSample);
  ASSERT_EQ(mounts.size(), 11u);
  EXPECT_EQ(mounts[9].mountpoint, "/mnt/nosrc");
  EXPECT_EQ(mounts[9].fstype, "tmpfs");
  EXPECT_EQ(mounts[9].source, "");
  EXPECT_EQ(mounts[9].super_options, "rw");
}

TEST(Mountinfo, Hugetlbfs) {
  auto mounts = parse_mountinfo(kSample);
  ASSERT_EQ(mounts.size(), 11u);
  EXPECT_TRUE(mounts[10].is_tmpfs());
  EXPECT_FALSE(mounts[10].size_limit()); // pagesize= is not size=
}

TEST(Mountinfo, DevEncoding) {
  auto m = parse_mountinfo("1 0 0:23 / / rw - tmpfs t rw\n"
                           "2 0 259:1 / / rw - ext4 d rw\n"
                           "3 0 4095:1048575 / / rw - ext4 d rw\n"
                           "4 0 4096:0 / / rw - ext4 d rw\n"
                           "5 0 0:1048576 / / rw - ext4 d rw\n");
  ASSERT_EQ(m.size(), 3u); // the out-of-range devs are malformed
  EXPECT_EQ(m[0].dev, 23u);
  EXPECT_EQ(m[1].dev, (259u << 20) | 1u);
  EXPECT_EQ(m[2].dev, 0xffffffffu);
}

TEST(Mountinfo, SizeLimit) {
  // super_options and the limit they give; nullopt: no usable size=.
  const std::pair<const char *, std::optional<uint64_t>> cases[] = {
      {"rw,size=65536k,nr_inodes=1000", 65536ull * 1024},
      {"rw,size=2m", 2ull << 20},
      {"rw,size=3G", 3ull << 30},
      {"size=4096", 4096u},
      {"rw,nr_inodes=10,mode=1777", std::nullopt},
      {"rw,size=50%", std::nullopt},
      {"rw,size=", std::nullopt},
      {"rw,size=99999999999999999999k", std::nullopt},
      {"rw,pagesize=2M", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto &[options, limit] : cases) {
    MountInfo m;
    m.super_options = options;
    EXPECT_EQ(m.size_limit(), limit) << '"' << options << '"';
  }
}

TEST(Mountinfo, FindCgroup2OnHybridHost) {
  auto mounts = parse_mountinfo(kSample);
  EXPECT_EQ(find_cgroup2_mount(mounts), "/sys/fs/cgroup/unified");

  auto v1_only =
      parse_mountinfo("31 30 0:28 / /sys/fs/cgroup/cpu rw shared:10 - cgroup cgroup rw,cpu\n");
  EXPECT_FALSE(find_cgroup2_mount(v1_only));
  EXPECT_FALSE(find_cgroup2_mount({}));
}

TEST(Mountinfo, FindById) {
  auto mounts = parse_mountinfo(kSample);
  const MountInfo *m = find_by_id(mounts, 612);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->mountpoint, "/var/lib/app/shm");
  EXPECT_EQ(find_by_id(mounts, 9999), nullptr);
}

TEST(Mountinfo, SkipsMalformedLines) {
  auto mounts = parse_mountinfo("\n"
                                "garbage\n"
                                "1 2 0:3 / /a rw tmpfs tmpfs rw\n"            // no separator
                                "1 2 0:3 / /a rw - tmpfs tmpfs\n"             // too few after -
                                "1 2 0:3 / /a rw - tmpfs tmpfs rw extra\n"    // too many after -
                                "x 2 0:3 / /a rw - tmpfs tmpfs rw\n"          // bad id
                                "1 2 03 / /a rw - tmpfs tmpfs rw\n"           // bad dev
                                "1 2 0:3x / /a rw - tmpfs tmpfs rw\n"         // bad dev
                                "1 2 0:3 / - - tmpfs tmpfs rw\n"              // separator too early
                                "1 2 0:3 / /a rw -  tmpfs rw\n"               // empty fstype
                                "7 2 0:3 / /ok rw - tmpfs tmpfs rw,size=1k"); // valid, no newline
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].mnt_id, 7u);
  EXPECT_EQ(mounts[0].size_limit(), 1024u);
  EXPECT_TRUE(parse_mountinfo("").empty());
}

TEST(Mountinfo, CrlfLineEndings) {
  auto mounts = parse_mountinfo("1 2 0:3 / /a rw - tmpfs tmpfs rw\r\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].super_options, "rw");
}

// join_mount_path on a mount of root at mountpoint: each in-mount path and
// what it joins to (nullopt: the path is outside root).
void expect_joins(
    const char *root, const char *mountpoint,
    std::initializer_list<std::pair<const char *, std::optional<std::string>>> joins) {
  MountInfo m;
  m.root = root;
  m.mountpoint = mountpoint;
  for (const auto &[in_mount, joined] : joins)
    EXPECT_EQ(join_mount_path(m, in_mount), joined)
        << root << " on " << mountpoint << ", \"" << in_mount << '"';
}

TEST(Mountinfo, JoinMountPathRootSlash) {
  expect_joins("/", "/dev/shm",
               {{"/dir/leaf", "/dev/shm/dir/leaf"},
                {"/leaf", "/dev/shm/leaf"},
                {"/", "/dev/shm"},
                {"", "/dev/shm"},
                {"leaf", "/dev/shm/leaf"}});
}

TEST(Mountinfo, JoinMountPathSubRoot) {
  expect_joins("/sub", "/var/lib/app/shm",
               {{"/sub/dir/leaf", "/var/lib/app/shm/dir/leaf"},
                {"/sub/leaf", "/var/lib/app/shm/leaf"},
                {"/sub", "/var/lib/app/shm"},
                {"/sub/", "/var/lib/app/shm"},
                {"/other/leaf", std::nullopt},
                {"/subdir/leaf", std::nullopt},
                {"/", std::nullopt}});
}

TEST(Mountinfo, JoinMountPathMountpointSlash) {
  expect_joins("/", "/", {{"/dir/leaf", "/dir/leaf"}, {"/", "/"}});
  expect_joins("/sub", "/", {{"/sub/leaf", "/leaf"}, {"/sub", "/"}});
}

TEST(Mountinfo, ReadSelf) {
  auto self = read_mountinfo(0);
  ASSERT_FALSE(self.empty());
  auto root_id = [](const std::vector<MountInfo> &ms) {
    uint32_t id = 0;
    for (const auto &m : ms)
      if (m.mountpoint == "/")
        id = m.mnt_id;
    return id;
  };
  EXPECT_NE(root_id(self), 0u);
  // Other tests mount and unmount concurrently: compare a stable mount, not counts.
  EXPECT_EQ(root_id(read_mountinfo(-1)), root_id(self));
  EXPECT_TRUE(read_mountinfo(0x7ffffffe).empty()); // no such pid
}

} // namespace
} // namespace shmbpf

namespace shmbpf {
namespace {

TEST(Mountinfo, OvermountedMountIsHidden) {
  auto t = parse_mountinfo("24 23 0:22 / /dev/shm rw - tmpfs tmpfs rw,size=100k\n"
                           "29 24 0:26 / /dev/shm rw - tmpfs tmpfs rw,size=200k\n"
                           "30 29 0:27 / /dev/shm/sub rw - tmpfs tmpfs rw\n");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(is_overmounted(t, t[0]));
  EXPECT_FALSE(is_overmounted(t, t[1])); // a mount below it is not on top of it
  EXPECT_FALSE(is_overmounted(t, t[2]));
}

TEST(Mountinfo, SharedMemoryMountpoints) {
  for (const char *mp : {"/dev/shm", "/srv/jail/dev/shm", "/dev/hugepages", "/dev/hugepages1G"})
    EXPECT_TRUE(is_shared_memory_mountpoint(mp)) << mp;
  for (const char *mp : {"/run", "/tmp", "/dev/shmem", "/dev/shm/sub", "",
                         "/var/lib/docker/containers/abc/mounts/shm"})
    EXPECT_FALSE(is_shared_memory_mountpoint(mp)) << mp;
}

// dockerd mounts the /dev/shm of a container started with --ipc=shareable
// on the host (containers/<id>/mounts/shm), and the container sees the same
// tmpfs at /dev/shm: the scan reads it there, though the host's namespace
// comes first. Overmounted mounts are left out; the rest keep their order.
TEST(Mountinfo, ScanOrderReadsSharedMemoryMountpointsFirst) {
  const std::vector<MountNamespace> namespaces = {
      {4026531840u, 10,
       parse_mountinfo("24 23 0:22 / /dev/shm rw - tmpfs tmpfs rw,size=100k\n"
                       "29 23 0:26 / /run rw - tmpfs tmpfs rw\n"
                       "30 24 0:27 / /dev/shm rw - tmpfs tmpfs rw\n"
                       "47 46 0:49 / /var/lib/docker/containers/abc/mounts/shm rw - tmpfs shm "
                       "rw,size=65536k\n"
                       "50 23 0:5 / /proc rw - proc proc rw\n")},
      {4026532174u, 900,
       parse_mountinfo("125 108 0:49 / /dev/shm rw,nosuid - tmpfs shm rw,size=65536k\n"
                       "126 108 0:52 / /dev/hugepages rw - hugetlbfs hugetlbfs rw\n"
                       "127 108 0:53 / /tmp rw - tmpfs tmpfs rw\n")},
  };
  const std::vector<NamespaceMount> order = tmpfs_mounts_in_scan_order(namespaces);
  std::vector<std::pair<uint32_t, int>> got; // (mount id, the namespace's pid)
  for (const NamespaceMount &r : order)
    got.emplace_back(r.mount->mnt_id, r.ns->pid);
  // 47, dockerd's own mount of it, is a runtime's storage: left out.
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, int>>{
                     {30, 10}, {125, 900}, {126, 900}, {29, 10}, {127, 900}}));
}

// `unshare -Urm` by any user, then `mount --bind /run/<dir> /dev/shm`: the
// host's /run is not named /dev/shm for it, in a scan or anywhere. A tmpfs
// the user made there, which no host namespace mounts, is named by them.
TEST(Mountinfo, AForeignNamespaceNamesNoFilesystemTheHostMounts) {
  const std::vector<MountNamespace> namespaces = {
      {4026531841u, 10,
       parse_mountinfo("23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                       "29 23 0:26 / /run rw,nosuid - tmpfs tmpfs rw,size=400m\n"
                       "30 23 0:27 / /dev/shm rw,nosuid - tmpfs tmpfs rw\n"),
       false},
      {4026532999u, 700,
       parse_mountinfo("423 400 8:1 / / rw - ext4 /dev/sda1 rw\n"
                       "429 423 0:26 / /run rw,nosuid - tmpfs tmpfs rw,size=400m\n"
                       "430 423 0:26 /root-only /dev/shm rw,nosuid - tmpfs tmpfs rw\n"
                       "431 423 0:26 / /tmp/x/dev/shm rw,nosuid - tmpfs tmpfs rw\n"
                       "432 423 0:90 / /home/u/dev/shm rw - tmpfs tmpfs rw\n"),
       true},
  };
  std::vector<std::pair<uint32_t, int>> got;
  for (const NamespaceMount &r : naming_tmpfs_mounts(namespaces))
    got.emplace_back(r.mount->mnt_id, r.ns->pid);
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, int>>{{29, 10}, {30, 10}, {432, 700}}));
  got.clear();
  for (const NamespaceMount &r : tmpfs_mounts_in_scan_order(namespaces))
    got.emplace_back(r.mount->mnt_id, r.ns->pid);
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, int>>{{30, 10}, {432, 700}, {29, 10}}));
}

TEST(Mountinfo, ExcludedMountpointsAreMasksStorageAndCredentials) {
  for (const char *mp :
       {"/proc/acpi", "/proc/kcore", "/sys/firmware", "/sys/fs/cgroup", "/proc", "/sys",
        "/run/credentials/getty@tty1.service", "/var/lib/docker/containers/abc/mounts/shm",
        "/var/lib/containers/storage/overlay-containers/x/userdata/shm"})
    EXPECT_TRUE(is_excluded_mountpoint(mp)) << mp;
  for (const char *mp :
       {"/dev/shm", "/run", "/run/credentials", "/tmp", "/var/lib/docker",
        "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/cache", "/srv/proc", "/system"})
    EXPECT_FALSE(is_excluded_mountpoint(mp)) << mp;
}

// The host's view of a container: its root is an overlay mounted at
// <data root>/overlay2/<id>/merged, and what is mounted below it (its
// /dev, its /dev/shm) is the container's, which its own namespace shows
// at /dev/shm. Masks over /proc and /sys and cgroup v1's tmpfs are left out.
TEST(Mountinfo, ReportedTmpfsMountsLeaveOutWhatIsNotShared) {
  const auto t = parse_mountinfo(
      "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "24 23 0:22 / /dev/shm rw - tmpfs tmpfs rw\n"
      "25 23 0:23 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
      "26 23 0:24 / /run rw - tmpfs tmpfs rw\n"
      "40 23 0:40 / /data/docker/overlay2/abc/merged rw - overlay overlay rw,lowerdir=x\n"
      "41 40 0:41 / /data/docker/overlay2/abc/merged/dev rw - tmpfs tmpfs rw\n"
      "42 41 0:42 / /data/docker/overlay2/abc/merged/dev/shm rw - tmpfs shm rw\n"
      // A root that is a directory (Docker's vfs driver): its /dev tells.
      "43 23 0:43 / /data/docker/vfs/dir/def/dev rw - tmpfs tmpfs rw\n"
      "44 43 0:44 / /data/docker/vfs/dir/def/dev/shm rw - tmpfs shm rw\n"
      // A directory of the host's that a sandbox binds at its /dev/shm: kept.
      "45 23 0:45 / /srv/jail/dev/shm rw - tmpfs tmpfs rw\n");
  std::vector<uint32_t> ids;
  for (const MountInfo *m : reported_tmpfs_mounts(t))
    ids.push_back(m->mnt_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{24, 26, 45}));
  // Inside the container, its root is the overlay at /: all reported.
  const auto inside = parse_mountinfo("100 90 0:40 / / rw - overlay overlay rw,lowerdir=x\n"
                                      "101 100 0:41 / /dev rw - tmpfs tmpfs rw\n"
                                      "102 101 0:42 / /dev/shm rw - tmpfs shm rw\n"
                                      "103 100 0:43 / /proc/acpi ro - tmpfs tmpfs ro\n");
  ids.clear();
  for (const MountInfo *m : reported_tmpfs_mounts(inside))
    ids.push_back(m->mnt_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{101, 102}));
}

} // namespace
} // namespace shmbpf
