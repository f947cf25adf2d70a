// The `shmbpf top` screen from synthetic snapshots: header, views, sorting,
// filtering, keys, details, escaping, narrow screens and the JSON frame.
#include "views/top_view.hpp"

#include "synthetic_events.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fcntl.h>
#include <random>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using nlohmann::json;

constexpr uint64_t sec = 1'000'000'000;
constexpr uint64_t now = 5000 * sec;
constexpr uint32_t host_ns = 4026531840u;
constexpr uint32_t ctr_ns = 4026532999u;
const std::string ctr_id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

ProcessInfo proc(uint32_t pid, std::string comm, uint64_t segs, uint64_t bytes, double rate = 0,
                 std::string container = "") {
  ProcessInfo p;
  p.pid = pid;
  p.ppid = 1;
  p.uid = 1000;
  p.comm = std::move(comm);
  p.mntns = container.empty() ? host_ns : ctr_ns;
  p.container_id = std::move(container);
  if (!p.container_id.empty())
    p.runtime = "docker";
  p.segments_created = segs;
  p.bytes_created = bytes;
  p.creates = segs;
  p.create_rate = rate;
  return p;
}

SegmentInfo seg(uint64_t ino, std::string path, uint64_t bytes, uint32_t creator,
                std::vector<uint32_t> holders, uint64_t age_s) {
  SegmentInfo s;
  s.key = SegmentKey::file(22, ino);
  s.kind = Kind::tmpfs;
  s.path = std::move(path);
  s.mountpoint = "/dev/shm";
  s.size = bytes;
  s.bytes = bytes;
  s.creator.pid = creator;
  s.creator.known = creator != 0;
  s.creator.comm = creator ? "python3" : "";
  s.created_ns = now - age_s * sec;
  s.age_ns = age_s * sec;
  s.holders = std::move(holders);
  return s;
}

MountUsage mount(std::string mp, uint32_t mntns, uint32_t dev, uint64_t limit, uint64_t used,
                 uint64_t segments = 0) {
  MountUsage m;
  m.mount.mountpoint = std::move(mp);
  m.mount.mntns = mntns;
  m.mount.mnt_id = dev + 100;
  m.mount.dev = dev;
  m.mount.size_limit = limit;
  m.mount.used_bytes = used;
  m.tracked_bytes = segments ? used : 0;
  m.segments = segments;
  if (limit)
    m.percent = 100.0 * static_cast<double>(used) / static_cast<double>(limit);
  return m;
}

TopSnapshot snapshot() {
  TopSnapshot s;
  s.now_ns = now;
  s.clock = "12:00:00";
  s.events = 1234;
  s.host_mntns = host_ns;
  s.totals.tmpfs = {3, 7 << 20};
  s.totals.memfd = {1, 4096};
  s.totals.sysv = {0, 0};
  s.totals.orphans = 1;
  s.totals.orphan_bytes = 1 << 20;
  s.totals.create_rate = 2.5;
  s.totals.unlink_rate = 1.0;
  s.mounts = {mount("/dev/shm", host_ns, 22, 1ull << 30, 100ull << 20, 3),
              mount("/dev/shm", ctr_ns, 99, 64ull << 20, 60ull << 20, 1),
              mount("/run", host_ns, 23, 1ull << 30, 1 << 20, 0)};
  s.processes = {proc(100, "python3", 2, 6 << 20, 0.5), proc(200, "trainer", 1, 1 << 20, 3.0),
                 proc(300, "idle", 0, 0), proc(400, "worker", 1, 2 << 20, 0, ctr_id)};
  s.processes[0].segments_unheld = 1; // torch_100_a_1 below
  s.processes[1].segments_held = 2;
  s.processes[1].bytes_held = 7 << 20;
  s.containers.resize(2);
  s.containers[0].processes = 3;
  s.containers[0].segments = 3;
  s.containers[0].bytes = 7 << 20;
  s.containers[1].id = ctr_id;
  s.containers[1].runtime = "docker";
  s.containers[1].processes = 1;
  s.containers[1].segments = 1;
  s.containers[1].bytes = 2 << 20;
  s.segments = {seg(1, "/dev/shm/torch_100_a_0", 4 << 20, 100, {100, 200}, 30),
                seg(2, "/dev/shm/torch_100_a_1", 2 << 20, 100, {}, 600),
                seg(3, "/dev/shm/model.bin", 1 << 20, 200, {200}, 5)};
  s.segments[1].orphan = false; // creator alive: unheld, not yet an orphan
  s.users = {{1000, "alice"}};
  return s;
}

