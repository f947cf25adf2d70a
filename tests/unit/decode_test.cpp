#include "decode/decode.hpp"

#include <linux/types.h>

#include "shmbpf_events.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace shmbpf {
namespace {

// A record of type Rec as the kernel sends it: the header's type, ABI
// version and size set, everything else zero.
template <class Rec> Rec record(uint8_t type) {
  Rec r{};
  r.hdr.type = type;
  r.hdr.abi = SHMBPF_ABI_VERSION;
  r.hdr.size = sizeof(r);
  return r;
}

// Sets a record's char array to text, NULs inside it included, and zeroes
// the rest; returns the bytes text took with its final NUL.
template <size_t Cap, size_t N> uint16_t put(char (&field)[Cap], const char (&text)[N]) {
  static_assert(N <= Cap);
  std::memset(field, 0, Cap);
  std::memcpy(field, text, N);
  return N;
}

// The path as passed: path_len leaves the final NUL out.
template <class Rec, size_t N> void set_path(Rec &r, const char (&path)[N]) {
  r.path_len = put(r.path, path) - 1;
}

// The inode's in-mount components, leaf first: comp_len counts every NUL.
template <size_t N> void set_components(shmbpf_file_event &r, const char (&comps)[N]) {
  r.comp_len = put(r.components, comps);
}

shmbpf_file_event file_record(uint8_t type) {
  auto r = record<shmbpf_file_event>(type);
  r.hdr.pid = 42;
  r.hdr.tid = 43;
  r.hdr.ppid = 1;
  r.hdr.uid = 1000;
  r.hdr.ts_ns = 123456789;
  r.hdr.mntns = 4026531841u;
  r.hdr.ipcns = 4026531839u;
  r.hdr.cgroup_id = 77;
  r.hdr.ret = 3;
  put(r.hdr.comm, "python3");
  r.dev = (0u << 20) | 26;
  r.mnt_id = 31;
  r.ino = 110230;
  r.size = 8192;
  r.bytes = 4096;
  r.flags = 0x80042;
  r.mode = 0600;
  r.fd = 3;
  r.origin = SHMBPF_ORIG_OPENAT;
  r.fs = SHMBPF_FS_TMPFS;
  r.flags_ev = SHMBPF_F_NEW | SHMBPF_F_MNT_ROOT;
  set_path(r, "/dev/shm/torch_1_2_3");
  // leaf first: "torch_1_2_3\0sub\0" -> "/sub/torch_1_2_3"
  set_components(r, "torch_1_2_3\0sub");
  r.ncomp = 2;
  return r;
}

TEST(Decode, FileEventFields) {
  auto r = file_record(SHMBPF_EV_CREATE);
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok()) << res.error();
  const Event &e = res.value();
  EXPECT_EQ(e.type, EventType::create);
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.origin, Origin::openat);
  EXPECT_EQ(e.pid, 42u);
  EXPECT_EQ(e.tid, 43u);
  EXPECT_EQ(e.ppid, 1u);
  EXPECT_EQ(e.uid, 1000u);
  EXPECT_EQ(e.ts_ns, 123456789u);
  EXPECT_EQ(e.mntns, 4026531841u);
  EXPECT_EQ(e.ipcns, 4026531839u);
  EXPECT_EQ(e.cgroup_id, 77u);
  EXPECT_EQ(e.ret, 3);
  EXPECT_EQ(e.err, 0);
  EXPECT_EQ(e.comm, "python3");
  EXPECT_EQ(dev_string(e.dev), "0:26");
  EXPECT_EQ(e.mnt_id, 31u);
  EXPECT_EQ(e.ino, 110230u);
  EXPECT_EQ(e.size, 8192u);
  EXPECT_EQ(e.bytes, 4096u);
  EXPECT_EQ(e.fd, 3);
  EXPECT_TRUE(e.is_new);
  EXPECT_FALSE(e.truncated);
  EXPECT_EQ(e.path, "/dev/shm/torch_1_2_3");
  EXPECT_EQ(e.name, "/sub/torch_1_2_3");
}

