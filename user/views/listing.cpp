#include "views/listing.hpp"

#include "views/ls_view.hpp"

#include <utility>

namespace shmbpf {

std::optional<Listing> take_listing(const EngineVisit &visit, const LsQuery &query, uint64_t now,
                                    uint32_t host_mntns) {
  Listing out;
  out.now_ns = now;
  out.host_mntns = host_mntns;
  if (query.by == ListBy::segments) {
    auto segments = take_segments(visit, query.filter(), now, kListOrphanMinAgeNs);
    if (!segments)
      return std::nullopt;
    out.segments = std::move(*segments);
    return out;
  }
  const bool text = !query.json;
  const bool read = visit([&](const Engine &engine) {
    switch (query.by) {
    case ListBy::segments:
      break;
    case ListBy::processes:
      // Only processes with shared memory: ps lists the others.
      out.processes = engine.processes(now);
      std::erase_if(out.processes, [](const ProcessInfo &p) {
        return p.segments_created == 0 && p.segments_held == 0 && p.sysv_attachments == 0;
      });
      break;
    case ListBy::containers:
    case ListBy::mounts:
      if (query.by == ListBy::containers)
        out.containers = engine.containers_and_host_cgroups(now);
      if (query.by == ListBy::mounts || text)
        out.mounts = engine.mounts();
      if (text)
        out.processes = engine.processes(now);
      break;
    }
  });
  if (!read)
    return std::nullopt;
  return out;
}

Listing take_listing(const Engine &engine, const LsQuery &query, uint64_t now,
                     uint32_t host_mntns) {
  return *take_listing(visit_of(engine), query, now, host_mntns);
}

std::string listing_output(const Listing &l, const LsQuery &query, const UserNames &users) {
  const bool text = !query.json;
  switch (query.by) {
  case ListBy::segments:
    return text ? segments_table(l.segments, l.now_ns) : segments_json(l.segments, l.now_ns);
  case ListBy::processes:
    return text ? processes_table(l.processes, users) : processes_json(l.processes);
  case ListBy::containers:
    return text ? containers_table(l.containers, l.relations()) : containers_json(l.containers);
  case ListBy::mounts:
    return text ? mounts_table(l.mounts, l.relations()) : mounts_json(l.mounts);
  }
  return {};
}

} // namespace shmbpf