// The row lines: everything after the column titles, until a blank line.
std::vector<std::string> rows_after(const TopFrame &f, std::string_view first_title) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto &l : f.lines) {
    if (in) {
      if (l.text.empty() || l.style == TopStyle::help)
        break;
      out.push_back(l.text);
    } else if (l.style == TopStyle::columns && l.text.find(first_title) != std::string::npos) {
      in = true;
    }
  }
  return out;
}

bool contains(const std::string &hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

const TopLine *line_with(const TopFrame &f, std::string_view needle) {
  for (const auto &l : f.lines)
    if (contains(l.text, needle))
      return &l;
  return nullptr;
}

TopState batch_state() {
  TopState st;
  st.width = 0;
  st.height = 0;
  return st;
}

TEST(TopView, HeaderShowsTotalsRatesAndMounts) {
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

TEST(TopView, LostEventsAndFullMountsStandOut) {
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

TEST(TopView, ProcessesViewColumnsAndDefaultSortByBytes) {
  auto snap = snapshot();
  auto st = batch_state();
  TopFrame f = build_top_frame(snap, st);
  const TopLine *cols = line_with(f, "PID");
  ASSERT_TRUE(cols);
  EXPECT_EQ(cols->style, TopStyle::columns);
  std::size_t at = 0;
  for (const char *c :
       {"PID", "USER", "COMM", "CONTAINER", "SEGS", "BYTES", "HELD", "CREATE/s", "ORPHANS"}) {
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
  // ORPHANS: python3 created a segment nobody holds any more.
  EXPECT_TRUE(rows[0].ends_with(" 1")) << rows[0];
  EXPECT_TRUE(rows[2].ends_with(" 0")) << rows[2];
}

TEST(TopView, SortKeysReorderRows) {
  auto snap = snapshot();
  auto st = batch_state();
  ASSERT_TRUE(top_handle_key(st, 'r')); // rate
  auto rows = rows_after(build_top_frame(snap, st), "PID");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(contains(rows[0], "trainer"));
  EXPECT_TRUE(contains(rows[0], "3.0"));
  EXPECT_TRUE(contains(rows[1], "python3"));

  ASSERT_TRUE(top_handle_key(st, 'n')); // count
  rows = rows_after(build_top_frame(snap, st), "PID");
  EXPECT_TRUE(contains(rows[0], "python3"));
  EXPECT_EQ(st.sort, TopSort::count);

  ASSERT_TRUE(top_handle_key(st, 's')); // segments view
  ASSERT_TRUE(top_handle_key(st, 'a')); // oldest first
  rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].starts_with("/dev/shm/torch_100_a_1")) << rows[0];
  EXPECT_TRUE(rows[2].starts_with("/dev/shm/model.bin"));
  ASSERT_TRUE(top_handle_key(st, 'b'));
  rows = rows_after(build_top_frame(snap, st), "PATH/NAME");
  EXPECT_TRUE(rows[0].starts_with("/dev/shm/torch_100_a_0")) << rows[0];
}

TEST(TopView, SegmentsViewColumns) {
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

TEST(TopView, ContainersViewShowsShmMountPercent) {
  auto snap = snapshot();
  auto st = batch_state();
  ASSERT_TRUE(top_handle_key(st, 'c'));
  TopFrame f = build_top_frame(snap, st);
  const TopLine *cols = line_with(f, "RUNTIME");
  ASSERT_TRUE(cols);
  for (const char *c : {"ID", "POD", "PROCS", "SEGS", "BYTES", "SHM MOUNT %"})
    EXPECT_TRUE(contains(cols->text, c)) << c;
  auto rows = rows_after(f, "RUNTIME");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].starts_with("host")) << rows[0];
  EXPECT_TRUE(contains(rows[0], "9.8%"));
  EXPECT_TRUE(rows[1].starts_with("0123456789ab "));
  EXPECT_TRUE(contains(rows[1], "docker"));
  EXPECT_TRUE(contains(rows[1], "93.8%"));
}

TEST(TopView, MountsViewListsEveryFilesystemOnce) {
  auto snap = snapshot();
  // The host /dev/shm seen again from a sandboxed service's namespace.
  snap.mounts.push_back(mount("/dev/shm", 4026533000u, 22, 1ull << 30, 100ull << 20, 3));
  auto st = batch_state();
  ASSERT_TRUE(top_handle_key(st, 'm'));
  auto rows = rows_after(build_top_frame(snap, st), "MOUNTPOINT");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(contains(rows[0], "host")); // largest used first
  EXPECT_TRUE(contains(rows[0], "100M"));
  EXPECT_TRUE(contains(rows[1], "0123456789ab"));
  EXPECT_TRUE(rows[2].starts_with("/run"));
}

TEST(TopView, PidAndContainerOptionsRestrictRows) {
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

TEST(TopView, FilterIsCaseInsensitiveAndTypedWithSlash) {
  auto snap = snapshot();
  TopState st; // interactive: 80x24
  ASSERT_TRUE(top_handle_key(st, '/'));
  EXPECT_TRUE(st.editing_filter);
  for (char c : std::string("TRAIN"))
    ASSERT_TRUE(top_handle_key(st, c));
  TopFrame f = build_top_frame(snap, st);
  EXPECT_EQ(f.lines.back().style, TopStyle::help);
  EXPECT_TRUE(contains(f.lines.back().text, "Filter: TRAIN_")) << f.lines.back().text;
  auto rows = rows_after(f, "PID");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(contains(rows[0], "trainer"));

  ASSERT_TRUE(top_handle_key(st, top_key::backspace));
  EXPECT_EQ(st.filter, "TRAI");
  ASSERT_TRUE(top_handle_key(st, top_key::enter)); // keep it
  EXPECT_FALSE(st.editing_filter);
  EXPECT_EQ(st.filter, "TRAI");
  f = build_top_frame(snap, st);
  EXPECT_TRUE(contains(f.lines[0].text, "filter: TRAI"));
  // 'q' typed into the filter prompt is text, outside it quits.
  ASSERT_TRUE(top_handle_key(st, '/'));
  ASSERT_TRUE(top_handle_key(st, 'q'));
  EXPECT_FALSE(st.quit);
  EXPECT_EQ(st.filter, "TRAIq");
  ASSERT_TRUE(top_handle_key(st, top_key::escape)); // Esc clears
  EXPECT_EQ(st.filter, "");
  rows = rows_after(build_top_frame(snap, st), "PID");
  EXPECT_EQ(rows.size(), 3u);

  st.filter = "nomatch";
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "no row matches the filter"));
  ASSERT_TRUE(top_handle_key(st, 'q'));
  EXPECT_TRUE(st.quit);
}