TEST(Decode, MemfdNameIsTheDentryName) {
  auto r = file_record(SHMBPF_EV_MEMFD_CREATE);
  set_components(r, "memfd:cuda");
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->kind, Kind::memfd);
  EXPECT_EQ(res->name, "memfd:cuda");
}

TEST(Decode, ALightMemfdIsNamedFromItsArgument) {
  auto r = record<shmbpf_file_event>(SHMBPF_EV_MEMFD_CREATE);
  r.fd = -1;
  r.origin = SHMBPF_ORIG_MEMFD_CREATE;
  r.path_len = put(r.path, "torch-shm") - 1;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->name, "memfd:torch-shm"); // no dentry yet: no components
  EXPECT_EQ(res->kind, Kind::memfd);

  // A name as long as the record holds is longer than the kernel takes
  // (249 bytes): the dentry's name is cut where the kernel's would be.
  std::memset(r.path, 'n', sizeof(r.path));
  r.path_len = sizeof(r.path);
  res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->name, "memfd:" + std::string(249, 'n'));
}

TEST(Decode, ResizeOfSysvInodeIsSysv) {
  auto r = file_record(SHMBPF_EV_RESIZE);
  set_components(r, "SYSV0000abcd");
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->kind, Kind::sysv);
}

// A light hook's first resize after the file's create: the inode alone,
// flagged, for the resolver to name from the create.
TEST(Decode, AResizeAfterItsCreateIsFlagged) {
  auto r = file_record(SHMBPF_EV_RESIZE);
  r.mnt_id = 0;
  r.ncomp = 0;
  r.comp_len = 0;
  std::memset(r.components, 0, sizeof(r.components));
  r.flags_ev = 0; // as a truncate's: no walk, so no mount root reached
  auto plain = decode_event(&r, sizeof(r));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->create_sent);
  r.flags_ev = SHMBPF_F_CREATE_SENT;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_TRUE(res->create_sent);
  EXPECT_FALSE(res->path_from_model); // the resolver's to say
  EXPECT_EQ(res->kind, Kind::tmpfs);
  EXPECT_EQ(res->mnt_id, 0u);
  EXPECT_EQ(res->name, "");
}

// A light hook's record timed by the file's ctime says so, in a file
// record and in a path record alike; the time itself is kept as sent.
TEST(Decode, ARecordTimedByTheCtimeIsFlagged) {
  auto f = file_record(SHMBPF_EV_RESIZE);
  f.hdr.ts_ns = 5'000'000'123;
  auto plain = decode_event(&f, sizeof(f));
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_FALSE(plain->ts_from_ctime);
  f.flags_ev = SHMBPF_F_CTIME_TS | SHMBPF_F_CREATE_SENT;
  auto timed = decode_event(&f, sizeof(f));
  ASSERT_TRUE(timed.ok()) << timed.error();
  EXPECT_TRUE(timed->ts_from_ctime);
  EXPECT_TRUE(timed->create_sent);
  EXPECT_EQ(timed->ts_ns, 5'000'000'123u);

  auto p = record<shmbpf_path_event>(SHMBPF_EV_UNLINK);
  p.origin = SHMBPF_ORIG_UNLINK;
  p.flags_ev = SHMBPF_F_ABSOLUTE | SHMBPF_F_EXACT_HINT;
  set_path(p, "/dev/shm/x");
  auto untimed = decode_event(&p, sizeof(p));
  ASSERT_TRUE(untimed.ok()) << untimed.error();
  EXPECT_FALSE(untimed->ts_from_ctime);
  p.flags_ev |= SHMBPF_F_CTIME_TS;
  auto ul = decode_event(&p, sizeof(p));
  ASSERT_TRUE(ul.ok()) << ul.error();
  EXPECT_TRUE(ul->ts_from_ctime);
  EXPECT_TRUE(ul->exact_hint);
}

TEST(Decode, NegativeRetBecomesErrno) {
  auto r = file_record(SHMBPF_EV_RESIZE);
  r.hdr.ret = -28;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->err, 28);
}

