#include "decode/event.hpp"

#include <array>
#include <utility>

namespace shmbpf {

namespace {
constexpr std::array<std::pair<EventType, std::string_view>, 17> kEventNames{{
    {EventType::create, "create"},
    {EventType::open, "open"},
    {EventType::memfd_create, "memfd_create"},
    {EventType::resize, "resize"},
    {EventType::unlink, "unlink"},
    {EventType::rename, "rename"},
    {EventType::shmget, "shmget"},
    {EventType::shmat, "shmat"},
    {EventType::shmdt, "shmdt"},
    {EventType::shm_rmid, "shm_rmid"},
    {EventType::free, "free"},
    {EventType::sigbus, "sigbus"},
    {EventType::exit, "exit"},
    {EventType::exec, "exec"},
    {EventType::link, "link"},
    {EventType::nospace, "nospace"},
    {EventType::oom, "oom"},
}};
constexpr std::array<std::pair<Kind, std::string_view>, 3> kKindNames{{
    {Kind::tmpfs, "tmpfs"},
    {Kind::memfd, "memfd"},
    {Kind::sysv, "sysv"},
}};
constexpr std::array<std::string_view, 21> kOriginNames{
    "",       "open",     "openat",   "openat2",  "creat",     "ftruncate",    "fallocate",
    "unlink", "unlinkat", "rename",   "renameat", "renameat2", "memfd_create", "link",
    "linkat", "write",    "pwrite64", "writev",   "pwritev",   "pwritev2",     "truncate"};
constexpr std::array<std::string_view, 5> kFaultNames{"not-a-fault", "file", "anon", "no-mapping",
                                                      "unknown"};
} // namespace

std::string_view to_string(FaultLookup f) {
  auto i = static_cast<size_t>(f);
  return i < kFaultNames.size() ? kFaultNames[i] : "unknown";
}

std::string_view to_string(EventType t) {
  for (auto &[v, n] : kEventNames)
    if (v == t)
      return n;
  return "unknown";
}

std::string_view to_string(Kind k) {
  for (auto &[v, n] : kKindNames)
    if (v == k)
      return n;
  return "";
}

std::string_view to_string(Origin o) {
  auto i = static_cast<size_t>(o);
  return i < kOriginNames.size() ? kOriginNames[i] : "";
}

std::optional<EventType> parse_event_type(std::string_view s) {
  for (auto &[v, n] : kEventNames)
    if (n == s)
      return v;
  return std::nullopt;
}

std::vector<std::string> event_type_names() {
  std::vector<std::string> out;
  for (auto &[v, n] : kEventNames)
    out.emplace_back(n);
  return out;
}

std::optional<Kind> parse_kind(std::string_view s) {
  for (auto &[v, n] : kKindNames)
    if (n == s)
      return v;
  return std::nullopt;
}

} // namespace shmbpf
