// Output views of `shmbpf ls`: aligned tables for terminals and single JSON
// documents for scripts, for segments, processes, containers and tmpfs
// mounts. Pure: ages are computed against an explicit now_ns
// (CLOCK_BOOTTIME nanoseconds), and every untrusted string is escaped.
#pragma once

#include "model/engine.hpp"
#include "views/columns.hpp"
#include "views/json.hpp"
#include "views/relations.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// Tables with the columns top shows (views/columns.hpp): a header line and
// one line per entry, each ending in '\n'. Login names, mount owners and
// containers' /dev/shm come from users and relations.
std::string segments_table(const std::vector<SegmentInfo> &segments, uint64_t now_ns);
std::string processes_table(const std::vector<ProcessInfo> &processes, const UserNames &users);
std::string containers_table(const std::vector<ContainerInfo> &containers,
                             const Relations &relations);
std::string mounts_table(const std::vector<MountUsage> &mounts, const Relations &relations);

// One JSON value each, for views that embed them (leaks, top). A host
// container (empty id) is null.
void write_segment(JsonWriter &w, const SegmentInfo &s, uint64_t now_ns);
void write_process(JsonWriter &w, const ProcessInfo &p);
void write_container(JsonWriter &w, const ContainerRef &c);
// A container for a sentence: its name (else short id), its pod, its
// runtime; "host" for the host. Escaped.
std::string container_text(const ContainerRef &c);
void write_container_row(JsonWriter &w, const ContainerInfo &c);
// A container row's memory fields (shmem_bytes, memory_usage_bytes,
// memory_limit_bytes), which top's rows share.
void write_container_memory(JsonWriter &w, const ContainerInfo &c);
void write_mount(JsonWriter &w, const MountUsage &m);
// A mount's peak, its owner's memory limit (room, seconds to it, whether
// it comes before the mount is full) and the size it needs: top's mounts
// share them.
void write_mount_limits(JsonWriter &w, const MountUsage &m);

// One JSON document each, ending in '\n': {"segments": [...]} and so on.
std::string segments_json(const std::vector<SegmentInfo> &segments, uint64_t now_ns);
// The same document from segments given one at a time (source(fn) calls fn
// for each, in order), handed to sink in pieces of about 1 MiB.
using SegmentSource = std::function<void(const std::function<void(const SegmentInfo &)> &)>;
void segments_json(const SegmentSource &segments, uint64_t now_ns,
                   const std::function<void(std::string_view)> &sink);
std::string processes_json(const std::vector<ProcessInfo> &processes);
std::string containers_json(const std::vector<ContainerInfo> &containers);
std::string mounts_json(const std::vector<MountUsage> &mounts);

} // namespace shmbpf