// Found by the decode fuzzer: -INT32_MIN overflowed. Only the kernel's
// errno range is an errno.
TEST(Decode, RetBelowErrnoRangeIsNoErrno) {
  auto r = file_record(SHMBPF_EV_RESIZE);
  r.hdr.ret = INT32_MIN;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->ret, INT32_MIN);
  EXPECT_EQ(res->err, 0);
  r.hdr.ret = -4096;
  EXPECT_EQ(decode_event(&r, sizeof(r))->err, 0);
  r.hdr.ret = -4095;
  EXPECT_EQ(decode_event(&r, sizeof(r))->err, 4095);
}

TEST(Decode, RejectsShortRecord) {
  auto r = file_record(SHMBPF_EV_CREATE);
  auto res = decode_event(&r, sizeof(shmbpf_hdr) - 1);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().find("shorter than the header"), std::string::npos);
}

TEST(Decode, RejectsWrongAbiVersion) {
  auto r = file_record(SHMBPF_EV_CREATE);
  r.hdr.abi = SHMBPF_ABI_VERSION + 1;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().find("ABI version"), std::string::npos);
}

TEST(Decode, RejectsWrongSizeForType) {
  auto r = file_record(SHMBPF_EV_CREATE);
  r.hdr.size = sizeof(shmbpf_sysv_event);
  EXPECT_FALSE(decode_event(&r, sizeof(r)).ok());
  // The header claims the full size but the record is cut.
  r.hdr.size = sizeof(r);
  EXPECT_FALSE(decode_event(&r, sizeof(r) - 8).ok());
}

// A record that ends early (the light hooks' records): sent as the first
// size bytes of a buffer whose tail holds what an earlier record left.
template <class Rec> std::vector<unsigned char> cut_record(Rec r, size_t size) {
  r.hdr.size = static_cast<__u16>(size);
  std::vector<unsigned char> bytes(sizeof(r), 'Z');
  std::memcpy(bytes.data(), &r, size);
  return bytes;
}

TEST(Decode, ARecordThatEndsEarlyReadsItsTailAsEmpty) {
  auto f = file_record(SHMBPF_EV_RESIZE);
  f.path_len = 0;
  const auto resize = cut_record(f, offsetof(shmbpf_file_event, components) + f.comp_len);
  auto r = decode_event(resize.data(), offsetof(shmbpf_file_event, components) + f.comp_len);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->name, "/sub/torch_1_2_3");
  EXPECT_EQ(r->path, "");

  auto p = record<shmbpf_path_event>(SHMBPF_EV_UNLINK);
  set_path(p, "/dev/shm/x");
  p.newpath_len = 0;
  p.start_comp_len = 0;
  const size_t size = offsetof(shmbpf_path_event, path) + p.path_len;
  const auto unlink = cut_record(p, size);
  // The length handed over is the record's, not the buffer's.
  auto u = decode_event(unlink.data(), size);
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_EQ(u->path, "/dev/shm/x");
  EXPECT_EQ(u->newpath, "");
  EXPECT_EQ(u->start_dir, "");
}

TEST(Decode, RejectsARecordCutInsideItsFixedFields) {
  auto p = record<shmbpf_path_event>(SHMBPF_EV_UNLINK);
  const auto cut = cut_record(p, offsetof(shmbpf_path_event, path) - 1);
  auto r = decode_event(cut.data(), cut.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("expected 128 to 896"), std::string::npos) << r.error();
  // Nor may a record claim more than its struct.
  auto f = file_record(SHMBPF_EV_CREATE);
  f.hdr.size = sizeof(f) + 8;
  std::vector<unsigned char> big(sizeof(f) + 8);
  std::memcpy(big.data(), &f, sizeof(f));
  EXPECT_FALSE(decode_event(big.data(), big.size()).ok());
  // Every other record keeps its one size.
  EXPECT_EQ(record_min_size(SHMBPF_EV_SHMGET), sizeof(shmbpf_sysv_event));
  EXPECT_EQ(record_min_size(SHMBPF_EV_RESIZE), offsetof(shmbpf_file_event, components));
}

