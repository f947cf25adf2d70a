#include "views/reap_view.hpp"

#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/ls_view.hpp"
#include "views/table.hpp"

namespace shmbpf {

namespace {

std::string pids_text(const std::vector<uint32_t> &pids) {
  std::string out;
  for (size_t i = 0; i < pids.size() && i < 8; ++i)
    out += (i ? ", " : "") + std::to_string(pids[i]);
  if (pids.size() > 8)
    out += " and " + std::to_string(pids.size() - 8) + " more";
  return out;
}

std::string why(const ReapOutcome &o) {
  std::string out = escape_text(o.detail);
  if (o.reason == ReapSkip::held && !o.holders.empty())
    out += " (pid " + pids_text(o.holders) + ")";
  return out;
}

std::string what(const SegmentInfo &s) {
  return s.kind == Kind::sysv
             ? "shmid " + std::to_string(s.key.ino_or_shmid) + " (" + escape_text(s.path) + ")"
             : escape_text(s.path);
}

std::string summary(const ReapTotals &t, bool apply) {
  if (t.selected == 0)
    return "nothing to reap: no orphan matches";
  std::string out;
  if (apply)
    out = "freed " + std::to_string(t.freed) + " of " + std::to_string(t.selected) + " segments, " +
          human_bytes(t.bytes_freed);
  else
    out = "would free " + std::to_string(t.would_free) + " of " + std::to_string(t.selected) +
          " segments, " + human_bytes(t.bytes_would_free);
  if (t.skipped)
    out += "; skipped " + std::to_string(t.skipped) + " (" + human_bytes(t.bytes_skipped) + ")";
  if (t.gone)
    out += "; " + std::to_string(t.gone) + " already gone";
  return out;
}

} // namespace

std::string reap_text(const std::vector<ReapOutcome> &outcomes, const ReapPlan &plan, bool apply,
                      uint64_t now_ns) {
  const ReapTotals t = reap_totals(outcomes);
  std::string out = summary(t, apply) + "\n";
  if (!outcomes.empty()) {
    Table table;
    table.columns = {{"STATUS"},
                     {"KIND"},
                     {"BYTES", Align::right},
                     {"AGE", Align::right},
                     {"CONTAINER"},
                     {"CREATOR"},
                     {"SEGMENT", Align::left, true, true},
                     {"WHY"}};
    for (const ReapOutcome &o : outcomes) {
      const SegmentInfo &s = o.target.segment;
      table.rows.push_back({std::string(to_string(o.status)), std::string(to_string(s.kind)),
                            human_bytes(o.bytes ? o.bytes : s.bytes), age_cell(s, now_ns),
                            container_label(s.container.id), creator_cell(s.creator), what(s),
                            o.status == ReapStatus::skipped || o.status == ReapStatus::gone
                                ? why(o)
                                : std::string()});
    }
    out += "\n" + table_text(table);
  }
  if (!plan.held.empty()) {
    out += "\nnot freed: " + std::to_string(plan.held.size()) +
           " unlinked segments have no name to remove; their memory goes when their holders "
           "close them\n";
    for (const ReapHeld &h : plan.held) {
      const SegmentInfo &s = h.segment;
      out += "  " + what(s) + "  " + human_bytes(s.bytes) + "  ";
      out += s.holders.empty() ? std::string("held by a process shmbpf cannot see")
                               : "held by pid " + pids_text(s.holders);
      out += "\n";
    }
  }
  if (!apply && t.would_free)
    out += "\ndry run: nothing was removed; run again with --yes to free them\n";
  return out;
}

void write_reap_outcome(JsonWriter &w, const ReapOutcome &o, uint64_t now_ns) {
  w.begin_object();
  w.str("status", to_string(o.status));
  if (o.reason == ReapSkip::none)
    w.null("reason").null("detail");
  else
    w.str("reason", to_string(o.reason)).str("detail", o.detail);
  w.num("bytes", o.bytes);
  w.key("holders").begin_array();
  for (uint32_t pid : o.holders)
    w.num(pid);
  w.end_array();
  w.key("segment");
  write_segment(w, o.target.segment, now_ns);
  w.end_object();
}

std::string reap_json(const std::vector<ReapOutcome> &outcomes, const ReapPlan &plan, bool apply,
                      uint64_t now_ns) {
  const ReapTotals t = reap_totals(outcomes);
  std::string out;
  JsonWriter w(out);
  w.begin_object().boolean("dry_run", !apply);
  w.num("selected", t.selected).num("freed", t.freed).num("would_free", t.would_free);
  w.num("skipped", t.skipped).num("gone", t.gone);
  w.num("bytes_freed", t.bytes_freed).num("bytes_would_free", t.bytes_would_free);
  w.num("bytes_skipped", t.bytes_skipped);
  w.key("segments").begin_array();
  for (const ReapOutcome &o : outcomes)
    write_reap_outcome(w, o, now_ns);
  w.end_array();
  w.key("held").begin_array();
  for (const ReapHeld &h : plan.held)
    write_segment(w, h.segment, now_ns);
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

} // namespace shmbpf
