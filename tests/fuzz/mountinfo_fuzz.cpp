// parse_mountinfo over any text: it must never crash, every mount it returns
// must be well formed, the queries over mounts must hold on it, and writing
// a result back in the kernel's format must parse to the same mount.
#include "facts/dev.hpp"
#include "facts/mounts.hpp"
#include "sources/mountinfo.hpp"

#include "fuzz_check.hpp"

#include <string>
#include <vector>

namespace shmbpf {
namespace {

// The kernel's escaping of mountinfo's path fields (seq_escape of " \t\n\\"
// as octal): the inverse of what the parser undoes.
std::string escape_field(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      const auto b = static_cast<unsigned char>(c);
      out += '\\';
      out += static_cast<char>('0' + (b >> 6));
      out += static_cast<char>('0' + ((b >> 3) & 7));
      out += static_cast<char>('0' + (b & 7));
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_line(const MountInfo &m) {
  return std::to_string(m.mnt_id) + ' ' + std::to_string(m.parent_id) + ' ' +
         std::to_string(dev_major(m.dev)) + ':' + std::to_string(dev_minor(m.dev)) + ' ' +
         escape_field(m.root) + ' ' + escape_field(m.mountpoint) + ' ' + m.mount_options + " - " +
         escape_field(m.fstype) + ' ' + escape_field(m.source) + ' ' + m.super_options + '\n';
}

bool same(const MountInfo &a, const MountInfo &b) {
  return a.mnt_id == b.mnt_id && a.parent_id == b.parent_id && a.dev == b.dev && a.root == b.root &&
         a.mountpoint == b.mountpoint && a.fstype == b.fstype && a.source == b.source &&
         a.mount_options == b.mount_options && a.super_options == b.super_options;
}

std::string_view trimmed(std::string_view s) {
  while (s.size() > 1 && s.back() == '/')
    s.remove_suffix(1);
  return s;
}

void check_mount(const std::vector<MountInfo> &table, const MountInfo &m) {
  FUZZ_CHECK(!m.root.empty() && !m.mountpoint.empty() && !m.fstype.empty());
  for (std::string_view opts :
       {std::string_view(m.mount_options), std::string_view(m.super_options)})
    FUZZ_CHECK(opts.find_first_of(" \n") == std::string_view::npos);
  (void)m.is_tmpfs();
  (void)m.size_limit();
  (void)is_overmounted(table, m);

  // The mount's own root is its mount point, and what lies below the root
  // lies below the mount point.
  if (m.root.front() == '/') {
    const std::string_view mp = trimmed(m.mountpoint);
    const std::string_view root = trimmed(m.root);
    auto at_root = join_mount_path(m, root);
    FUZZ_CHECK(at_root && *at_root == mp);
    auto below = join_mount_path(m, std::string(root == "/" ? "" : root) + "/leaf");
    FUZZ_CHECK(below && *below == (mp == "/" ? std::string("/leaf") : std::string(mp) + "/leaf"));
  }
  // Any path at all, including other mounts' fields: never a crash.
  for (const MountInfo &other : table) {
    (void)join_mount_path(m, other.mountpoint);
    (void)join_mount_path(m, other.source);
  }

  // Written back as the kernel would, it reads the same. Except for a
  // trailing '\r', which the parser takes for a CRLF line end: a mount
  // whose last field ends in one came from a line ending in two.
  if (!m.super_options.empty() && m.super_options.back() == '\r')
    return;
  const auto again = parse_mountinfo(format_line(m));
  FUZZ_CHECK(again.size() == 1 && same(again[0], m));
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto mounts = parse_mountinfo(text);
  size_t lines = 1;
  for (char c : text)
    lines += c == '\n';
  FUZZ_CHECK(mounts.size() <= lines);
  for (const MountInfo &m : mounts) {
    check_mount(mounts, m);
    FUZZ_CHECK(find_by_id(mounts, m.mnt_id) != nullptr);
  }
  (void)find_cgroup2_mount(mounts);
  return 0;
}
