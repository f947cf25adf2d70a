// The runtime state parsers over any text (a container's owner chooses its
// name, labels and annotations, and may rewrite the files): never a crash,
// a refused document gives no name, and what a parser returns came from
// the text.
#include "sources/json_value.hpp"
#include "sources/runtime_names.hpp"

#include "fuzz_check.hpp"

#include <string>

namespace {

// A string the parsers return is a JSON string of the document: in a text
// without escapes it is there verbatim.
void check_from_text(std::string_view text, const std::string &s) {
  if (text.find('\\') == std::string_view::npos)
    FUZZ_CHECK(text.find(s) != std::string_view::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto doc = parse_json(text);
  const auto docker = parse_docker_config(text);
  const auto oci = parse_oci_annotations(text);
  if (!doc) {
    FUZZ_CHECK(!docker && !oci);
  }
  for (const auto &n : {docker, oci}) {
    if (!n)
      continue;
    FUZZ_CHECK(!n->empty());
    check_from_text(text, n->name);
    check_from_text(text, n->pod);
    check_from_text(text, n->pod_namespace);
  }
  const std::string id(64, 'a');
  if (auto s = parse_storage_containers(text, id))
    check_from_text(text, s->name);
  // The last line as a pod log directory name with the uid it ends with.
  const size_t nl = text.rfind('\n');
  const std::string_view dir = nl == std::string_view::npos ? text : text.substr(nl + 1);
  if (dir.size() > 36) {
    const std::string_view uid = dir.substr(dir.size() - 36);
    if (auto p = parse_pod_log_dir(dir, uid)) {
      FUZZ_CHECK(p->pod_namespace + "_" + p->pod + "_" + std::string(uid) == dir);
      FUZZ_CHECK(p->pod.find('_') == std::string::npos);
    }
  }
  return 0;
}