TEST(TopView, EscapeSequencesInNamesAreShownEscaped) {
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

TEST(TopView, NarrowScreensCutLinesWithoutBreakingCharacters) {
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

TEST(TopView, InteractiveFrameFillsTheScreenAndScrolls) {
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

  ASSERT_TRUE(top_handle_key(st, top_key::page_down));
  f = build_top_frame(snap, st);
  EXPECT_EQ(st.selected, page);
  sel = selected(f);
  ASSERT_EQ(sel.size(), 1u);
  ASSERT_TRUE(top_handle_key(st, top_key::end));
  f = build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 102u);
  EXPECT_EQ(st.scroll, 103u - page);
  ASSERT_EQ(selected(f).size(), 1u);
  ASSERT_TRUE(top_handle_key(st, top_key::down)); // stays on the last row
  build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 102u);
  ASSERT_TRUE(top_handle_key(st, top_key::home));
  build_top_frame(snap, st);
  EXPECT_EQ(st.selected, 0u);
  EXPECT_EQ(st.scroll, 0u);
}

TEST(TopView, SelectionFollowsItsRowAcrossRefreshes) {
  auto snap = snapshot();
  TopState st;
  st.view = TopView::segments;
  build_top_frame(snap, st);
  ASSERT_TRUE(top_handle_key(st, top_key::down));
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

TEST(TopView, SegmentDetailsListCreatorEveryHolderAndFullPath) {
  auto snap = snapshot();
  const std::string long_path = "/dev/shm/" + std::string(150, 'x') + "_end";
  snap.segments[0].path = long_path;
  snap.segments[0].holders = {100, 200, 400};
  TopState st;
  st.width = 200;
  st.height = 40;
  st.view = TopView::segments;
  build_top_frame(snap, st);
  ASSERT_TRUE(top_handle_key(st, top_key::enter));
  EXPECT_TRUE(st.details);
  TopFrame f = build_top_frame(snap, st);
  const std::string text = top_text(f);
  EXPECT_TRUE(line_with(f, "path:          " + long_path)) << text;
  EXPECT_TRUE(line_with(f, "creator:       100/python3")) << text;
  EXPECT_TRUE(line_with(f, "holders:       3")) << text;
  EXPECT_TRUE(line_with(f, "  100  python3"));
  EXPECT_TRUE(line_with(f, "  200  trainer"));
  EXPECT_TRUE(line_with(f, "  400  worker"));
  ASSERT_TRUE(top_handle_key(st, top_key::escape));
  EXPECT_FALSE(st.details);
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "PATH/NAME"));
}