TEST(Decode, EveryTypeHasItsWholeAndLeastSize) {
  for (int t = 1; t < SHMBPF_EV_MAX; ++t) {
    const auto type = static_cast<uint8_t>(t);
    SCOPED_TRACE(t);
    EXPECT_GE(record_min_size(type), sizeof(shmbpf_hdr));
    EXPECT_LE(record_min_size(type), record_size(type));
  }
  // Only file and path records end early.
  EXPECT_EQ(record_min_size(SHMBPF_EV_CREATE_BY_PATH), offsetof(shmbpf_path_event, path));
  EXPECT_EQ(record_size(SHMBPF_EV_CREATE_BY_PATH), sizeof(shmbpf_path_event));
  EXPECT_EQ(record_min_size(SHMBPF_EV_SIGBUS), sizeof(shmbpf_sigbus_event));
  EXPECT_EQ(record_min_size(SHMBPF_EV_EXEC), sizeof(shmbpf_exec_event));
  EXPECT_EQ(record_min_size(SHMBPF_EV_OOM), sizeof(shmbpf_oom_event));
  EXPECT_EQ(record_size(0), 0u);
  EXPECT_EQ(record_min_size(0), 0u);
  EXPECT_EQ(record_size(SHMBPF_EV_MAX), 0u);
  EXPECT_EQ(record_min_size(SHMBPF_EV_MAX), 0u);
}

TEST(Decode, RejectsUnknownType) {
  auto r = file_record(SHMBPF_EV_CREATE);
  r.hdr.type = SHMBPF_EV_MAX;
  auto res = decode_event(&r, sizeof(r));
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().find("unknown event type"), std::string::npos);
}

TEST(Decode, UnterminatedStringsStayInBounds) {
  auto r = file_record(SHMBPF_EV_CREATE);
  std::memset(r.hdr.comm, 'A', sizeof(r.hdr.comm));
  std::memset(r.path, 'B', sizeof(r.path));
  r.path_len = 0xffff; // lies: must be clamped
  auto res = decode_event(&r, sizeof(r));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->comm, std::string(16, 'A'));
  EXPECT_EQ(res->path, std::string(SHMBPF_PATH_LEN, 'B'));
}

TEST(Decode, SysvAndProcessEvents) {
  auto s = record<shmbpf_sysv_event>(SHMBPF_EV_SHMGET);
  s.shmid = 5;
  s.key = 0x1234;
  s.size = 1 << 20;
  s.created = 1;
  auto res = decode_event(&s, sizeof(s));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->kind, Kind::sysv);
  EXPECT_EQ(res->shmid, 5);
  EXPECT_EQ(res->key, 0x1234u);
  EXPECT_EQ(res->arg_size, 1u << 20);
  EXPECT_EQ(res->created, 1);

  auto x = record<shmbpf_exit_event>(SHMBPF_EV_EXIT);
  x.exit_code = 9;
  auto xe = decode_event(&x, sizeof(x));
  ASSERT_TRUE(xe.ok());
  EXPECT_EQ(xe->type, EventType::exit);
  EXPECT_EQ(xe->kind, Kind::none);
  EXPECT_EQ(xe->exit_code, 9u);
}

TEST(Decode, AnOomKillWithTheVictimsMemory) {
  auto r = record<shmbpf_oom_event>(SHMBPF_EV_OOM);
  r.hdr.pid = 42;
  put(r.hdr.comm, "python3");
  r.victim_pid = 43;
  r.victim_uid = 1000;
  r.flags_ev = SHMBPF_F_OOM_VICTIM_MEM | SHMBPF_F_OOM_SCORE_ADJ;
  r.oom_score_adj = -500;
  r.total_vm_kb = 100;
  r.anon_rss_kb = 10;
  r.file_rss_kb = 20;
  r.shmem_rss_kb = 30;
  put(r.victim_comm, "worker");
  auto e = decode_event(&r, sizeof(r));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->type, EventType::oom);
  EXPECT_EQ(e->kind, Kind::none);
  EXPECT_EQ(e->pid, 42u);
  EXPECT_EQ(e->target_pid, 43u);
  EXPECT_TRUE(e->victim_mem);
  EXPECT_EQ(e->target_comm, "worker");
  EXPECT_EQ(e->target_uid, 1000u);
  EXPECT_EQ(e->victim_total_vm, 100u * 1024);
  EXPECT_EQ(e->victim_anon_rss, 10u * 1024);
  EXPECT_EQ(e->victim_file_rss, 20u * 1024);
  EXPECT_EQ(e->victim_shmem_rss, 30u * 1024);
  EXPECT_EQ(e->oom_score_adj, -500);
  EXPECT_FALSE(e->memcg); // the session's to read
}

