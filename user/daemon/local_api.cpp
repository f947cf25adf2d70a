#include "daemon/local_api.hpp"
#include "daemon/reap_record.hpp"

#include "model/leaks.hpp"
#include "model/usage_history.hpp"
#include "sources/users.hpp"
#include "views/escape.hpp"
#include "views/export_view.hpp"
#include "views/leaks_view.hpp"
#include "views/list_wire.hpp"
#include "views/listing.hpp"
#include "views/ls_view.hpp"
#include "views/relations.hpp"
#include "views/top_frame.hpp"
#include "views/top_json.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_wire.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <set>

namespace shmbpf {

namespace {

constexpr std::string_view kJson = "application/json";
// The longest clock /v1/top prints in its title ("14:03:59" is top's).
constexpr size_t kMaxClock = 32;
// The largest screen /v1/top draws, in either direction.
constexpr std::size_t kMaxScreenCells = 10000;
constexpr std::string_view kText = "text/plain; charset=utf-8";

// A request the API cannot answer as asked: 400 and why.
struct BadRequest {
  std::string why;
};

HttpReply ok(bool text, std::string body) {
  return {200, std::string(text ? kText : kJson), std::move(body), {}};
}

// Login names of the processes' uids, looked up after the monitor's lock
// is released (NSS may be slow).
UserNames names_of(const std::vector<ProcessInfo> &procs) {
  LoginNames names;
  return user_names(procs, [&](uint32_t uid) { return names.name_of(uid); });
}

} // namespace

HttpReply LocalApi::get(std::string_view path, const HttpQuery &query) const {
  if (!path.starts_with("/v1/"))
    return endpoints_.get(path);
  try {
    if (LsQuery::is_list_path(path))
      return list(path, query);
    if (path == "/v1/leaks")
      return leaks(query);
    if (path == "/v1/top")
      return top(query);
  } catch (const BadRequest &e) {
    return {400, std::string(kText), e.why + "\n", {}};
  }
  return {404,
          std::string(kText),
          "not found; the API answers /v1/segments, /v1/processes, /v1/containers, /v1/mounts, "
          "/v1/leaks and /v1/top\n",
          {}};
}

HttpReply LocalApi::list(std::string_view path, const HttpQuery &q) const {
  auto query = LsQuery::from_request(path, q);
  if (!query)
    throw BadRequest{query.error()};
  // Segments are copied a part at a time, the lock let go between parts.
  const auto host_mntns = endpoints_.read(
      [](const Engine &, const MonitorStats &, const MetricsCounters &c) { return c.host_mntns; });
  if (!host_mntns)
    return Endpoints::not_ready();
  auto listing = take_listing(endpoints_.visit(), *query, Monitor::now_ns(), *host_mntns);
  if (!listing)
    return Endpoints::not_ready();
  const bool text = !query->json;
  const UserNames users =
      text && query->by == ListBy::processes ? names_of(listing->processes) : UserNames{};
  return ok(text, listing_output(*listing, *query, users));
}

HttpReply LocalApi::leaks(const HttpQuery &q) const {
  auto parsed = LeaksQuery::from_fields(q);
  if (!parsed)
    throw BadRequest{parsed.error()};
  const LeaksQuery &query = *parsed;
  if (query.window_s > 0 && !usage_)
    throw BadRequest{"window: this daemon keeps no usage samples"};
  if (usage_ && query.window_s > usage_->keep_s()) {
    char keep[32];
    std::snprintf(keep, sizeof keep, "%g", usage_->keep_s());
    throw BadRequest{"window must be at most " + std::string(keep) +
                     " seconds: the daemon keeps usage samples for that long, not " +
                     escape_text(q.find("window")->second)};
  }
  const bool text = !query.json;
  const uint64_t window_ns = query.window_ns();
  const uint64_t now = Monitor::now_ns();
  // The orphans a part at a time, the lock let go between parts.
  auto orphans = take_orphans(endpoints_.visit(), now, query.min_age_ns(), query.scope());
  auto faults =
      endpoints_.read([&](const Engine &engine, const MonitorStats &, const MetricsCounters &) {
        return query.window_s > 0 ? engine.sigbus_since(now > window_ns ? now - window_ns : 0)
                                  : std::vector<BusError>{};
      });
  if (!orphans || !faults)
    return Endpoints::not_ready();
  LeakReport report = summarize_orphans(*orphans, query.match.value_or(""));
  report.bus_errors = bus_error_mounts(*faults);
  if (query.window_s > 0) {
    // Growth from the samples kept, judged after their lock is let go.
    const UsageWindow w = usage_->window(window_ns);
    report.growth = find_growth(w);
    report.window = w.span;
  }
  HttpReply r = ok(text, text ? leaks_text(report, now, static_cast<uint64_t>(query.min_age_s))
                              : leaks_json(report, now));
  r.headers.emplace_back(kLeakingHeader, report.leaking() ? "yes" : "no");
  return r;
}

HttpReply LocalApi::top(const HttpQuery &q) const {
  QueryFields fields = q;
  auto take = [&](const char *name) {
    std::optional<std::string> v;
    if (auto it = fields.find(name); it != fields.end()) {
      v = it->second;
      fields.erase(name);
    }
    return v;
  };
  const std::string format = take("format").value_or("json");
  if (format != "json" && format != "text" && format != "frame")
    throw BadRequest{"format must be json, text or frame, not '" + escape_text(format) + "'"};
  // The client's wall clock for the title line: its time zone, not ours.
  // Printed on a terminal: a short line of printable ASCII, nothing else.
  const std::string clock = take("clock").value_or("");
  if (clock.size() > kMaxClock ||
      std::any_of(clock.begin(), clock.end(), [](char c) { return c < 0x20 || c > 0x7e; }))
    throw BadRequest{"clock must be at most " + std::to_string(kMaxClock) +
                     " printable ASCII characters"};
  auto parsed = top_state_from_fields(fields);
  if (!parsed)
    throw BadRequest{parsed.error()};
  TopState st = std::move(*parsed);
  // The frame is padded to the screen's height and cut to its width: a
  // screen no terminal has would have the daemon fill its memory.
  for (const auto &[name, v] : {std::pair{"width", st.width}, std::pair{"height", st.height},
                                std::pair{"page_rows", st.page_rows}})
    if (v > kMaxScreenCells)
      throw BadRequest{std::string(name) + " must be at most " + std::to_string(kMaxScreenCells) +
                       ", not " + std::to_string(v)};
  auto snap = endpoints_.read(
      [&](const Engine &engine, const MonitorStats &stats, const MetricsCounters &c) {
        TopCounters counters{Monitor::now_ns(), clock, stats.events, stats.lost, c.host_mntns};
        // Names after the lock: none looked up here.
        return take_top_snapshot(engine, std::move(counters), st, [](uint32_t) { return ""; });
      });
  if (!snap)
    return Endpoints::not_ready();
  snap->users = names_of(snap->processes);
  if (format == "json")
    return ok(false, top_json(*snap, st) + "\n");
  const TopFrame frame = build_top_frame(*snap, st);
  return ok(true, format == "text" ? top_text(frame) : top_frame_reply(frame, st));
}

HttpReply LocalApi::post(std::string_view path, std::string_view body,
                         std::string_view token) const {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (path != "/v1/reaped")
    return {404, std::string(kText), "not found: POST takes only /v1/reaped\n", {}};
  if (!exporter_)
    return {200, std::string(kText), "not exported: this daemon has no --export-file\n", {}};
  if (token_.empty() || token != token_)
    return {403,
            std::string(kText),
            "forbidden: reap records are taken only from root (the socket's token)\n",
            {}};
  // Whole reap records only, each read back and written as this daemon
  // renders it (reap_record.hpp): nothing goes to the export as it came.
  const auto mounts = endpoints_.read([](const Engine &engine, const MonitorStats &,
                                         const MetricsCounters &) { return engine.mounts(); });
  if (!mounts)
    return Endpoints::not_ready();
  ExportFormatter fmt(exporter_->clock());
  std::string out;
  size_t records = 0;
  for (std::string_view rest = body; !rest.empty();) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos)
      return {400, std::string(kText), "bad request: the last record has no newline\n", {}};
    auto record = read_reap_record(rest.substr(0, nl), fmt);
    ++records;
    std::string problem =
        record ? reap_record_place_problem(*record, *mounts) : std::string(record.error());
    if (!problem.empty())
      return {400,
              std::string(kText),
              "bad request: record " + std::to_string(records) + ": " + problem + "\n",
              {}};
    fmt.append_reap(out, record->ts_ns, record->outcome, record->by, record->by_pid);
    rest.remove_prefix(nl + 1);
  }
  if (records && !exporter_->submit(out))
    return {503, std::string(kText), "the export file's writer is behind; try again\n", {}};
  return {200, std::string(kText), std::to_string(records) + " records exported\n", {}};
}

} // namespace shmbpf
