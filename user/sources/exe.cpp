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
  // Every read goes through /proc/<pid> held open, so that all of them are
  // of one process even when its pid is reused meanwhile: they fail instead.
  const std::string proc = "/proc/" + std::to_string(pid);
  const int dir = ::open(proc.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return std::nullopt;
  std::optional<ExeFile> out;
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(dir, "exe", buf, sizeof buf);
  struct stat st {};
  struct statfs sfs {};
  // stat and statfs follow the link to the program's own inode, which a
  // name, deleted or a memfd's, would not reach; statfs takes no directory
  // descriptor, hence our own fd's path.
  const std::string through = "/proc/self/fd/" + std::to_string(dir) + "/exe";
  if (n > 0 && static_cast<size_t>(n) < sizeof buf && ::fstatat(dir, "exe", &st, 0) == 0 &&
      ::statfs(through.c_str(), &sfs) == 0) {
    ExeLink link = parse_exe_link(std::string_view(buf, static_cast<size_t>(n)));
    out = ExeFile{};
    out->pid = pid;
    out->dev = kernel_dev(st.st_dev);
    out->ino = st.st_ino;
    out->path = std::move(link.path);
    out->deleted = link.deleted;
    out->on_shm = is_shm_magic(static_cast<long>(sfs.f_type));
  }
  ::close(dir);
  return out;
}

} // namespace shmbpf