// The tracepoint names the victim task by its thread id: when it is the
// current task, the record's process is the victim.
TEST(Decode, AnOomKillOfTheCurrentThreadNamesItsProcess) {
  auto r = record<shmbpf_oom_event>(SHMBPF_EV_OOM);
  r.hdr.pid = 42;
  r.hdr.tid = 44;
  r.victim_pid = 44;
  auto e = decode_event(&r, sizeof(r));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->target_pid, 42u);
  r.victim_pid = 45; // another task: as the kernel named it
  e = decode_event(&r, sizeof(r));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->target_pid, 45u);
}

TEST(Decode, AnOomKillOfAKernelThatGivesThePidAlone) {
  auto r = record<shmbpf_oom_event>(SHMBPF_EV_OOM);
  r.victim_pid = 43;
  // Set but not flagged: nothing the kernel vouched for.
  r.shmem_rss_kb = 30;
  put(r.victim_comm, "stale");
  auto e = decode_event(&r, sizeof(r));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->target_pid, 43u);
  EXPECT_FALSE(e->victim_mem);
  EXPECT_EQ(e->target_comm, "");
  EXPECT_EQ(e->victim_shmem_rss, 0u);
  EXPECT_FALSE(e->oom_score_adj);
}

TEST(Decode, ExecNamesTheProgramItLoaded) {
  auto r = record<shmbpf_exec_event>(SHMBPF_EV_EXEC);
  r.old_pid = 7;
  r.filename_len = put(r.filename, "/proc/self/fd/3") - 1;
  r.exe_fs = SHMBPF_FS_TMPFS;
  r.exe_dev = 1;
  r.exe_ino = 2049;
  r.exe_name_len = put(r.exe_name, "memfd:payload") - 1;
  auto e = decode_event(&r, sizeof(r));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, EventType::exec);
  EXPECT_EQ(e->filename, "/proc/self/fd/3");
  EXPECT_EQ(e->fs, SHMBPF_FS_TMPFS);
  EXPECT_EQ(e->dev, 1u);
  EXPECT_EQ(e->ino, 2049u);
  EXPECT_EQ(e->name, "memfd:payload");
  // A length past the array is cut at it.
  r.exe_name_len = 255;
  std::memset(r.exe_name, 'x', sizeof(r.exe_name));
  auto cut = decode_event(&r, sizeof(r));
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->name.size(), sizeof(r.exe_name));
}

TEST(Decode, PathEventStartDirectory) {
  auto p = record<shmbpf_path_event>(SHMBPF_EV_UNLINK);
  p.dirfd = 5;
  p.origin = SHMBPF_ORIG_UNLINKAT;
  set_path(p, "seg");
  p.start_comp_len = put(p.start_components, "b\0a");
  p.start_ncomp = 2;
  p.flags_ev = SHMBPF_F_MNT_ROOT;
  p.start_mnt_id = 9;
  auto res = decode_event(&p, sizeof(p));
  ASSERT_TRUE(res.ok());
  EXPECT_FALSE(res->absolute);
  EXPECT_EQ(res->dirfd, 5);
  EXPECT_EQ(res->path, "seg");
  EXPECT_EQ(res->start_dir, "/a/b");
  EXPECT_EQ(res->start_mnt_id, 9u);
}

