// Output views of `shmbpf ls`: aligned tables for terminals and single JSON
// documents for scripts, for segments, processes, containers and tmpfs
// mounts. Pure: ages are computed against an explicit now_ns
// (CLOCK_BOOTTIME nanoseconds), and every untrusted string is escaped.
#pragma once

#include "model/engine.hpp"
#include "views/json.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// 1024-based sizes: "512B", "64K", "1.0M", "12G" (one decimal below 10).
std::string human_bytes(uint64_t bytes);
// "5s", "3m", "2h", "4d"; "?" when unknown.
std::string human_age(std::optional<uint64_t> seconds);

// Age of a segment in whole seconds, nullopt when its creation was not seen.
std::optional<uint64_t> segment_age_s(const SegmentInfo &s, uint64_t now_ns);

// Tables: a header line and one line per entry, each ending in '\n'.
std::string segments_table(const std::vector<SegmentInfo> &segments, uint64_t now_ns);
std::string processes_table(const std::vector<ProcessInfo> &processes);
std::string containers_table(const std::vector<ContainerInfo> &containers);
std::string mounts_table(const std::vector<MountUsage> &mounts);

// One JSON value each, for views that embed them (leaks, top). A host
// container (empty id) is null.
void write_segment(JsonWriter &w, const SegmentInfo &s, uint64_t now_ns);
void write_process(JsonWriter &w, const ProcessInfo &p);
void write_container(JsonWriter &w, const ContainerRef &c);
void write_container_row(JsonWriter &w, const ContainerInfo &c);
void write_mount(JsonWriter &w, const MountUsage &m);

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
