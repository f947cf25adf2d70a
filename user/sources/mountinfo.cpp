#include "sources/mountinfo.hpp"

#include "sources/fd.hpp"

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

} // namespace

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
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok())
    return {};
  // procfs reports size 0, so read until EOF.
  std::string text;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
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

} // namespace shmbpf
