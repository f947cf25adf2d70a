// Writes one well-formed ring-buffer record per event type, as the kernel
// side fills them, into the directory given: the decode fuzzer's seeds.
// They follow bpf/shmbpf_events.h as compiled, so they stay valid across
// ABI bumps (the copies in corpus/decode were written by this program).
#include <linux/types.h>

#include "shmbpf_events.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace {

template <class Rec> Rec record(uint8_t type) {
  Rec r{};
  r.hdr.type = type;
  r.hdr.abi = SHMBPF_ABI_VERSION;
  r.hdr.size = sizeof(r);
  r.hdr.ts_ns = 123456789;
  r.hdr.pid = r.hdr.tid = 4242;
  r.hdr.ppid = 1;
  r.hdr.uid = 1000;
  r.hdr.mntns = 4026531841u;
  r.hdr.ipcns = 4026531839u;
  r.hdr.cgroup_id = 77;
  std::memcpy(r.hdr.comm, "python3", 8);
  return r;
}

// text into a char field; its length with (counted) or without its NUL.
template <size_t Cap> __u16 put(char (&field)[Cap], std::string_view text, bool count_nul) {
  const size_t n = std::min(text.size(), Cap - 1);
  std::memcpy(field, text.data(), n);
  return static_cast<__u16>(count_nul ? n + 1 : n);
}

template <class Rec> bool save(const std::string &dir, const char *name, const Rec &r) {
  const std::string path = dir + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  const bool ok = std::fwrite(&r, sizeof r, 1, f) == 1;
  return std::fclose(f) == 0 && ok;
}

shmbpf_file_event file(uint8_t type, __u16 origin, std::string_view path,
                       std::string_view components) {
  auto r = record<shmbpf_file_event>(type);
  r.dev = 26;
  r.mnt_id = 31;
  r.ino = 110230;
  r.size = 8192;
  r.bytes = 4096;
  r.fd = 3;
  r.mode = 0100600;
  r.origin = origin;
  r.fs = SHMBPF_FS_TMPFS;
  r.flags_ev = SHMBPF_F_NEW | SHMBPF_F_MNT_ROOT;
  r.path_len = put(r.path, path, false);
  r.comp_len = put(r.components, components, true);
  r.ncomp = 2;
  return r;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  using namespace std::string_view_literals;
  bool ok = true;
  ok &=
      save(dir, "create.bin",
           file(SHMBPF_EV_CREATE, SHMBPF_ORIG_OPENAT, "/dev/shm/torch_1_2"sv, "torch_1_2\0sub"sv));
  ok &= save(dir, "memfd_create.bin",
             file(SHMBPF_EV_MEMFD_CREATE, SHMBPF_ORIG_MEMFD_CREATE, "pool"sv, "memfd:pool"sv));
  auto resize = file(SHMBPF_EV_RESIZE, SHMBPF_ORIG_FTRUNCATE, ""sv, "a\0b\0c"sv);
  resize.arg_size = 1 << 20;
  resize.flags_ev = SHMBPF_F_TRUNCATED; // the walk did not reach the root
  ok &= save(dir, "resize.bin", resize);

  auto unlink = record<shmbpf_path_event>(SHMBPF_EV_UNLINK);
  unlink.origin = SHMBPF_ORIG_UNLINKAT;
  unlink.dirfd = 5;
  unlink.newdirfd = -100;
  unlink.path_len = put(unlink.path, "torch_1_2", false);
  unlink.start_comp_len = put(unlink.start_components, "sub", true);
  unlink.start_ncomp = 1;
  unlink.start_dev = 26;
  unlink.flags_ev = SHMBPF_F_MNT_ROOT;
  ok &= save(dir, "unlink.bin", unlink);
  auto rename = record<shmbpf_path_event>(SHMBPF_EV_RENAME);
  rename.origin = SHMBPF_ORIG_RENAMEAT2;
  rename.dirfd = rename.newdirfd = -100;
  rename.flags_ev = SHMBPF_F_ABSOLUTE;
  rename.path_len = put(rename.path, "/dev/shm/a", false);
  rename.newpath_len = put(rename.newpath, "/dev/shm/b c", false);
  ok &= save(dir, "rename.bin", rename);
  auto link = rename;
  link.hdr.type = SHMBPF_EV_LINK;
  link.origin = SHMBPF_ORIG_LINKAT;
  ok &= save(dir, "link.bin", link);

  for (auto [type, name] : {std::pair{SHMBPF_EV_SHMGET, "shmget.bin"},
                            {SHMBPF_EV_SHMAT, "shmat.bin"},
                            {SHMBPF_EV_SHMDT, "shmdt.bin"},
                            {SHMBPF_EV_SHM_RMID, "shm_rmid.bin"}}) {
    auto r = record<shmbpf_sysv_event>(static_cast<uint8_t>(type));
    r.shmid = type == SHMBPF_EV_SHMDT ? -1 : 32769;
    r.key = 0x1234;
    r.size = 1 << 20;
    r.addr = type == SHMBPF_EV_SHMGET ? 0 : 0x7f0000000000;
    r.shmflg = 01600;
    r.created = type == SHMBPF_EV_SHMGET ? 1 : 2;
    ok &= save(dir, name, r);
  }

  auto freed = record<shmbpf_free_event>(SHMBPF_EV_FREE);
  freed.dev = 26;
  freed.ino = 110230;
  freed.bytes = 8192;
  freed.folios = 2;
  freed.fs = SHMBPF_FS_TMPFS;
  ok &= save(dir, "free.bin", freed);
  auto sigbus = record<shmbpf_sigbus_event>(SHMBPF_EV_SIGBUS);
  sigbus.target_pid = 4242;
  sigbus.si_code = 2; // BUS_ADRERR
  put(sigbus.target_comm, "python3", true);
  ok &= save(dir, "sigbus.bin", sigbus);
  auto exit = record<shmbpf_exit_event>(SHMBPF_EV_EXIT);
  exit.exit_code = 9; // killed by SIGKILL
  ok &= save(dir, "exit.bin", exit);
  auto exec = record<shmbpf_exec_event>(SHMBPF_EV_EXEC);
  exec.old_pid = 4242;
  exec.filename_len = put(exec.filename, "/usr/bin/python3", false);
  exec.exe_fs = SHMBPF_FS_TMPFS;
  exec.exe_dev = 1;
  exec.exe_ino = 3;
  exec.exe_name_len = put(exec.exe_name, "memfd:x", false);
  ok &= save(dir, "exec.bin", exec);
  auto failed = record<shmbpf_exit_event>(SHMBPF_EV_EXIT);
  failed.hdr.ret = -12; // a header's error field in use
  ok &= save(dir, "exit_with_ret.bin", failed);
  return ok ? 0 : 1;
}
