#include "model/state.hpp"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace shmbpf {

namespace {

constexpr std::string_view kMagic = "shmbpf-state";

// Names as one space-free word: "=" then the bytes, with '%', spaces,
// control characters and non-ASCII as %XX.
void put_word(std::string &out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('=');
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f || c == '%') {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
}

bool get_word(std::string_view w, std::string &out) {
  if (w.empty() || w[0] != '=')
    return false;
  out.clear();
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i] != '%') {
      out.push_back(w[i]);
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= w.size())
      return false;
    auto [p, ec] = std::from_chars(w.data() + i + 1, w.data() + i + 3, v, 16);
    if (ec != std::errc() || p != w.data() + i + 3)
      return false;
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos)
      j = line.size();
    if (j > i)
      out.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

template <class T> bool num(std::string_view s, T &out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

constexpr std::string_view kFile = "file";
constexpr std::string_view kFileHandle = "file-handle"; // version 2
constexpr std::string_view kSysv = "sysv";
constexpr std::string_view kMountPeak = "mount-peak"; // version 3

Result<SavedMountPeak> parse_mount_peak(const std::vector<std::string_view> &f) {
  SavedMountPeak p;
  if (f.size() != 6 || !num(f[1], p.mount.mnt_id) || !num(f[2], p.mount.dev) ||
      !num(f[3], p.mount.fsid) || !num(f[4], p.peak) || !get_word(f[5], p.mount.mountpoint) ||
      p.mount.fsid == 0)
    return Error{"malformed record"};
  return p;
}

Result<SavedSegment> parse_segment(const std::vector<std::string_view> &f, int version) {
  SavedSegment s;
  Engine::Creation &c = s.creation;
  const bool sysv = f[0] == kSysv;
  const bool by_handle = f[0] == kFileHandle && version >= 2;
  if ((!sysv && !by_handle && f[0] != kFile) || f.size() != (sysv ? 11u : 10u))
    return Error{"unknown record"};
  s.birth.kind = by_handle ? Engine::Birth::Kind::handle : Engine::Birth::Kind::time;
  size_t i = 1;
  uint32_t where = 0;
  uint64_t which = 0;
  bool ok = num(f[i++], where) && num(f[i++], which);
  if (sysv)
    ok = ok && num(f[i++], s.sysv_key);
  ok = ok && num(f[i++], s.birth.value) && num(f[i++], c.created_ns) && num(f[i++], c.pid) &&
       num(f[i++], c.uid) && num(f[i++], c.cgroup_id) && get_word(f[i++], c.comm) &&
       get_word(f[i++], c.cgroup_path);
  if (!ok || (sysv && which > UINT32_MAX))
    return Error{"malformed record"};
  s.key =
      sysv ? SegmentKey::sysv(where, static_cast<int32_t>(which)) : SegmentKey::file(where, which);
  return s;
}

} // namespace

Engine::Birth file_birth(const TmpfsFile &f) {
  if (f.btime_ns != 0)
    return {Engine::Birth::Kind::time, f.btime_ns};
  return {Engine::Birth::Kind::handle, f.handle_id};
}

SavedState collect_state(const Engine &engine, std::string boot_id) {
  SavedState st;
  st.boot_id = std::move(boot_id);
  engine.for_each_birth([&](const SegmentKey &key, const Engine::Birth &birth) {
    std::optional<SegmentInfo> info = engine.segment(key);
    if (!info || info->kind == Kind::memfd || info->existed_before || !info->creator.known ||
        info->creator.pid == 0)
      return;
    SavedSegment s;
    s.key = key;
    s.birth = birth;
    s.sysv_key = info->sysv_key;
    s.creation.pid = info->creator.pid;
    s.creation.uid = info->creator.uid;
    s.creation.comm = info->creator.comm;
    s.creation.cgroup_id = info->creator.cgroup_id;
    s.creation.cgroup_path = engine.cgroup_path(info->creator.cgroup_id);
    s.creation.created_ns = info->created_ns;
    st.segments.push_back(std::move(s));
  });
  // Newest first, then by key: the same engine always gives the same file.
  std::sort(st.segments.begin(), st.segments.end(),
            [](const SavedSegment &a, const SavedSegment &b) {
              if (a.creation.created_ns != b.creation.created_ns)
                return a.creation.created_ns > b.creation.created_ns;
              return a.key < b.key;
            });
  if (st.segments.size() > kStateMaxSegments)
    st.segments.resize(kStateMaxSegments);
  for (const MountUsage &u : engine.mounts())
    if (u.mount.fsid != 0 && u.peak_used_bytes != 0 && st.mount_peaks.size() < kStateMaxMounts) {
      SavedMountPeak p;
      p.mount.mnt_id = u.mount.mnt_id;
      p.mount.dev = u.mount.dev;
      p.mount.fsid = u.mount.fsid;
      p.mount.mountpoint = u.mount.mountpoint;
      p.peak = u.peak_used_bytes;
      st.mount_peaks.push_back(std::move(p));
    }
  return st;
}