// linkat(fd, "", AT_FDCWD, "l2", AT_EMPTY_PATH): no old path, the file's
// own inode, and the new path's start directory.
TEST(Decode, LinkRecordByFdWithTheNewPathsStart) {
  auto p = record<shmbpf_path_event>(SHMBPF_EV_LINK);
  p.hdr.ret = 0;
  p.origin = SHMBPF_ORIG_LINKAT;
  p.dirfd = 4;
  p.newdirfd = -100;
  p.flags = 0x1000; // AT_EMPTY_PATH
  set_path(p, "");
  p.newpath_len = put(p.newpath, "l2") - 1;
  p.hint_dev = 26;
  p.hint_ino = 110230;
  p.start_comp_len = put(p.start_components, "");
  p.flags_ev = SHMBPF_F_MNT_ROOT | SHMBPF_F_NEW_START;
  p.start_mnt_id = 31;
  p.start_dev = 26;
  auto res = decode_event(&p, sizeof(p));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->type, EventType::link);
  EXPECT_EQ(to_string(res->type), "link");
  EXPECT_EQ(res->kind, Kind::tmpfs);
  EXPECT_EQ(res->origin, Origin::linkat);
  EXPECT_EQ(to_string(res->origin), "linkat");
  EXPECT_EQ(res->dirfd, 4);
  EXPECT_EQ(res->newdirfd, -100);
  EXPECT_EQ(res->flags, 0x1000u);
  EXPECT_EQ(res->path, "");
  EXPECT_EQ(res->newpath, "l2");
  EXPECT_FALSE(res->absolute);
  EXPECT_TRUE(res->new_start);
  EXPECT_EQ(res->start_dir, "/");
  EXPECT_EQ(res->start_mnt_id, 31u);
  EXPECT_EQ(res->dev, 26u);
  EXPECT_EQ(res->ino, 110230u);
  EXPECT_EQ(parse_event_type("link"), EventType::link);
  EXPECT_EQ(to_string(Origin::link), "link");
}

// The kernel's two no-space records are one event type: a write's file
// record, a failed create's path record; origin tells them apart.
TEST(Decode, NoSpaceFromAWriteAndFromACreate) {
  auto w = file_record(SHMBPF_EV_NOSPACE_WRITE);
  w.hdr.ret = -28;
  w.origin = SHMBPF_ORIG_PWRITE64;
  w.arg_size = 1 << 20;
  w.flags_ev = SHMBPF_F_MNT_ROOT;
  set_path(w, "");
  auto res = decode_event(&w, sizeof(w));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->type, EventType::nospace);
  EXPECT_EQ(to_string(res->type), "nospace");
  EXPECT_EQ(res->origin, Origin::pwrite64);
  EXPECT_EQ(to_string(res->origin), "pwrite64");
  EXPECT_EQ(res->err, 28);
  EXPECT_EQ(res->ino, 110230u);
  EXPECT_EQ(res->name, "/sub/torch_1_2_3");
  EXPECT_EQ(res->arg_size, 1u << 20);
  EXPECT_FALSE(is_create_nospace(*res));
  EXPECT_FALSE(is_by_path(*res));

  auto c = record<shmbpf_path_event>(SHMBPF_EV_NOSPACE_CREATE);
  c.hdr.ret = -122; // EDQUOT
  c.origin = SHMBPF_ORIG_CREAT;
  c.flags = 0x241;
  c.flags_ev = SHMBPF_F_ABSOLUTE;
  set_path(c, "/dev/shm/x");
  res = decode_event(&c, sizeof(c));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->type, EventType::nospace);
  EXPECT_EQ(res->origin, Origin::creat);
  EXPECT_EQ(res->err, 122);
  EXPECT_EQ(res->path, "/dev/shm/x");
  EXPECT_TRUE(res->absolute);
  EXPECT_EQ(res->ino, 0u);
  EXPECT_TRUE(is_create_nospace(*res));
  EXPECT_TRUE(is_by_path(*res));

  // The light hooks' create: the same record, the new inode as its hint.
  auto l = record<shmbpf_path_event>(SHMBPF_EV_CREATE_BY_PATH);
  l.origin = SHMBPF_ORIG_OPENAT;
  l.flags = 0xc2;
  l.flags_ev = SHMBPF_F_ABSOLUTE | SHMBPF_F_EXACT_HINT;
  l.hint_dev = 26;
  l.hint_ino = 99;
  set_path(l, "/dev/shm/y");
  res = decode_event(&l, sizeof(l));
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_EQ(res->type, EventType::create);
  EXPECT_TRUE(res->is_new);
  EXPECT_TRUE(res->by_path);
  EXPECT_TRUE(res->exact_hint);
  EXPECT_EQ(res->ino, 99u);
  EXPECT_EQ(res->fd, -1);
  EXPECT_TRUE(is_by_path(*res));
  EXPECT_FALSE(is_create_nospace(*res));

  // A path record is never smaller than its fixed fields, whatever other
  // record has that size.
  auto short_create = c;
  short_create.hdr.size = sizeof(shmbpf_sysv_event);
  EXPECT_FALSE(decode_event(&short_create, sizeof(c)).ok());
}

