#include "model/apply_scan.hpp"
#include "sources/mountinfo.hpp"
#include "sources/system_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace shmbpf {
namespace {

// A fresh directory under /dev/shm, removed (with anything mounted below it
// unmounted first) when the test ends.
class ShmDir {
public:
  ShmDir() {
    char tmpl[] = "/dev/shm/shmbpf-scan-test-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr)
      path_ = tmpl;
  }
  ShmDir(const ShmDir &) = delete;
  ShmDir &operator=(const ShmDir &) = delete;
  ~ShmDir() {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it)
      ::umount2(it->c_str(), MNT_DETACH);
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string &path() const { return path_; }
  std::string operator/(const std::string &rel) const { return path_ + "/" + rel; }
  void track_mount(std::string p) { mounts_.push_back(std::move(p)); }

private:
  std::string path_;
  std::vector<std::string> mounts_;
};

void write_file(const std::string &path, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  std::string data(size, 'x');
  size_t off = 0;
  while (off < size) {
    ssize_t n = ::write(fd, data.data() + off, size - off);
    ASSERT_GT(n, 0) << path;
    off += static_cast<size_t>(n);
  }
  ::close(fd);
}

std::map<std::string, TmpfsFile> by_path(const std::vector<TmpfsFile> &files) {
  std::map<std::string, TmpfsFile> m;
  for (const auto &f : files)
    m.emplace(f.path, f);
  return m;
}

class TmpfsScan : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty()) << "mkdtemp under /dev/shm failed";
    for (const char *d : {"a", "a/b", "a/b/c", "a/b/c/d"})
      ASSERT_EQ(::mkdir((dir_ / d).c_str(), 0755), 0) << d;
    // Paths relative to dir_ with their sizes; depth as find(1) counts it.
    files_ = {{"top.bin", 4096},           // depth 1
              {"empty.bin", 0},            // depth 1, no pages
              {"we ird\nname", 3},         // depth 1
              {"a/one.bin", 100},          // depth 2
              {"a/b/two.bin", 8193},       // depth 3
              {"a/b/c/three.bin", 1},      // depth 4
              {"a/b/c/d/four.bin", 5000}}; // depth 5
    for (const auto &[rel, size] : files_)
      write_file(dir_ / rel, size);
    // Modes an audit tells apart: world-writable, setuid.
    ASSERT_EQ(::chmod((dir_ / "a/one.bin").c_str(), 0666), 0);
    ASSERT_EQ(::chmod((dir_ / "a/b/two.bin").c_str(), 04711), 0);
    ASSERT_EQ(::link((dir_ / "top.bin").c_str(), (dir_ / "top.hard").c_str()), 0);
    ASSERT_EQ(::symlink("top.bin", (dir_ / "link").c_str()), 0);
    ASSERT_EQ(::symlink("a", (dir_ / "dirlink").c_str()), 0);
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  }

  ShmDir dir_;
  std::vector<std::pair<std::string, size_t>> files_;
};

