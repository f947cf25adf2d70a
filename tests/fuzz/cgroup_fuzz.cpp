// parse_cgroup_v2_path over any text, and what the model makes of the path
// (cgroup paths are named by whoever creates cgroups: container runtimes,
// systemd units, delegated users): never a crash, and the path is one line
// of the text.
#include "model/containers.hpp"
#include "sources/proc_scan.hpp"

#include "fuzz_check.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto path = parse_cgroup_v2_path(text);
  if (!path)
    return 0;
  FUZZ_CHECK(path->find('\n') == std::string::npos);
  FUZZ_CHECK(text.find("0::" + *path) != std::string_view::npos);
  (void)container_from_cgroup_path(*path);
  return 0;
}
