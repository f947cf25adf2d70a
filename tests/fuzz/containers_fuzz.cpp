// Container recognition over any cgroup path (named by whoever creates the
// cgroup): never a crash; an answer names a known runtime with a well-formed
// id; and a child cgroup with an unremarkable name belongs to the same
// container as its parent.
#include "model/containers.hpp"

#include "fuzz_check.hpp"

#include <algorithm>
#include <string>

namespace shmbpf {
namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_container_id(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), is_lower_hex);
}

void check_ref(std::string_view path, const ContainerRef &r) {
  FUZZ_CHECK(!r.id.empty());
  if (!r.pod_uid.empty()) {
    FUZZ_CHECK(std::count_if(r.pod_uid.begin(), r.pod_uid.end(), is_lower_hex) == 32);
    FUZZ_CHECK(std::all_of(r.pod_uid.begin(), r.pod_uid.end(),
                           [](char c) { return is_lower_hex(c) || c == '-'; }));
  }
  if (r.runtime == "kubernetes") {
    // A container id when the path names one, else the pod's uid.
    FUZZ_CHECK(!r.pod_uid.empty());
    FUZZ_CHECK(r.id == r.pod_uid || is_container_id(r.id));
  } else {
    FUZZ_CHECK(r.runtime == "docker" || r.runtime == "containerd" || r.runtime == "cri-o" ||
               r.runtime == "podman");
    FUZZ_CHECK(is_container_id(r.id));
  }
  if (is_container_id(r.id))
    FUZZ_CHECK(path.find(r.id) != std::string_view::npos);
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view path = fuzz::as_text(data, size);
  const auto ref = container_from_cgroup_path(path);
  if (ref)
    check_ref(path, *ref);
  FUZZ_CHECK(container_from_cgroup_path(std::string(path) + "/worker") == ref);
  return 0;
}