TEST(TopView, ProcessDetailsListItsSegments) {
  auto snap = snapshot();
  TopState st;
  st.width = 120;
  st.height = 40;
  build_top_frame(snap, st); // python3 (pid 100) is first by bytes
  ASSERT_EQ(st.selected_id, "p:100");
  ASSERT_TRUE(top_handle_key(st, top_key::enter));
  TopFrame f = build_top_frame(snap, st);
  const std::string text = top_text(f);
  EXPECT_TRUE(line_with(f, "comm:          python3")) << text;
  EXPECT_TRUE(line_with(f, "2 segment(s):")) << text;
  EXPECT_TRUE(line_with(f, "torch_100_a_0"));
  EXPECT_TRUE(line_with(f, "torch_100_a_1"));
  EXPECT_FALSE(line_with(f, "model.bin"));
  // The process exits: the details say so instead of showing stale data.
  snap.processes.erase(snap.processes.begin());
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "gone")) << top_text(f);
  // A view key leaves the details.
  ASSERT_TRUE(top_handle_key(st, 'c'));
  EXPECT_FALSE(st.details);
  EXPECT_EQ(st.view, TopView::containers);
}

TEST(TopView, HelpScreenListsKeys) {
  auto snap = snapshot();
  TopState st;
  st.height = 50;
  ASSERT_TRUE(top_handle_key(st, 'h'));
  TopFrame f = build_top_frame(snap, st);
  for (const char *k : {"  p  processes", "  c  containers", "  m  mounts", "  s  segments",
                        "  b  bytes", "  /        filter", "  q        quit"})
    EXPECT_TRUE(line_with(f, k)) << k << "\n" << top_text(f);
  ASSERT_TRUE(top_handle_key(st, 'x')); // any key closes it
  EXPECT_FALSE(st.help);
  ASSERT_TRUE(top_handle_key(st, '?'));
  EXPECT_TRUE(st.help);
}