TEST(JoinComponents, Cases) {
  const char one[] = "leaf";
  EXPECT_EQ(join_components(one, sizeof(one), true), "/leaf");
  EXPECT_EQ(join_components(one, sizeof(one), false), ".../leaf");
  EXPECT_EQ(join_components("", 0, true), "/");
}

// A consumer decodes every record into the same Event: nothing of an
// earlier record may remain, whatever the types and lengths.
TEST(Decode, IntoReusedEventEqualsFreshDecode) {
  auto created = file_record(SHMBPF_EV_CREATE);
  const char long_path[] = "/dev/shm/a-rather-long-name-that-does-not-fit-any-small-buffer";
  set_path(created, long_path);
  auto resized = file_record(SHMBPF_EV_RESIZE);
  set_path(resized, "");
  put(resized.hdr.comm, "");
  auto ex = record<shmbpf_exit_event>(SHMBPF_EV_EXIT);
  ex.exit_code = 9;

  Event reused;
  reused.full_path = "set by a resolver";
  reused.start_dir = "/left/over";
  reused.shmid = 5;
  const std::pair<const void *, size_t> records[] = {{&created, sizeof(created)},
                                                     {&resized, sizeof(resized)},
                                                     {&ex, sizeof(ex)},
                                                     {&created, sizeof(created)}};
  for (auto [data, len] : records) {
    ASSERT_TRUE(decode_event_into(data, len, reused));
    auto fresh = decode_event(data, len);
    ASSERT_TRUE(fresh.ok());
    const Event &f = fresh.value();
    EXPECT_EQ(reused.type, f.type);
    EXPECT_EQ(reused.kind, f.kind);
    EXPECT_EQ(reused.comm, f.comm);
    EXPECT_EQ(reused.path, f.path);
    EXPECT_EQ(reused.name, f.name);
    EXPECT_EQ(reused.full_path, f.full_path);
    EXPECT_EQ(reused.start_dir, f.start_dir);
    EXPECT_EQ(reused.newpath, f.newpath);
    EXPECT_EQ(reused.filename, f.filename);
    EXPECT_EQ(reused.size, f.size);
    EXPECT_EQ(reused.ino, f.ino);
    EXPECT_EQ(reused.fd, f.fd);
    EXPECT_EQ(reused.shmid, f.shmid);
    EXPECT_EQ(reused.exit_code, f.exit_code);
    EXPECT_EQ(reused.is_new, f.is_new);
  }
  EXPECT_EQ(reused.path, long_path);
}

TEST(Decode, IntoReportsWhy) {
  auto r = file_record(SHMBPF_EV_CREATE);
  r.hdr.abi = SHMBPF_ABI_VERSION + 1;
  Event e;
  std::string why;
  EXPECT_FALSE(decode_event_into(&r, sizeof(r), e, &why));
  EXPECT_NE(why.find("ABI version"), std::string::npos) << why;
  EXPECT_FALSE(decode_event_into(&r, 10, e)); // no reason asked for
}

TEST(Decode, JoinComponentsSkipsEmptyRuns) {
  const char many[] = "leaf\0\0mid\0top\0";
  EXPECT_EQ(join_components(many, sizeof(many), true), "/top/mid/leaf");
  const char nul_only[] = "\0\0";
  EXPECT_EQ(join_components(nul_only, sizeof(nul_only), true), "/");
  EXPECT_EQ(join_components(nul_only, sizeof(nul_only), false), "...");
  std::string out = "old contents";
  join_components_into(out, many, sizeof(many), false);
  EXPECT_EQ(out, ".../top/mid/leaf");
}

} // namespace
} // namespace shmbpf
