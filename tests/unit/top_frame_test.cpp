// The `shmbpf top` screen from synthetic snapshots: header, views, sorting,
// filtering, escaping, narrow screens, scrolling and the batch frame.
#include "views/text_width.hpp"
#include "views/top_frame.hpp"
#include "views/top_json.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

TEST(TopFrame, HeaderShowsTotalsRatesAndMounts) {
  auto snap = snapshot();
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  ASSERT_GE(f.lines.size(), 6u);
  EXPECT_EQ(f.lines[0].style, TopStyle::title);
  EXPECT_TRUE(contains(f.lines[0].text, "12:00:00"));
  EXPECT_TRUE(contains(f.lines[0].text, "view: processes"));
  EXPECT_TRUE(contains(f.lines[0].text, "sort: bytes"));
  EXPECT_TRUE(contains(f.lines[1].text, "3 tmpfs (7.0M)")) << f.lines[1].text;
  EXPECT_TRUE(contains(f.lines[1].text, "1 memfd (4.0K)"));
  EXPECT_TRUE(contains(f.lines[1].text, "0 sysv (0B)"));
  EXPECT_TRUE(contains(f.lines[1].text, "Orphans: 1 (1.0M)"));
  EXPECT_TRUE(contains(f.lines[2].text, "2.5 creates/s")) << f.lines[2].text;
  EXPECT_TRUE(contains(f.lines[2].text, "1.0 unlinks/s"));
  EXPECT_TRUE(contains(f.lines[2].text, "SIGBUS: 0"));
  EXPECT_TRUE(contains(f.lines[2].text, "Lost events: 0"));
  EXPECT_EQ(f.lines[2].style, TopStyle::normal); // nothing lost, no SIGBUS

  // /dev/shm of the host and of the container; /run holds nothing shmbpf
  // tracks and is left to the mounts view.
  const TopLine *host = line_with(f, "/dev/shm (host)");
  const TopLine *ctr = line_with(f, "/dev/shm (0123456789ab)");
  ASSERT_TRUE(host) << top_text(f);
  ASSERT_TRUE(ctr) << top_text(f);
  EXPECT_EQ(line_with(f, "/run ("), nullptr);
  EXPECT_TRUE(contains(host->text, "[##..................]")) << host->text;
  EXPECT_TRUE(contains(host->text, "9.8%"));
  EXPECT_TRUE(contains(host->text, "100M/1.0G"));
  EXPECT_EQ(host->style, TopStyle::normal);
  EXPECT_FALSE(host->text.starts_with("!!"));
}

TEST(TopFrame, LostEventsAndFullMountsStandOut) {
  auto snap = snapshot();
  snap.lost = 17;
  snap.mounts[1].mount.used_bytes = 60ull << 20; // 93.75% of 64M
  snap.mounts[1].percent = 93.75;
  snap.mounts[0].growth_bytes_per_s = 1 << 20;
  snap.mounts[0].seconds_to_full = 924; // fills in 15 minutes
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  const TopLine *lost = line_with(f, "Lost events: 17");
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->style, TopStyle::alert);
  EXPECT_TRUE(contains(lost->text, "(!)")); // visible without colours, in batch mode too

  const TopLine *ctr = line_with(f, "/dev/shm (0123456789ab)");
  ASSERT_TRUE(ctr);
  EXPECT_EQ(ctr->style, TopStyle::alert);
  EXPECT_TRUE(ctr->text.starts_with("!! ")) << ctr->text;
  EXPECT_TRUE(contains(ctr->text, "93.8%"));
  const TopLine *host = line_with(f, "/dev/shm (host)");
  ASSERT_TRUE(host);
  EXPECT_TRUE(host->text.starts_with("!! ")) << host->text;
  EXPECT_TRUE(contains(host->text, "+1.0M/s"));
  EXPECT_TRUE(contains(host->text, "full in 15m"));
}

