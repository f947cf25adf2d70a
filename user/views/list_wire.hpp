// How `ls` and `leaks` ask for what they list, locally or from a daemon
// (`--server`): one request type per query, holding what the user chose.
// It becomes the model's filter, the query string sent to the daemon, and
// is read back from that query string by the daemon, here and nowhere else
// (as top_wire does for top's screen). Pure.
#pragma once

#include "facts/result.hpp"
#include "model/leaks.hpp"
#include "model/types.hpp"
#include "views/top_wire.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace shmbpf {

enum class ListBy { segments, processes, containers, mounts };

// `ls --by X` and the daemon's /v1/segments, /v1/processes, /v1/containers
// and /v1/mounts.
struct LsQuery {
  ListBy by = ListBy::segments;
  bool json = false;
  // Segments only:
  std::optional<uint32_t> pid;
  std::optional<std::string> container; // id, id prefix or name; "host" for the host
  std::optional<std::string> mount;     // a mountpoint
  std::optional<Kind> kind;
  std::optional<std::string> match; // fnmatch(3) glob on the path

  // "/v1/segments" and so on.
  std::string path() const;
  // Whether path is one of those.
  static bool is_list_path(std::string_view path);
  QueryFields fields() const;
  // The query a request for path asked; an error (a 400's text) names the
  // parameter that is unknown, repeated or bad. by follows the path.
  static Result<LsQuery> from_request(std::string_view path, const QueryFields &fields);
  SegmentFilter filter() const;
};

// `leaks` and the daemon's /v1/leaks.
struct LeaksQuery {
  bool json = false;
  double min_age_s = kLeakMinAgeS; // younger segments are not orphans yet
  std::optional<std::string> match;
  bool all_mounts = false; // also tmpfs mounts that are not shared memory
  double window_s = 0;     // > 0: growth and faults over this many seconds

  static constexpr std::string_view kPath = "/v1/leaks";
  QueryFields fields() const;
  static Result<LeaksQuery> from_fields(const QueryFields &fields);
  uint64_t min_age_ns() const;
  uint64_t window_ns() const;
  OrphanScope scope() const {
    return all_mounts ? OrphanScope::all_mounts : OrphanScope::shared_memory;
  }
};

} // namespace shmbpf