TEST_F(TmpfsScan, MatchesFstat) {
  auto found = by_path(scan_tmpfs_mount(dir_.path()));
  // The default depth reaches every file, four.bin five levels down too,
  // and the hard link.
  std::vector<std::string> expected = {"top.bin",         "top.hard",        "empty.bin",
                                       "we ird\nname",    "a/one.bin",       "a/b/two.bin",
                                       "a/b/c/three.bin", "a/b/c/d/four.bin"};
  ASSERT_EQ(found.size(), expected.size());
  for (const auto &rel : expected) {
    std::string abs = dir_ / rel;
    auto it = found.find(abs);
    ASSERT_NE(it, found.end()) << rel;
    const TmpfsFile &f = it->second;

    int fd = ::open(abs.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(::fstat(fd, &st), 0);
    ::close(fd);

    EXPECT_EQ(f.dev, kernel_dev(st.st_dev)) << rel;
    EXPECT_EQ(f.ino, st.st_ino) << rel;
    EXPECT_EQ(f.size, static_cast<uint64_t>(st.st_size)) << rel;
    EXPECT_EQ(f.bytes, static_cast<uint64_t>(st.st_blocks) * 512) << rel;
    EXPECT_EQ(f.uid, st.st_uid) << rel;
    EXPECT_EQ(f.mode, st.st_mode & 07777) << rel;
    EXPECT_EQ(f.nlink, st.st_nlink) << rel;
    EXPECT_EQ(f.mtime_s, st.st_mtim.tv_sec) << rel;
    // The birth time where the filesystem gives one, else 0.
    struct statx sx {};
    ASSERT_EQ(::statx(AT_FDCWD, abs.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx), 0);
    const uint64_t btime =
        (sx.stx_mask & STATX_BTIME)
            ? static_cast<uint64_t>(sx.stx_btime.tv_sec) * 1'000'000'000 + sx.stx_btime.tv_nsec
            : 0;
    EXPECT_EQ(f.btime_ns, btime) << rel;
    // The handle only where there is no birth time.
    EXPECT_EQ(f.handle_id, btime ? 0 : file_handle_id(AT_FDCWD, abs.c_str())) << rel;
    EXPECT_EQ(f.leaf, rel.substr(rel.rfind('/') + 1)) << rel;
  }

  EXPECT_EQ(found.at(dir_ / "a/b/two.bin").size, 8193u);
  EXPECT_EQ(found.at(dir_ / "a/one.bin").mode, 0666u);
  EXPECT_EQ(found.at(dir_ / "a/b/two.bin").mode, 04711u);
  EXPECT_GE(found.at(dir_ / "a/b/two.bin").bytes, 8193u);
  EXPECT_GT(found.at(dir_ / "top.bin").bytes, 0u);
  EXPECT_EQ(found.at(dir_ / "empty.bin").bytes, 0u);
  EXPECT_EQ(found.at(dir_ / "top.bin").nlink, 2u);
  EXPECT_EQ(found.at(dir_ / "top.bin").ino, found.at(dir_ / "top.hard").ino);
}

TEST_F(TmpfsScan, SkipsSymlinksAndFifos) {
  for (const auto &f : scan_tmpfs_mount(dir_.path(), 10)) {
    EXPECT_NE(f.leaf, "link");
    EXPECT_NE(f.leaf, "fifo");
    // Nothing reached through the directory symlink.
    EXPECT_EQ(f.path.find("/dirlink/"), std::string::npos) << f.path;
  }
  EXPECT_EQ(scan_tmpfs_mount(dir_.path(), 10).size(), files_.size() + 1);
}

TEST_F(TmpfsScan, HonoursMaxDepth) {
  auto count = [&](int depth) { return scan_tmpfs_mount(dir_.path(), depth).size(); };
  EXPECT_EQ(count(0), 0u);
  EXPECT_EQ(count(-3), 0u);
  EXPECT_EQ(count(1), 4u); // top.bin, top.hard, empty.bin, "we ird\nname"
  EXPECT_EQ(count(2), 5u);
  EXPECT_EQ(count(3), 6u);
  EXPECT_EQ(count(4), 7u);
  EXPECT_EQ(count(5), 8u);
  EXPECT_EQ(count(100), 8u);

  auto shallow = by_path(scan_tmpfs_mount(dir_.path(), 1));
  EXPECT_TRUE(shallow.count(dir_ / "top.bin"));
  EXPECT_FALSE(shallow.count(dir_ / "a/one.bin"));
}

TEST_F(TmpfsScan, HonoursMaxFiles) {
  EXPECT_EQ(scan_tmpfs_mount(dir_.path(), 10, 3).size(), 3u);
  EXPECT_EQ(scan_tmpfs_mount(dir_.path(), 10, 0).size(), 0u);
}

// A limit that leaves files out says so; the defaults leave out nothing of
// a deep tree (a leak once hid five directories down).
TEST_F(TmpfsScan, ReportsWhatLimitsLeftOut) {
  ScanShortfall none, deep, many;
  auto all = scan_tmpfs_dir(dir_.path(), dir_.path(), 0, 100, 1000, &none).value();
  EXPECT_EQ(all.size(), 8u);
  EXPECT_FALSE(none.any());
  auto shallow = scan_tmpfs_dir(dir_.path(), dir_.path(), 0, 1, 1000, &deep).value();
  EXPECT_EQ(shallow.size(), 4u);
  EXPECT_GT(deep.dirs_too_deep, 0u);
  EXPECT_FALSE(deep.file_limit);
  auto few = scan_tmpfs_dir(dir_.path(), dir_.path(), 0, 100, 3, &many).value();
  EXPECT_EQ(few.size(), 3u);
  EXPECT_TRUE(many.file_limit);

  std::string path = dir_.path();
  for (int i = 0; i < 12; ++i) {
    path += "/d" + std::to_string(i);
    ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  }
  const std::string leaf = path + "/x";
  int fd = ::open(leaf.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ScanShortfall defaults;
  auto found = by_path(
      scan_tmpfs_dir(dir_.path(), dir_.path(), 0, kScanMaxDepth, kScanMaxFiles, &defaults).value());
  EXPECT_TRUE(found.count(leaf)) << leaf;
  EXPECT_FALSE(defaults.any());
}

TEST_F(TmpfsScan, TrailingSlashAndMissingDir) {
  auto files = scan_tmpfs_mount(dir_.path() + "/", 1);
  ASSERT_EQ(files.size(), 4u);
  for (const auto &f : files)
    EXPECT_EQ(f.path, dir_ / f.leaf);
  EXPECT_TRUE(scan_tmpfs_mount(dir_ / "does-not-exist").empty());
  EXPECT_TRUE(scan_tmpfs_mount(dir_ / "top.bin").empty());
}

TEST_F(TmpfsScan, DoesNotCrossMounts) {
  std::string inner = dir_ / "a/inner";
  ASSERT_EQ(::mkdir(inner.c_str(), 0755), 0);
  if (::mount("shmbpf-test", inner.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount tmpfs: " << std::strerror(errno);
  dir_.track_mount(inner);
  write_file(inner + "/hidden.bin", 10);

  for (const auto &f : scan_tmpfs_mount(dir_.path(), 10))
    EXPECT_NE(f.leaf, "hidden.bin");
  // Scanning the inner mount itself does see it.
  auto inner_files = scan_tmpfs_mount(inner);
  ASSERT_EQ(inner_files.size(), 1u);
  EXPECT_EQ(inner_files[0].path, inner + "/hidden.bin");
}

// What a kernel without tmpfs btime relies on: the handle tells two files
// apart, and the same inode number on two tmpfs mounts (each numbers its
// files from the same start) apart too, by the inode's generation.
TEST_F(TmpfsScan, AFileHandleTellsFilesApartEvenAtTheSameInodeNumber) {
  write_file(dir_ / "other.bin", 1);
  const uint64_t top = file_handle_id(AT_FDCWD, (dir_ / "top.bin").c_str());
  EXPECT_NE(top, 0u);
  EXPECT_EQ(file_handle_id(AT_FDCWD, (dir_ / "top.bin").c_str()), top);
  EXPECT_EQ(file_handle_id(AT_FDCWD, (dir_ / "top.hard").c_str()), top); // the same inode
  EXPECT_NE(file_handle_id(AT_FDCWD, (dir_ / "other.bin").c_str()), top);
  EXPECT_EQ(file_handle_id(AT_FDCWD, (dir_ / "missing").c_str()), 0u);

  std::vector<std::pair<ino_t, uint64_t>> firsts;
  for (const char *name : {"m1", "m2"}) {
    const std::string mnt = dir_ / name;
    ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
    if (::mount("shmbpf-test", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
      GTEST_SKIP() << "cannot mount tmpfs: " << std::strerror(errno);
    dir_.track_mount(mnt);
    write_file(mnt + "/f", 1);
    struct stat st;
    ASSERT_EQ(::stat((mnt + "/f").c_str(), &st), 0);
    firsts.emplace_back(st.st_ino, file_handle_id(AT_FDCWD, (mnt + "/f").c_str()));
  }
  ASSERT_EQ(firsts[0].first, firsts[1].first) << "two fresh tmpfs numbered their first file apart";
  EXPECT_NE(firsts[0].second, firsts[1].second);
}

TEST_F(TmpfsScan, DevMatchesMountinfo) {
  struct stat st;
  ASSERT_EQ(::stat(dir_.path().c_str(), &st), 0);
  // The topmost mount on /dev/shm is the last one listed.
  const MountInfo *shm = nullptr;
  auto mounts = read_mountinfo(0);
  for (const auto &m : mounts)
    if (m.mountpoint == "/dev/shm")
      shm = &m;
  ASSERT_NE(shm, nullptr);
  EXPECT_TRUE(shm->is_tmpfs());
  EXPECT_EQ(shm->dev, kernel_dev(st.st_dev));
}

TEST(TmpfsScanPerf, ManyFiles) {
  ShmDir dir;
  ASSERT_FALSE(dir.path().empty());
  constexpr int kDirs = 20, kPerDir = 500;
  for (int d = 0; d < kDirs; ++d) {
    std::string sub = dir / ("d" + std::to_string(d));
    ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
    for (int i = 0; i < kPerDir; ++i) {
      int fd =
          ::open((sub + "/f" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0);
      ::close(fd);
    }
  }
  auto files = scan_tmpfs_mount(dir.path());
  EXPECT_EQ(files.size(), static_cast<size_t>(kDirs * kPerDir));
  EXPECT_EQ(scan_tmpfs_mount(dir.path(), kScanMaxDepth, 1234).size(), 1234u);
}

// The listing (no stat) finds exactly the files the full scan finds, keyed
// as the kernel keys them.
TEST_F(TmpfsScan, ListingMatchesScan) {
  for (int depth : {1, 2, 4, 10}) {
    std::vector<SeedKey> want;
    for (const auto &f : scan_tmpfs_mount(dir_.path(), depth))
      want.push_back({shm_name_hash(f.leaf), f.dev, f.ino});
    auto got = list_tmpfs_dir(dir_.path(), 0, depth).value();
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "depth " << depth;
  }
  EXPECT_TRUE(list_tmpfs_dir(dir_.path(), 0, 0).value().empty());
  EXPECT_EQ(list_tmpfs_dir(dir_.path(), 0, 10, 3).value().size(), 3u);
}

// "Cannot be reached" is not "no files": a directory that cannot be opened,
// or that is on another filesystem than the one asked for (a /proc/PID/root
// whose pid is another process's now), gives nothing at all.
TEST_F(TmpfsScan, UnreachableIsNotEmpty) {
  struct stat st {};
  ASSERT_EQ(::stat(dir_.path().c_str(), &st), 0);
  const uint32_t dev = kernel_dev(st.st_dev);
  ASSERT_TRUE(scan_tmpfs_dir(dir_.path(), dir_.path(), dev).has_value());
  EXPECT_EQ(scan_tmpfs_dir(dir_.path(), dir_.path(), dev)->size(),
            scan_tmpfs_mount(dir_.path()).size());
  EXPECT_TRUE(list_tmpfs_dir(dir_.path(), dev).has_value());

  EXPECT_FALSE(scan_tmpfs_dir(dir_ / "does-not-exist", "/x", 0));
  EXPECT_FALSE(list_tmpfs_dir(dir_ / "does-not-exist"));
  EXPECT_FALSE(scan_tmpfs_dir(dir_.path(), dir_.path(), dev + 1));
  EXPECT_FALSE(list_tmpfs_dir(dir_.path(), dev + 1));

  ShmDir empty;
  ASSERT_FALSE(empty.path().empty());
  auto none = scan_tmpfs_dir(empty.path(), empty.path(), dev);
  ASSERT_TRUE(none.has_value()); // reachable, and empty
  EXPECT_TRUE(none->empty());
}

// A namespace whose process has exited cannot be reached through
// /proc/PID/root: its filesystems are left out of the scan (a reconcile then
// leaves their files alone) and its mounts' usage is unknown, while another
// namespace that reaches the same filesystem still scans it.
TEST_F(TmpfsScan, FilesystemsOfAnExitedProcessAreLeftOut) {
  struct stat st {};
  ASSERT_EQ(::stat(dir_.path().c_str(), &st), 0);
  MountInfo m;
  m.mnt_id = 1;
  m.dev = kernel_dev(st.st_dev);
  m.root = "/";
  m.mountpoint = dir_.path();
  m.fstype = "tmpfs";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const MountNamespace gone{1, child, {m}};
  const MountNamespace here{2, ::getpid(), {m}};

  EXPECT_TRUE(scan_filesystems({gone}).empty());
  EXPECT_TRUE(list_filesystems({gone}).empty());
  auto usage = scan_mount_usage({gone});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_FALSE(usage[0].used_known);

  auto fs = scan_filesystems({gone, here});
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].files.size(), scan_tmpfs_mount(dir_.path()).size());
  EXPECT_FALSE(fs[0].files.empty());
  EXPECT_EQ(list_filesystems({gone, here}).size(), fs[0].files.size());
  usage = scan_mount_usage({gone, here});
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_TRUE(usage[0].used_known); // the same filesystem: its usage is known
  EXPECT_TRUE(usage[1].used_known);
  EXPECT_GT(usage[0].used_bytes, 0u);

  // A mount point may be a file (a bind-mounted secret): still measured.
  MountInfo file = m;
  file.mountpoint = dir_ / "top.bin";
  usage = scan_mount_usage({MountNamespace{2, ::getpid(), {file}}});
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_TRUE(usage[0].used_known);
}

TEST_F(TmpfsScan, ShownDirNamesPaths) {
  auto plain = by_path(scan_tmpfs_mount(dir_.path(), 10));
  auto shown = scan_tmpfs_dir(dir_.path(), "/seen/as/", 0, 10).value();
  ASSERT_EQ(shown.size(), plain.size());
  for (const auto &f : shown) {
    ASSERT_TRUE(f.path.starts_with("/seen/as/")) << f.path;
    auto it = plain.find(dir_.path() + f.path.substr(std::strlen("/seen/as")));
    ASSERT_NE(it, plain.end()) << f.path;
    EXPECT_EQ(it->second.ino, f.ino);
    EXPECT_EQ(it->second.size, f.size);
  }
}

// A directory big enough to be stat'ed by two threads: every file once,
// each with its own size.
TEST(TmpfsScanPerf, LargeDirectory) {
  ShmDir dir;
  ASSERT_FALSE(dir.path().empty());
  constexpr int kFiles = 6000;
  for (int i = 0; i < kFiles; ++i) {
    int fd =
        ::open((dir / ("f" + std::to_string(i))).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, i), 0);
    ::close(fd);
  }
  ASSERT_EQ(::mkdir((dir / "sub").c_str(), 0755), 0);
  write_file(dir / "sub/inner", 7);
  auto found = by_path(scan_tmpfs_mount(dir.path()));
  ASSERT_EQ(found.size(), static_cast<size_t>(kFiles + 1));
  for (int i = 0; i < kFiles; ++i) {
    auto it = found.find(dir / ("f" + std::to_string(i)));
    ASSERT_NE(it, found.end()) << i;
    EXPECT_EQ(it->second.size, static_cast<uint64_t>(i));
    EXPECT_EQ(it->second.leaf, "f" + std::to_string(i));
  }
  EXPECT_EQ(found.at(dir / "sub/inner").size, 7u);
  EXPECT_EQ(scan_tmpfs_mount(dir.path(), kScanMaxDepth, 4500).size(), 4500u);
  EXPECT_EQ(list_tmpfs_dir(dir.path()).value().size(), static_cast<size_t>(kFiles + 1));
}

TEST(KernelDev, Encoding) {
  EXPECT_EQ(kernel_dev(makedev(0, 23)), 23u);
  EXPECT_EQ(kernel_dev(makedev(259, 1)), (259u << 20) | 1u);
  EXPECT_EQ(kernel_dev(makedev(8, 0x12345)), (8u << 20) | 0x12345u);
}

TEST(ShmNameHash, Fnv1a64Vectors) {
  EXPECT_EQ(shm_name_hash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(shm_name_hash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(shm_name_hash("foobar"), 0x85944171f73967e8ULL);
  // Bytes are hashed unsigned: a high byte must not sign-extend.
  EXPECT_NE(shm_name_hash("\xff"), shm_name_hash("\x7f"));
  // The whole view is hashed, embedded NULs included.
  EXPECT_NE(shm_name_hash(std::string_view("a\0b", 3)), shm_name_hash("ab"));
}

// A directory large enough to be stat'ed by two threads: the second
// thread's CPU time is counted where callers can add it to their own.
TEST_F(TmpfsScan, CountsTheHelperThreadsCpu) {
  const std::string big = dir_ / "big";
  ASSERT_EQ(::mkdir(big.c_str(), 0755), 0);
  for (int i = 0; i < 5000; ++i) {
    int fd = ::open((big + "/f" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  const auto before = scan_helper_cpu();
  auto files = scan_tmpfs_dir(big, big, 0);
  ASSERT_TRUE(files);
  EXPECT_EQ(files->size(), 5000u);
  if (std::thread::hardware_concurrency() > 1)
    EXPECT_GT(scan_helper_cpu(), before);
  else
    EXPECT_EQ(scan_helper_cpu(), before);
  // A small directory is one thread's work.
  const auto after = scan_helper_cpu();
  const std::string small = dir_ / "a";
  ASSERT_TRUE(scan_tmpfs_dir(small, small, 0));
  EXPECT_EQ(scan_helper_cpu(), after);
}

} // namespace
} // namespace shmbpf