// An OOM kill: counted on the activity line, told on a line of its own
// (as a SIGBUS is), in the container's details and in top's JSON.
TEST(TopFrame, TheLastOomKillIsToldInTheHeaderAndTheJson) {
  auto snap = snapshot();
  OomKill k;
  k.ts_ns = now - 12 * sec;
  k.pid = 4321;
  k.comm = "python3";
  k.container.id = ctr_id;
  k.memory = CgroupMemory{.shmem = 26u << 20, .usage = 32u << 20, .limit = {32u << 20}};
  k.largest = {{"/dev/shm/torch_1_2_3", 25u << 20, 64u << 20}};
  snap.totals.oom_kills = 2;
  snap.totals.last_oom_kill = k;
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  const TopLine *activity = line_with(f, "OOM kills: 2");
  ASSERT_TRUE(activity) << top_text(f);
  EXPECT_EQ(activity->style, TopStyle::alert);
  const TopLine *last = line_with(f, "Last OOM kill: ");
  ASSERT_TRUE(last) << top_text(f);
  EXPECT_EQ(last->style, TopStyle::alert);
  EXPECT_TRUE(contains(last->text, "12s ago, container 0123456789ab (host pid 4321) (python3): "
                                   "shmem 26M of limit 32M (81%), largest /dev/shm/torch_1_2_3 "
                                   "(25M)"))
      << last->text;

  const json j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["totals"]["oom_kills"], 2);
  const json &o = j["totals"]["last_oom_kill"];
  EXPECT_EQ(o["pid"], 4321);
  EXPECT_EQ(o["comm"], "python3");
  EXPECT_EQ(o["container"], ctr_id);
  EXPECT_EQ(o["cgroup_shmem"], 26u << 20);
  EXPECT_EQ(o["cgroup_limit"], 32u << 20);
  EXPECT_DOUBLE_EQ(o["shmem_share"].get<double>(), 26.0 / 32.0);
  EXPECT_EQ(o["largest_files"][0]["path"], "/dev/shm/torch_1_2_3");
  EXPECT_EQ(o["largest_files"][0]["bytes"], 25u << 20);

  snap.totals.oom_kills = 0;
  snap.totals.last_oom_kill.reset();
  f = build_top_frame(snap, st);
  EXPECT_EQ(line_with(f, "Last OOM kill"), nullptr);
  EXPECT_TRUE(json::parse(top_json(snap, st))["totals"]["last_oom_kill"].is_null());
}

// A container's /dev/shm says when it meets its owner's memory limit, and
// when that comes before the mount is full.
TEST(TopFrame, AMountLineSaysWhichLimitComesFirst) {
  auto snap = snapshot();
  // 60 of its 64 MiB used: 4 MiB to full, 2 MiB to the memory limit.
  snap.mounts[1].memory_room = 2u << 20;
  snap.mounts[1].growth_bytes_per_s = 1 << 20;
  snap.mounts[1].seconds_to_memory_limit = 2;
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  const TopLine *ctr = line_with(f, "/dev/shm (0123456789ab)");
  ASSERT_TRUE(ctr) << top_text(f);
  EXPECT_TRUE(contains(ctr->text, "  mem limit in 2s  OOM before full")) << ctr->text;
  EXPECT_EQ(ctr->style, TopStyle::alert); // within the hour
  // 8 MiB to the limit: full comes first.
  snap.mounts[1].memory_room = 8u << 20;
  snap.mounts[1].seconds_to_memory_limit = 8;
  f = build_top_frame(snap, st);
  ctr = line_with(f, "/dev/shm (0123456789ab)");
  ASSERT_TRUE(ctr);
  EXPECT_TRUE(ctr->text.ends_with("  mem limit in 8s")) << ctr->text;
  const TopLine *host = line_with(f, "/dev/shm (host)");
  ASSERT_TRUE(host);
  EXPECT_FALSE(contains(host->text, "mem limit")) << host->text;
}