TEST(TopView, BatchFrameHasEveryRowAndNoSelection) {
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

TEST(TopView, JsonFrameShape) {
  auto snap = snapshot();
  snap.lost = 3;
  auto st = batch_state();
  json j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["view"], "processes");
  EXPECT_EQ(j["sort"], "bytes");
  EXPECT_TRUE(j["filter"].is_null());
  EXPECT_EQ(j["time"], "12:00:00");
  EXPECT_EQ(j["now_ns"], now);
  const json &t = j["totals"];
  EXPECT_EQ(t["tmpfs"]["segments"], 3);
  EXPECT_EQ(t["tmpfs"]["bytes"], 7 << 20);
  EXPECT_EQ(t["memfd"]["segments"], 1);
  EXPECT_EQ(t["sysv"]["bytes"], 0);
  EXPECT_EQ(t["orphans"], 1);
  EXPECT_EQ(t["lost"], 3);
  EXPECT_EQ(t["events"], 1234);
  EXPECT_DOUBLE_EQ(t["create_rate"].get<double>(), 2.5);
  ASSERT_EQ(j["mounts"].size(), 2u);
  // The container's /dev/shm is 93.75% full: alarming mounts come first.
  EXPECT_EQ(j["mounts"][0]["mountpoint"], "/dev/shm");
  EXPECT_EQ(j["mounts"][0]["owner"], "0123456789ab");
  EXPECT_EQ(j["mounts"][0]["alert"], true);
  EXPECT_EQ(j["mounts"][1]["owner"], "host");
  EXPECT_EQ(j["mounts"][1]["alert"], false);
  EXPECT_EQ(j["mounts"][1]["used_bytes"], 100 << 20);
  ASSERT_EQ(j["rows"].size(), 3u);
  const json &p = j["rows"][0];
  EXPECT_EQ(p["pid"], 100);
  EXPECT_EQ(p["comm"], "python3");
  EXPECT_EQ(p["user"], "alice");
  EXPECT_EQ(p["segments_created"], 2);
  EXPECT_EQ(p["bytes_created"], 6 << 20);
  EXPECT_EQ(p["orphans"], 1);
  EXPECT_TRUE(p["container"].is_null());
  EXPECT_EQ(j["rows"][1]["container"], ctr_id);

  st.view = TopView::containers;
  j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["view"], "containers");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["host"], true);
  EXPECT_EQ(j["rows"][1]["id"], ctr_id);
  EXPECT_EQ(j["rows"][1]["runtime"], "docker");
  EXPECT_NEAR(j["rows"][1]["shm_percent"].get<double>(), 93.75, 0.01);

  st.view = TopView::segments;
  st.filter = "torch";
  st.sort = TopSort::age;
  j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["filter"], "torch");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["path"], "/dev/shm/torch_100_a_1");
  EXPECT_EQ(j["rows"][0]["age_s"], 600);
  EXPECT_EQ(j["rows"][1]["holders"], json::array({100, 200}));

  st.view = TopView::mounts;
  st.filter.clear();
  j = json::parse(top_json(snap, st));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_TRUE(j["rows"][2]["seconds_to_full"].is_null());
}

// Each view's order for each sort key: the largest first, its keys
// compared in turn, then the view's tie-break (processes by pid, containers
// in the engine's order, mounts by mountpoint). Values tie on purpose.
TEST(TopView, EverySortOrdersEveryView) {
  TopSnapshot snap = snapshot();
  auto order = [&](TopView view, TopSort sort, const char *field) {
    TopState st = batch_state();
    st.view = view;
    st.sort = sort;
    std::vector<std::string> out;
    const json j = json::parse(top_json(snap, st));
    for (const auto &row : j["rows"])
      out.push_back(row[field].is_string() ? row[field].get<std::string>() : row[field].dump());
    return out;
  };
  using V = std::vector<std::string>;

  snap.processes = {proc(1, "p1", 1, 10, 1.0), proc(2, "p2", 1, 10, 1.0), proc(3, "p3", 4, 3, 0.5),
                    proc(4, "p4", 1, 10, 1.0)};
  snap.processes[1].bytes_held = snap.processes[3].bytes_held = 5;
  snap.processes[1].segments_held = snap.processes[3].segments_held = 2;
  snap.processes[3].segments_unheld = 1;
  snap.processes[1].unlink_rate = snap.processes[3].unlink_rate = 2.0;
  EXPECT_EQ(order(TopView::processes, TopSort::bytes, "pid"), (V{"2", "4", "1", "3"}));
  EXPECT_EQ(order(TopView::processes, TopSort::count, "pid"), (V{"3", "4", "2", "1"}));
  EXPECT_EQ(order(TopView::processes, TopSort::rate, "pid"), (V{"2", "4", "1", "3"}));
  EXPECT_EQ(order(TopView::processes, TopSort::age, "pid"), (V{"1", "2", "3", "4"}));

  snap.containers.assign(4, ContainerInfo{});
  const char *ids[] = {"", "aaaa", "bbbb", "cccc"};
  const uint64_t bytes[] = {5, 9, 5, 1}, segs[] = {2, 2, 7, 1};
  const double rates[] = {1.0, 0.5, 1.0, 3.0};
  for (int i = 0; i < 4; ++i) {
    snap.containers[i].id = ids[i];
    snap.containers[i].bytes = bytes[i];
    snap.containers[i].segments = segs[i];
    snap.containers[i].create_rate = rates[i];
  }
  EXPECT_EQ(order(TopView::containers, TopSort::bytes, "id"), (V{"aaaa", "", "bbbb", "cccc"}));
  EXPECT_EQ(order(TopView::containers, TopSort::count, "id"), (V{"bbbb", "", "aaaa", "cccc"}));
  EXPECT_EQ(order(TopView::containers, TopSort::rate, "id"), (V{"cccc", "", "bbbb", "aaaa"}));
  EXPECT_EQ(order(TopView::containers, TopSort::age, "id"), (V{"", "aaaa", "bbbb", "cccc"}));

  snap.mounts = {mount("/a", host_ns, 31, 1 << 20, 5, 1), mount("/b", host_ns, 32, 1 << 20, 5, 3),
                 mount("/c", host_ns, 33, 1 << 20, 9, 3)};
  snap.mounts[1].growth_bytes_per_s = snap.mounts[2].growth_bytes_per_s = 10;
  EXPECT_EQ(order(TopView::mounts, TopSort::bytes, "mountpoint"), (V{"/c", "/a", "/b"}));
  EXPECT_EQ(order(TopView::mounts, TopSort::count, "mountpoint"), (V{"/b", "/c", "/a"}));
  EXPECT_EQ(order(TopView::mounts, TopSort::rate, "mountpoint"), (V{"/b", "/c", "/a"}));
}

