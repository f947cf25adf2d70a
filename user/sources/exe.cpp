#include "sources/exe.hpp"

#include "facts/dev.hpp"
#include "facts/fs_magic.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace shmbpf {

namespace {

constexpr std::string_view kDeletedMark = " (deleted)";
constexpr std::string_view kMemfdPrefix = "/memfd:";

} // namespace

ExeLink parse_exe_link(std::string_view link) {
  ExeLink out;
  if (link.ends_with(kDeletedMark)) {
    link.remove_suffix(kDeletedMark.size());
    out.deleted = true;
  }
  out.path = std::string(link);
  if (out.path.starts_with(kMemfdPrefix))
    out.deleted = true;
  return out;
}

std::optional<ExeFile> read_exe(uint32_t pid) {
  // The program is opened once, through /proc/<pid> held open (a reused pid
  // makes the open fail), and every fact is read from that one descriptor:
  // an exec between two reads of the link could otherwise pair one
  // program's name with another's inode.
  const std::string proc = "/proc/" + std::to_string(pid);
  const int dir = ::open(proc.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return std::nullopt;
  const int exe = ::openat(dir, "exe", O_PATH | O_CLOEXEC);
  ::close(dir);
  if (exe < 0)
    return std::nullopt;
  std::optional<ExeFile> out;
  char buf[PATH_MAX];
  // The descriptor's own link names the file as /proc/<pid>/exe did,
  // " (deleted)" included; a memfd's reads "/memfd:<name> (deleted)".
  const std::string link = "/proc/self/fd/" + std::to_string(exe);
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  struct stat st {};
  struct statfs sfs {};
  if (n > 0 && static_cast<size_t>(n) < sizeof buf && ::fstat(exe, &st) == 0 &&
      ::fstatfs(exe, &sfs) == 0) {
    ExeLink parsed = parse_exe_link(std::string_view(buf, static_cast<size_t>(n)));
    out = ExeFile{};
    out->pid = pid;
    out->dev = kernel_dev(st.st_dev);
    out->ino = st.st_ino;
    out->path = std::move(parsed.path);
    out->deleted = parsed.deleted;
    out->on_shm = is_shm_magic(static_cast<long>(sfs.f_type));
  }
  ::close(exe);
  return out;
}

} // namespace shmbpf