// Files a scan could not reach are in no table: the header says where.
TEST(TopFrame, ScanGapsAreToldInTheHeader) {
  auto snap = snapshot();
  auto st = batch_state();
  EXPECT_EQ(line_with(build_top_frame(snap, st), "Scan: "), nullptr);
  snap.scan_gaps = {{25, "/dev/shm", {4, false}},
                    {26, "/a", {0, true}},
                    {27, "/b", {1, false}},
                    {28, "/c", {1, false}}};
  TopFrame f = build_top_frame(snap, st);
  const TopLine *deep = line_with(f, "Scan: /dev/shm: not every file was scanned");
  ASSERT_TRUE(deep) << top_text(f);
  EXPECT_EQ(deep->style, TopStyle::alert);
  EXPECT_TRUE(contains(deep->text, "4 directories nested too deep")) << deep->text;
  EXPECT_TRUE(line_with(f, "Scan: /a: not every file was scanned"));
  EXPECT_EQ(line_with(f, "Scan: /b"), nullptr); // two at most, then a count
  EXPECT_TRUE(line_with(f, "Scan: ... and 2 more filesystems")) << top_text(f);
}

TEST(TopFrame, ProcessesViewColumnsAndDefaultSortByBytes) {
  auto snap = snapshot();
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  const TopLine *cols = line_with(f, "PID");
  ASSERT_TRUE(cols);
  EXPECT_EQ(cols->style, TopStyle::columns);
  std::size_t at = 0;
  for (const char *c :
       {"PID", "USER", "COMM", "CONTAINER", "SEGS", "BYTES", "HELD", "CREATE/s", "UNHELD"}) {
    const auto pos = cols->text.find(c, at);
    ASSERT_NE(pos, std::string::npos) << c << " in " << cols->text;
    at = pos;
  }
  auto rows = rows_after(f, "PID");
  // pid 300 has nothing to do with shared memory: not listed.
  ASSERT_EQ(rows.size(), 3u) << top_text(f);
  EXPECT_TRUE(contains(rows[0], "python3")) << rows[0];
  EXPECT_TRUE(contains(rows[0], "alice"));
  EXPECT_TRUE(contains(rows[0], "6.0M"));
  EXPECT_TRUE(contains(rows[1], "worker"));
  EXPECT_TRUE(contains(rows[1], "0123456789ab")); // container id, shortened
  EXPECT_FALSE(contains(rows[1], "0123456789abc"));
  EXPECT_TRUE(contains(rows[2], "trainer"));
  EXPECT_TRUE(contains(rows[2], "7.0M")); // HELD
  // UNHELD: python3 created a segment nobody holds any more.
  EXPECT_TRUE(rows[0].ends_with(" 1")) << rows[0];
  EXPECT_TRUE(rows[2].ends_with(" 0")) << rows[2];
}

TEST(TopFrame, SortKeysReorderRows) {
  auto snap = snapshot();
  auto st = batch_state();
  ASSERT_NE(top_handle_key(st, 'r'), TopAction::none); // rate
  auto rows = rows_after(build_top_frame(snap, st), "PID");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(contains(rows[0], "trainer"));
  EXPECT_TRUE(contains(rows[0], "3.0"));
  EXPECT_TRUE(contains(rows[1], "python3"));

  ASSERT_NE(top_handle_key(st, 'n'), TopAction::none); // count
  rows = rows_after(build_top_frame(snap, st), "PID");
  EXPECT_TRUE(contains(rows[0], "python3"));
  EXPECT_EQ(st.sort, TopSort::count);

  ASSERT_NE(top_handle_key(st, 's'), TopAction::none); // segments view
  ASSERT_NE(top_handle_key(st, 'a'), TopAction::none); // oldest first
  rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].starts_with("/dev/shm/torch_100_a_1")) << rows[0];
  EXPECT_TRUE(rows[2].starts_with("/dev/shm/model.bin"));
  ASSERT_NE(top_handle_key(st, 'b'), TopAction::none);
  rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  EXPECT_TRUE(rows[0].starts_with("/dev/shm/torch_100_a_0")) << rows[0];
}