TEST(TopView, ParseViewNames) {
  EXPECT_EQ(parse_top_view("process"), TopView::processes);
  EXPECT_EQ(parse_top_view("container"), TopView::containers);
  EXPECT_EQ(parse_top_view("mount"), TopView::mounts);
  EXPECT_EQ(parse_top_view("segments"), TopView::segments);
  EXPECT_FALSE(parse_top_view("bogus"));
}

// --- the paged segments view ---------------------------------------------------

// An engine with segments that tie on every sort key in places: sizes and
// bytes from a few values, shared holders, SysV segments, exited creators.
Engine paging_engine() {
  Engine engine;
  std::mt19937 rng(7);
  uint64_t ts = 10 * sec;
  auto ev = [&](EventType type, uint32_t pid) {
    Event e = test::process_event(type, pid, ts++);
    e.comm = pid % 2 ? "python3" : "Trainer";
    return e;
  };
  for (uint64_t ino = 1; ino <= 700; ++ino) {
    const uint32_t pid = 200 + static_cast<uint32_t>(rng() % 12);
    Event e = ev(EventType::create, pid);
    e.kind = Kind::tmpfs;
    e.dev = 26;
    e.mnt_id = 25;
    e.ino = ino;
    e.full_path = "/dev/shm/" + std::string(rng() % 3 ? "torch_" : "psm_") +
                  std::to_string(rng() % 300); // repeated names on purpose
    e.path = e.full_path;
    e.ret = 3;
    e.is_new = true;
    e.size = 4096 * (rng() % 4);
    e.bytes = 4096 * (rng() % 3);
    e.flags = O_RDWR | O_CREAT;
    engine.apply(e);
    if (rng() % 4 == 0) {
      Event o = e;
      o.type = EventType::open;
      o.is_new = false;
      o.pid = o.tid = 200 + static_cast<uint32_t>(rng() % 12);
      o.ts_ns = ts++;
      engine.apply(o);
    }
  }
  for (int32_t shmid = 0; shmid < 30; ++shmid) {
    Event e = ev(EventType::shmget, 205);
    e.kind = Kind::sysv;
    e.ipcns = 4026531839u;
    e.shmid = shmid;
    e.ret = shmid;
    e.key = 0x5000 + static_cast<uint32_t>(shmid);
    e.size = 8192;
    e.created = 1;
    engine.apply(e);
  }
  engine.apply(ev(EventType::exit, 203));
  engine.apply(ev(EventType::exit, 206));
  return engine;
}

