#include "model/types.hpp"

#include <algorithm>
#include <cstdio>

namespace shmbpf {
namespace {

std::string_view leaf_of(std::string_view path) { return path.substr(path.rfind('/') + 1); }

} // namespace

std::string sysv_name(uint32_t key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "SYSV%08x", key);
  return buf;
}

std::string_view to_string(SegmentState s) {
  switch (s) {
  case SegmentState::linked:
    return "linked";
  case SegmentState::unlinked:
    return "unlinked";
  case SegmentState::gone:
    return "gone";
  }
  return "?";
}

std::string_view to_string(NamePattern p) {
  switch (p) {
  case NamePattern::none:
    return "";
  case NamePattern::torch:
    return "torch";
  case NamePattern::psm:
    return "psm";
  case NamePattern::sem:
    return "sem";
  case NamePattern::nccl:
    return "nccl";
  case NamePattern::sglang:
    return "sglang";
  case NamePattern::vllm:
    return "vllm";
  case NamePattern::postgres:
    return "postgres";
  case NamePattern::ray:
    return "ray";
  case NamePattern::dali:
    return "dali";
  case NamePattern::mpi:
    return "mpi";
  case NamePattern::joblib:
    return "joblib";
  case NamePattern::pulseaudio:
    return "pulseaudio";
  case NamePattern::chromium:
    return "chromium";
  }
  return "?";
}

std::string_view producer_name(NamePattern p) {
  return p == NamePattern::none ? std::string_view("other") : to_string(p);
}

std::string_view producer_text(NamePattern p) {
  switch (p) {
  case NamePattern::none:
    return "no known naming scheme";
  case NamePattern::torch:
    return "PyTorch, file_system sharing strategy";
  case NamePattern::psm:
    return "Python multiprocessing.shared_memory (vLLM, SGLang rings)";
  case NamePattern::sem:
    return "POSIX named semaphores";
  case NamePattern::nccl:
    return "NVIDIA NCCL, shared-memory transport";
  case NamePattern::sglang:
    return "SGLang";
  case NamePattern::vllm:
    return "vLLM, multimodal object store";
  case NamePattern::postgres:
    return "PostgreSQL, dynamic shared memory";
  case NamePattern::ray:
    return "Ray (Arrow) plasma object store";
  case NamePattern::dali:
    return "NVIDIA DALI";
  case NamePattern::mpi:
    return "Open MPI or MPICH";
  case NamePattern::joblib:
    return "joblib, memmapped arrays";
  case NamePattern::pulseaudio:
    return "PulseAudio";
  case NamePattern::chromium:
    return "Chromium or Chrome";
  }
  return "?";
}

bool is_shared_memory(Kind kind, NamePattern pattern, SegmentState state,
                      std::string_view mountpoint, bool served_shared_memory) {
  // Chromium's prefix is its temporary files' too: only where shared
  // memory lives does it say shared memory.
  if (kind != Kind::tmpfs || (pattern != NamePattern::none && pattern != NamePattern::chromium))
    return true;
  if (served_shared_memory || is_shared_memory_mountpoint(mountpoint))
    return true;
  // Unlinked files without a mount were found through their holders' fds
  // and maps: they are mapped or held memory.
  return mountpoint.empty() && state == SegmentState::unlinked;
}

namespace {

// What must follow a scheme's prefix.
enum class Rest : uint8_t {
  maybe,  // anything, nothing included
  any,    // at least one character
  digits, // a decimal number
  six,    // mkstemp's six letters and digits, nothing more
};

struct Scheme {
  std::string_view prefix;
  Rest rest;
  NamePattern pattern;
};

// Each with its source in docs/LEAKS.md ("Who made it").
constexpr Scheme kSchemes[] = {
    {"psm_", Rest::any, NamePattern::psm},
    {"sem.", Rest::any, NamePattern::sem},
    {"nccl-", Rest::any, NamePattern::nccl},
    {"sgl_shm_", Rest::any, NamePattern::sglang},
    {"sglang_", Rest::any, NamePattern::sglang},
    {"VLLM_OBJECT_STORAGE_SHM_BUFFER", Rest::maybe, NamePattern::vllm},
    {"PostgreSQL.", Rest::digits, NamePattern::postgres},
    {"plasma", Rest::six, NamePattern::ray},
    {"nvidia_dali_", Rest::any, NamePattern::dali},
    {"vader_segment.", Rest::any, NamePattern::mpi},
    {"sm_segment.", Rest::any, NamePattern::mpi},
    {"mpich_shar_tmp", Rest::any, NamePattern::mpi},
    {"pulse-shm-", Rest::digits, NamePattern::pulseaudio},
    {".org.chromium.Chromium.", Rest::any, NamePattern::chromium},
    {".com.google.Chrome.", Rest::any, NamePattern::chromium},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool rest_fits(std::string_view rest, Rest want) {
  switch (want) {
  case Rest::maybe:
    return true;
  case Rest::any:
    return !rest.empty();
  case Rest::digits:
    return !rest.empty() && std::all_of(rest.begin(), rest.end(), is_digit);
  case Rest::six:
    return rest.size() == 6 && std::all_of(rest.begin(), rest.end(), is_alnum);
  }
  return false;
}

// torch_<pid>_<random>_<counter>: only the pid part is relied on.
NameClass classify_torch(std::string_view rest) {
  uint64_t pid = 0;
  size_t i = 0;
  while (i < rest.size() && is_digit(rest[i]) && pid <= 0xffffffffu)
    pid = pid * 10 + static_cast<uint64_t>(rest[i++] - '0');
  if (i > 0 && i + 1 < rest.size() && rest[i] == '_' && pid > 0 && pid <= 0xffffffffu)
    return {NamePattern::torch, static_cast<uint32_t>(pid)};
  return {};
}

} // namespace

NameClass classify_shm_name(std::string_view path) {
  std::string_view leaf = leaf_of(path);
  // A memfd is named memfd:<the name its creator gave>.
  if (leaf.starts_with("memfd:"))
    leaf.remove_prefix(6);
  if (leaf.starts_with("torch_"))
    return classify_torch(leaf.substr(6));
  for (const Scheme &s : kSchemes)
    if (leaf.starts_with(s.prefix) && rest_fits(leaf.substr(s.prefix.size()), s.rest))
      return {s.pattern, 0};
  // joblib names the folder, not its files.
  const size_t dir = path.rfind("/joblib_memmapping_folder_");
  if (dir != std::string_view::npos && path.find('/', dir + 1) < path.size() - 1)
    return {NamePattern::joblib, 0};
  return {};
}

size_t SegmentKeyHash::operator()(const SegmentKey &k) const noexcept {
  // splitmix64 finaliser over (ino, dev, space): inode numbers are dense.
  uint64_t x = k.ino_or_shmid * 0x9e3779b97f4a7c15ull;
  x ^= (static_cast<uint64_t>(k.dev_or_ipcns) << 1) | (k.is_sysv() ? 1 : 0);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<size_t>(x);
}

} // namespace shmbpf