TEST(TopFrame, SegmentsViewColumns) {
  auto snap = snapshot();
  snap.segments[1].orphan = true;
  snap.segments[1].creator.exited = true;
  auto st = batch_state();
  st.view = TopView::segments;
  TopFrame f = build_top_frame(snap, st);
  const TopLine *cols = line_with(f, "PATH/NAME");
  ASSERT_TRUE(cols);
  for (const char *c : {"KIND", "SIZE", "BYTES", "STATE", "CREATOR", "HOLDERS", "AGE"})
    EXPECT_TRUE(contains(cols->text, c)) << c;
  const TopLine *torch0 = line_with(f, "torch_100_a_0");
  ASSERT_TRUE(torch0);
  EXPECT_TRUE(contains(torch0->text, "100/python3"));
  EXPECT_TRUE(contains(torch0->text, "100,200"));
  EXPECT_TRUE(contains(torch0->text, "30s"));
  const TopLine *orphan = line_with(f, "torch_100_a_1");
  ASSERT_TRUE(orphan);
  EXPECT_TRUE(contains(orphan->text, "linked orphan"));
  EXPECT_TRUE(contains(orphan->text, "(exited)"));
  EXPECT_TRUE(contains(orphan->text, "10m"));
  EXPECT_EQ(orphan->style, TopStyle::alert);
}

TEST(TopFrame, ContainersViewShowsShmMountPercent) {
  auto snap = snapshot();
  auto st = batch_state();
  ASSERT_NE(top_handle_key(st, 'c'), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  const TopLine *cols = line_with(f, "RUNTIME");
  ASSERT_TRUE(cols);
  for (const char *c : {"ID", "NAME", "PROCS", "SEGS", "BYTES", "SHM MOUNT %"})
    EXPECT_TRUE(contains(cols->text, c)) << c;
  // No container is in a pod: no POD or NAMESPACE column.
  EXPECT_FALSE(contains(cols->text, "POD"));
  EXPECT_FALSE(contains(cols->text, "NAMESPACE"));
  auto rows = rows_after(f, "RUNTIME");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].starts_with("host")) << rows[0];
  EXPECT_TRUE(contains(rows[0], "9.8%"));
  EXPECT_TRUE(rows[1].starts_with("0123456789ab "));
  EXPECT_TRUE(contains(rows[1], "docker"));
  EXPECT_TRUE(contains(rows[1], "93.8%"));
}

// The host's top-level cgroups follow the containers' rows, with their
// memory only, whatever the sort; no process or container option selects them; their details say
// what they hold.
TEST(TopFrame, TheHostsTopLevelCgroupsAreRowsOfTheirMemory) {
  auto snap = snapshot();
  ContainerInfo top;
  top.cgroup = "/system.slice";
  top.memory = CgroupMemory{.shmem = 3u << 20, .usage = 300u << 20, .limit = {}};
  snap.containers.insert(snap.containers.begin() + 1, top);
  auto st = batch_state();
  ASSERT_NE(top_handle_key(st, 'c'), TopAction::none);
  auto rows = rows_after(build_top_frame(snap, st), "RUNTIME");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[2].starts_with("host/system.slice ")) << rows[2]; // after every container
  EXPECT_TRUE(contains(rows[2], "3.0M")) << rows[2];
  EXPECT_TRUE(contains(rows[2], "none")) << rows[2];
  st.container = "";
  rows = rows_after(build_top_frame(snap, st), "RUNTIME");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].starts_with("host ")) << rows[0];

  st = batch_state();
  st.view = TopView::containers;
  st.details = true;
  st.details_view = TopView::containers;
  st.details_id = "g:/system.slice";
  const TopFrame f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "cgroup:        /system.slice")) << top_text(f);
  EXPECT_TRUE(line_with(f, "memory:        shmem 3.0M, usage 300M of no limit")) << top_text(f);
}

TEST(TopFrame, MountsViewListsEveryFilesystemOnce) {
  auto snap = snapshot();
  // The host /dev/shm seen again from a sandboxed service's namespace.
  snap.mounts.push_back(mount("/dev/shm", 4026533000u, 22, 1ull << 30, 100ull << 20, 3));
  auto st = batch_state();
  ASSERT_NE(top_handle_key(st, 'm'), TopAction::none);
  auto rows = rows_after(build_top_frame(snap, st), "MOUNTPOINT");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(contains(rows[0], "host")); // largest used first
  EXPECT_TRUE(contains(rows[0], "100M"));
  EXPECT_TRUE(contains(rows[1], "0123456789ab"));
  EXPECT_TRUE(rows[2].starts_with("/run"));
}