// A snapshot of every segment at time at, as top took it before paging.
TopSnapshot every_segment(const Engine &engine, uint64_t at) {
  TopSnapshot s;
  s.now_ns = at;
  s.segments = engine.segments({}, at, 0);
  return s;
}

// The paged query must show exactly what a snapshot of every segment shows:
// every sort, with and without filters, the selection followed by id or
// placed by index, on a screen and in batch mode, and the JSON frame.
TEST(TopView, PagedSegmentsGiveTheFramesOfTheFullList) {
  const Engine engine = paging_engine();
  const uint64_t at = 20 * sec;
  const TopSnapshot full = every_segment(engine, at);
  ASSERT_GT(full.segments.size(), 700u);
  int compared = 0;
  for (TopSort sort : {TopSort::bytes, TopSort::count, TopSort::rate, TopSort::age}) {
    for (int filter = 0; filter < 4; ++filter) {
      for (std::size_t sel : {std::size_t{0}, std::size_t{5}, std::size_t{300}, std::size_t{729},
                              std::size_t{5000}}) {
        for (bool by_id : {false, true}) {
          TopState st;
          st.view = TopView::segments;
          st.sort = sort;
          st.height = 30;
          if (filter == 1)
            st.filter = "TORCH";
          if (filter == 2)
            st.pid = 205;
          if (filter == 3)
            st.container = std::string(); // the host
          st.selected = sel;
          if (by_id) {
            // The id of some row of the full list, at another index.
            TopState probe = st;
            build_top_frame(full, probe);
            st.selected_id = probe.selected_id;
            st.selected = 3;
          }
          TopState a = st, b = st;
          const TopFrame fa = build_top_frame(full, a);
          TopSnapshot paged;
          paged.now_ns = at;
          fill_segment_page(paged, engine, st, 0, false);
          EXPECT_LT(paged.segments.size(), 200u);
          const TopFrame fb = build_top_frame(paged, b);
          EXPECT_FALSE(b.page_miss);
          EXPECT_EQ(top_text(fa), top_text(fb)) << "sort " << to_string(sort) << " filter "
                                                << filter << " sel " << sel << " id " << by_id;
          EXPECT_EQ(a.selected, b.selected);
          EXPECT_EQ(a.scroll, b.scroll);
          EXPECT_EQ(a.rows, b.rows);
          EXPECT_EQ(a.selected_id, b.selected_id);
          ++compared;

          // Batch mode and --json: every row.
          TopState ja = st, jb = st;
          ja.height = jb.height = 0;
          ja.width = jb.width = 0;
          TopSnapshot every;
          every.now_ns = at;
          fill_segment_page(every, engine, st, 0, true);
          EXPECT_EQ(top_json(full, ja), top_json(every, jb));
          EXPECT_EQ(top_text(build_top_frame(full, ja)), top_text(build_top_frame(every, jb)));
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 4 * 5 * 2);
}

// Paging down past the rows a page holds asks for another page, which then
// gives the frame of the full list.
TEST(TopView, PagedSegmentsReportAMissAndRecover) {
  const Engine engine = paging_engine();
  const uint64_t at = 20 * sec;
  const TopSnapshot full = every_segment(engine, at);
  TopState st;
  st.view = TopView::segments;
  st.height = 24;
  TopSnapshot paged;
  paged.now_ns = at;
  fill_segment_page(paged, engine, st, 0, false);
  TopState a = st, b = st;
  build_top_frame(full, a);
  build_top_frame(paged, b);
  for (int i = 0; i < 10; ++i) {
    top_handle_key(a, top_key::page_down);
    top_handle_key(b, top_key::page_down);
  }
  const std::string want = top_text(build_top_frame(full, a));
  build_top_frame(paged, b);
  EXPECT_TRUE(b.page_miss);
  fill_segment_page(paged, engine, b, 0, false);
  EXPECT_EQ(top_text(build_top_frame(paged, b)), want);
  EXPECT_FALSE(b.page_miss);
}

} // namespace
} // namespace shmbpf