std::string format_state(const SavedState &state) {
  std::string out;
  out.reserve(64 + state.segments.size() * 96);
  out.append(kMagic).append(" ").append(std::to_string(kStateVersion)).append(" ");
  put_word(out, state.boot_id);
  out.push_back('\n');
  for (const SavedSegment &s : state.segments) {
    const Engine::Creation &c = s.creation;
    const bool sysv = s.key.is_sysv();
    out.append(sysv ? kSysv : s.birth.kind == Engine::Birth::Kind::handle ? kFileHandle : kFile);
    out.push_back(' ');
    out.append(std::to_string(s.key.dev_or_ipcns)).append(" ");
    out.append(std::to_string(s.key.ino_or_shmid)).append(" ");
    if (sysv)
      out.append(std::to_string(s.sysv_key)).append(" ");
    for (uint64_t v : {s.birth.value, c.created_ns, uint64_t{c.pid}, uint64_t{c.uid}, c.cgroup_id})
      out.append(std::to_string(v)).append(" ");
    put_word(out, c.comm);
    out.push_back(' ');
    put_word(out, c.cgroup_path);
    out.push_back('\n');
  }
  for (const SavedMountPeak &p : state.mount_peaks) {
    out.append(kMountPeak).push_back(' ');
    for (uint64_t v : {uint64_t{p.mount.mnt_id}, uint64_t{p.mount.dev}, p.mount.fsid, p.peak})
      out.append(std::to_string(v)).append(" ");
    put_word(out, p.mount.mountpoint);
    out.push_back('\n');
  }
  return out;
}

Result<SavedState> parse_state(std::string_view text) {
  if (text.size() > kStateMaxBytes)
    return Error{"larger than " + std::to_string(kStateMaxBytes >> 20) + " MiB"};
  SavedState st;
  size_t line_no = 0;
  int version = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos)
      return Error{"line " + std::to_string(line_no + 1) + " is cut short"};
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const std::vector<std::string_view> f = split(line);
    if (line_no++ == 0) {
      if (f.size() != 3 || f[0] != kMagic || !num(f[1], version))
        return Error{"not a shmbpf state file"};
      if (version < 1 || version > kStateVersion)
        return Error{"version " + std::to_string(version) + " (this shmbpf reads versions 1 to " +
                     std::to_string(kStateVersion) + ")"};
      if (!get_word(f[2], st.boot_id))
        return Error{"line 1: malformed boot id"};
      continue;
    }
    if (f.empty())
      return Error{"line " + std::to_string(line_no) + ": empty"};
    if (f[0] == kMountPeak && version >= 3) {
      Result<SavedMountPeak> p = parse_mount_peak(f);
      if (!p)
        return Error{"line " + std::to_string(line_no) + ": " + p.error()};
      if (st.mount_peaks.size() == kStateMaxMounts)
        return Error{"more than " + std::to_string(kStateMaxMounts) + " mounts"};
      st.mount_peaks.push_back(std::move(*p));
      continue;
    }
    Result<SavedSegment> s = parse_segment(f, version);
    if (!s)
      return Error{"line " + std::to_string(line_no) + ": " + s.error()};
    if (st.segments.size() == kStateMaxSegments)
      return Error{"more than " + std::to_string(kStateMaxSegments) + " segments"};
    st.segments.push_back(std::move(*s));
  }
  if (line_no == 0)
    return Error{"empty"};
  return st;
}

RestoreStats restore_state(Engine &engine, const SystemScan &scan, const SavedState &state,
                           std::string_view boot_id) {
  RestoreStats stats;
  if (state.boot_id != boot_id) {
    stats.unmatched = state.segments.size();
    return stats;
  }
  for (const SavedMountPeak &p : state.mount_peaks)
    stats.mount_peaks += engine.restore_mount_peak(p.mount, p.peak) ? 1 : 0;
  // What the scan says each key is now: a file's birth, a SysV segment's
  // ctime and key. Unknown births (0) never match.
  std::unordered_map<SegmentKey, std::pair<Engine::Birth, uint32_t>> now;
  for (const ScannedFs &fs : scan.filesystems)
    for (const TmpfsFile &f : fs.files)
      now.emplace(SegmentKey::file(f.dev, f.ino), std::pair{file_birth(f), uint32_t{0}});
  for (const ScannedIpc &ipc : scan.ipc)
    for (const SysvEntry &e : ipc.segments)
      if (e.shmid >= 0 && e.ctime_s > 0)
        now.emplace(
            SegmentKey::sysv(ipc.ipcns, e.shmid),
            std::pair{Engine::Birth{Engine::Birth::Kind::time, static_cast<uint64_t>(e.ctime_s)},
                      e.key});
  for (const SavedSegment &s : state.segments) {
    auto it = now.find(s.key);
    const bool same = it != now.end() && s.birth.value != 0 && it->second.first == s.birth &&
                      (!s.key.is_sysv() || it->second.second == s.sysv_key);
    if (same && engine.restore_creation(s.key, s.creation, s.birth))
      ++stats.applied;
    else
      ++stats.unmatched;
  }
  return stats;
}

} // namespace shmbpf