TEST(TopFrame, PidAndContainerOptionsRestrictRows) {
  auto snap = snapshot();
  auto st = batch_state();
  st.pid = 200;
  auto rows = rows_after(build_top_frame(snap, st), "PID");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(contains(rows[0], "trainer"));
  st.view = TopView::segments;
  rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  ASSERT_EQ(rows.size(), 2u); // holds torch_100_a_0, created model.bin

  st = batch_state();
  st.container = "0123"; // a prefix
  rows = rows_after(build_top_frame(snap, st), "PID");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(contains(rows[0], "worker"));
  st.container = ""; // the host
  rows = rows_after(build_top_frame(snap, st), "PID");
  EXPECT_EQ(rows.size(), 2u);
}

TEST(TopFrame, EscapeSequencesInNamesAreShownEscaped) {
  auto snap = snapshot();
  snap.segments[2].path = "/dev/shm/evil\x1b[2J\x1b]0;pwned\x07\n\xff";
  snap.processes[1].comm = "bad\x1b[31mcomm";
  snap.mounts[0].mount.mountpoint = "/dev/shm";
  snap.mounts.push_back(mount("/tmp/\x1b[H", host_ns, 50, 1 << 20, 4096, 1));
  for (TopView v : {TopView::processes, TopView::containers, TopView::mounts, TopView::segments}) {
    for (std::size_t width : {std::size_t{0}, std::size_t{80}, std::size_t{30}}) {
      TopState st;
      st.view = v;
      st.width = width;
      st.height = width ? 40 : 0;
      TopFrame f = build_top_frame(snap, st);
      for (const auto &l : f.lines)
        for (unsigned char c : l.text)
          ASSERT_TRUE(c >= 0x20 && c != 0x7f) << "control byte in: " << l.text;
    }
  }
  auto st = batch_state();
  st.view = TopView::segments;
  std::string text = top_text(build_top_frame(snap, st));
  EXPECT_TRUE(contains(text, "/dev/shm/evil\\x1b[2J\\x1b]0;pwned\\x07\\n\\xff")) << text;
  st.view = TopView::processes;
  text = top_text(build_top_frame(snap, st));
  EXPECT_TRUE(contains(text, "bad\\x1b[31mcomm")) << text;

  // The filter matches what the user sees, escapes included.
  st.view = TopView::segments;
  st.filter = "\\x1b[2j";
  auto rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  ASSERT_EQ(rows.size(), 1u);

  // JSON: one line, the name as the screen shows it (the one escaping rule).
  st.filter.clear();
  const std::string j = top_json(snap, st);
  EXPECT_EQ(j.find('\n'), std::string::npos);
  EXPECT_EQ(j.find('\x1b'), std::string::npos);
  json doc = json::parse(j);
  bool found = false;
  for (const auto &r : doc["rows"])
    found = found || r["path"].get<std::string>().starts_with("/dev/shm/evil\\x1b[2J");
  EXPECT_TRUE(found) << j;
}

TEST(TopFrame, NarrowScreensCutLinesWithoutBreakingCharacters) {
  auto snap = snapshot();
  snap.segments[0].path = "/dev/shm/日本語のとても長いファイル名_torch_shared_memory_0";
  snap.processes[0].comm = "pythön3";
  for (std::size_t width : {20u, 33u, 40u, 57u, 80u}) {
    for (TopView v :
         {TopView::processes, TopView::containers, TopView::mounts, TopView::segments}) {
      TopState st;
      st.view = v;
      st.width = width;
      st.height = 20;
      TopFrame f = build_top_frame(snap, st);
      EXPECT_EQ(f.lines.size(), 20u);
      for (const auto &l : f.lines) {
        EXPECT_LE(terminal_width(l.text), width) << l.text;
        // Valid UTF-8: no lone continuation or truncated lead bytes.
        for (std::size_t i = 0; i < l.text.size();) {
          const auto b = static_cast<unsigned char>(l.text[i]);
          std::size_t len = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
          ASSERT_NE(len, 0u) << l.text;
          ASSERT_LE(i + len, l.text.size()) << l.text;
          for (std::size_t k = 1; k < len; ++k)
            ASSERT_EQ(static_cast<unsigned char>(l.text[i + k]) & 0xc0, 0x80) << l.text;
          i += len;
        }
      }
    }
  }
  // Paths keep their end (the file name) when cut.
  TopState st;
  st.view = TopView::segments;
  st.width = 60;
  st.height = 20;
  TopFrame f = build_top_frame(snap, st);
  const TopLine *row = line_with(f, "memory_0");
  ASSERT_TRUE(row) << top_text(f);
  EXPECT_TRUE(row->text.starts_with("..")) << row->text;
  EXPECT_EQ(terminal_width("日本"), 4u);
}

