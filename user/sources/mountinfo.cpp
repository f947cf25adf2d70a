#include "sources/mountinfo.hpp"

#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <unistd.h>

namespace shmbpf {

namespace {

// The kernel's MINORBITS: dev_t inside the kernel is major << 20 | minor.
constexpr uint32_t kMinorBits = 20;
constexpr uint32_t kMaxMajor = (1u << (32 - kMinorBits)) - 1;
constexpr uint32_t kMaxMinor = (1u << kMinorBits) - 1;

template <typename T> std::optional<T> parse_uint(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return value;
}

bool is_octal(char c) { return c >= '0' && c <= '7'; }

// The kernel escapes ' ', '\t', '\n' and '\\' as \ooo (seq_escape). Anything
// else after a backslash is left untouched rather than guessed at.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && is_octal(s[i + 1]) && is_octal(s[i + 2]) &&
        is_octal(s[i + 3])) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      if (v <= 0xff) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::optional<uint32_t> parse_dev(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  auto major = parse_uint<uint32_t>(s.substr(0, colon));
  auto minor = parse_uint<uint32_t>(s.substr(colon + 1));
  if (!major || !minor || *major > kMaxMajor || *minor > kMaxMinor)
    return std::nullopt;
  return *major << kMinorBits | *minor;
}

// Fields are separated by exactly one space; an empty source ("tmpfs  rw")
// is a legitimate empty field, so runs of spaces must not be collapsed.
void split_fields(std::string_view line, std::vector<std::string_view> &fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    size_t sp = line.find(' ', start);
    if (sp == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return;
    }
    fields.push_back(line.substr(start, sp - start));
    start = sp + 1;
  }
}

std::optional<MountInfo> parse_line(std::string_view line, std::vector<std::string_view> &fields) {
  // mnt_id parent_id major:minor root mountpoint options [optional...] - fstype source super
  constexpr size_t kFixedBefore = 6;
  split_fields(line, fields);
  size_t sep = kFixedBefore;
  while (sep < fields.size() && fields[sep] != "-")
    ++sep;
  if (sep >= fields.size() || fields.size() - sep - 1 != 3)
    return std::nullopt;

  auto mnt_id = parse_uint<uint32_t>(fields[0]);
  auto parent_id = parse_uint<uint32_t>(fields[1]);
  auto dev = parse_dev(fields[2]);
  if (!mnt_id || !parent_id || !dev || fields[3].empty() || fields[4].empty() ||
      fields[sep + 1].empty())
    return std::nullopt;

  MountInfo m;
  m.mnt_id = *mnt_id;
  m.parent_id = *parent_id;
  m.dev = *dev;
  m.root = unescape(fields[3]);
  m.mountpoint = unescape(fields[4]);
  m.mount_options = std::string(fields[5]);
  m.fstype = unescape(fields[sep + 1]);
  m.source = unescape(fields[sep + 2]);
  m.super_options = std::string(fields[sep + 3]);
  return m;
}

struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Strips trailing slashes except for "/" itself.
std::string_view trim_trailing_slashes(std::string_view s) {
  while (s.size() > 1 && s.back() == '/')
    s.remove_suffix(1);
  return s;
}

} // namespace

bool MountInfo::is_tmpfs() const { return fstype == "tmpfs" || fstype == "hugetlbfs"; }

std::optional<uint64_t> MountInfo::size_limit() const {
  std::string_view opts = super_options;
  while (!opts.empty()) {
    size_t comma = opts.find(',');
    std::string_view opt = opts.substr(0, comma);
    opts = comma == std::string_view::npos ? std::string_view{} : opts.substr(comma + 1);
    if (!opt.starts_with("size="))
      continue;
    std::string_view value = opt.substr(5);
    unsigned shift = 0;
    if (!value.empty()) {
      switch (value.back()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        break;
      }
      if (shift != 0)
        value.remove_suffix(1);
    }
    auto n = parse_uint<uint64_t>(value);
    if (!n || (shift != 0 && *n > (UINT64_MAX >> shift)))
      return std::nullopt;
    return *n << shift;
  }
  return std::nullopt;
}

std::vector<MountInfo> parse_mountinfo(std::string_view text) {
  std::vector<MountInfo> mounts;
  std::vector<std::string_view> fields;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      continue;
    if (auto m = parse_line(line, fields))
      mounts.push_back(std::move(*m));
  }
  return mounts;
}

std::vector<MountInfo> read_mountinfo(int pid) {
  std::string path =
      pid > 0 ? "/proc/" + std::to_string(pid) + "/mountinfo" : std::string("/proc/self/mountinfo");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0)
    return {};
  // procfs reports size 0, so read until EOF.
  std::string text;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd.fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return {};
    }
    if (n == 0)
      break;
    text.append(buf, static_cast<size_t>(n));
  }
  return parse_mountinfo(text);
}

std::optional<std::string> find_cgroup2_mount(const std::vector<MountInfo> &mounts) {
  for (const auto &m : mounts)
    if (m.fstype == "cgroup2")
      return m.mountpoint;
  return std::nullopt;
}

const MountInfo *find_by_id(const std::vector<MountInfo> &mounts, uint32_t mnt_id) {
  for (const auto &m : mounts)
    if (m.mnt_id == mnt_id)
      return &m;
  return nullptr;
}

bool join_mount_path_into(std::string &out, const MountInfo &mount,
                          std::string_view in_mount_path) {
  std::string slashed; // only for a path without its leading '/' (rare)
  if (in_mount_path.empty() || in_mount_path.front() != '/') {
    slashed.reserve(in_mount_path.size() + 1);
    slashed.push_back('/');
    slashed.append(in_mount_path);
    in_mount_path = slashed;
  }

  // The part of the path below the mount's root, "" or "/...".
  std::string_view root = trim_trailing_slashes(mount.root);
  std::string_view rest = in_mount_path;
  if (root != "/") {
    if (!rest.starts_with(root))
      return false;
    rest.remove_prefix(root.size());
    if (!rest.empty() && rest.front() != '/')
      return false; // "/subdir" is not under root "/sub"
  }
  if (rest == "/")
    rest = {};

  std::string_view mp = trim_trailing_slashes(mount.mountpoint);
  if (rest.empty())
    out.assign(mp);
  else if (mp == "/")
    out.assign(rest);
  else {
    out.assign(mp);
    out.append(rest);
  }
  return true;
}

std::optional<std::string> join_mount_path(const MountInfo &mount, std::string_view in_mount_path) {
  std::string out;
  if (!join_mount_path_into(out, mount, in_mount_path))
    return std::nullopt;
  return out;
}

bool is_overmounted(const std::vector<MountInfo> &table, const MountInfo &m) {
  for (const MountInfo &other : table)
    if (other.parent_id == m.mnt_id && other.mountpoint == m.mountpoint && other.mnt_id != m.mnt_id)
      return true;
  return false;
}

} // namespace shmbpf