TEST(TopFrame, InteractiveFrameFillsTheScreenAndScrolls) {
  auto snap = snapshot();
  for (uint32_t i = 0; i < 100; ++i)
    snap.segments.push_back(
        seg(1000 + i, "/dev/shm/many_" + std::to_string(1000 + i), 4096, 100, {100}, 1));
  TopState st;
  st.width = 100;
  st.height = 20;
  st.view = TopView::segments;
  TopFrame f = build_top_frame(snap, st);
  ASSERT_EQ(f.lines.size(), 20u);
  EXPECT_EQ(f.lines.back().style, TopStyle::help);
  EXPECT_TRUE(contains(f.lines.back().text, "q quit"));
  EXPECT_EQ(st.rows, 103u);
  const std::size_t page = st.page_rows;
  EXPECT_GT(page, 5u);
  // The selection bar starts on the first row.
  auto selected = [&](const TopFrame &fr) {
    std::vector<std::string> out;
    for (const auto &l : fr.lines)
      if (l.style == TopStyle::selected)
        out.push_back(l.text);
    return out;
  };
  auto sel = selected(f);
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_TRUE(sel[0].starts_with("/dev/shm/torch_100_a_0"));

  ASSERT_NE(top_handle_key(st, top_key::page_down), TopAction::none);
  f = build_top_frame(snap, st);
  EXPECT_EQ(st.selected, page);
  sel = selected(f);
  ASSERT_EQ(sel.size(), 1u);
  ASSERT_NE(top_handle_key(st, top_key::end), TopAction::none);
  f = build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 102u);
  EXPECT_EQ(st.scroll, 103u - page);
  ASSERT_EQ(selected(f).size(), 1u);
  ASSERT_NE(top_handle_key(st, top_key::down), TopAction::none); // stays on the last row
  build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 102u);
  ASSERT_NE(top_handle_key(st, top_key::home), TopAction::none);
  build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 0u);
  EXPECT_EQ(st.scroll, 0u);
}

TEST(TopFrame, SelectionFollowsItsRowAcrossRefreshes) {
  auto snap = snapshot();
  TopState st;
  st.view = TopView::segments;
  build_top_frame(snap, st);
  ASSERT_NE(top_handle_key(st, top_key::down), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  const std::string id = st.selected_id;
  ASSERT_FALSE(id.empty());
  // The selected segment (2M) grows to the largest: it moves to the top and
  // the selection goes with it.
  snap.segments[1].bytes = 100 << 20;
  f = build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 0u);
  EXPECT_EQ(st.selected_id, id);
  // Its row disappears: the selection stays at the same position.
  snap.segments.erase(snap.segments.begin() + 1);
  build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 0u);
  EXPECT_NE(st.selected_id, id);
}

TEST(TopFrame, BatchFrameHasEveryRowAndNoSelection) {
  auto snap = snapshot();
  for (uint32_t i = 0; i < 200; ++i)
    snap.segments.push_back(
        seg(1000 + i, "/dev/shm/many_" + std::to_string(1000 + i), 4096, 100, {100}, 1));
  auto st = batch_state();
  st.view = TopView::segments;
  TopFrame f = build_top_frame(snap, st);
  EXPECT_EQ(rows_after(f, "PATH/NAME").size(), 203u);
  for (const auto &l : f.lines)
    EXPECT_NE(l.style, TopStyle::selected);
  EXPECT_FALSE(line_with(f, "q quit")); // no key help in batch mode
}

} // namespace
} // namespace shmbpf::test
