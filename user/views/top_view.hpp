// The screen of `shmbpf top`, built from a snapshot of the live model. Pure:
// no terminal, no clock, no I/O. The same frame feeds ncurses (line by line,
// with a style per line), batch mode (plain text) and --json, and the key
// handling lives here too, so every behaviour of the screen is testable
// without a terminal. Every untrusted string is escaped before it lands in a
// line: a frame never contains a control character.
#pragma once

#include "model/engine.hpp"
#include "views/text_width.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shmbpf {

enum class TopView : uint8_t { processes, containers, mounts, segments };
enum class TopSort : uint8_t { bytes, count, rate, age };

std::string_view to_string(TopView v);
std::string_view to_string(TopSort s);
// "process", "container", "mount", "segments" (the --by values) and plurals.
std::optional<TopView> parse_top_view(std::string_view s);

// What the model looked like at one instant: everything a frame shows.
struct TopSnapshot {
  uint64_t now_ns = 0;     // CLOCK_BOOTTIME, for ages
  std::string clock;       // wall-clock time for the title line ("" to omit)
  uint64_t events = 0;     // events applied since start
  uint64_t lost = 0;       // records the kernel could not deliver
  uint32_t host_mntns = 0; // mount namespace of the host (pid 1), labels mounts
  EngineTotals totals;
  std::vector<MountUsage> mounts;
  std::vector<ProcessInfo> processes;
  std::vector<ContainerInfo> containers;
  std::vector<SegmentInfo> segments;
  std::unordered_map<uint32_t, std::string> users; // uid -> login name, when known

  // Set by fill_segment_page: segments holds only rows [segments_offset,
  // segments_offset + segments.size()) of the segments view's
  // segments_total rows, already filtered and sorted for the state it was
  // taken for, and selected_rank is where the row ranked_id (that state's
  // selected_id) is, if it is a row.
  bool segments_paged = false;
  std::size_t segments_total = 0;
  std::size_t segments_offset = 0;
  std::optional<std::size_t> selected_rank;
  std::string ranked_id;
};

// Key codes for top_handle_key: printable keys are their character, the
// special ones are these negative values (the terminal layer maps its own).
namespace top_key {
constexpr int up = -1;
constexpr int down = -2;
constexpr int page_up = -3;
constexpr int page_down = -4;
constexpr int home = -5;
constexpr int end = -6;
constexpr int enter = -7;
constexpr int escape = -8;
constexpr int backspace = -9;
constexpr int left = -10;
constexpr int right = -11;
} // namespace top_key

// Everything the user chose, and where the cursor is. build_top_frame keeps
// selection and scroll in range; top_handle_key changes the rest.
struct TopState {
  TopView view = TopView::processes;
  TopSort sort = TopSort::bytes;
  std::string filter;                   // substring of names, case-insensitive; "" = none
  bool editing_filter = false;          // the `/` prompt has the keyboard
  std::optional<uint32_t> pid;          // -p: only rows of this process
  std::optional<std::string> container; // --container: id or prefix, "" = the host
  double delay_s = 1;

  // Screen size in cells; 0 = unlimited (batch mode: every row, no
  // truncation, no selection bar).
  std::size_t width = 80;
  std::size_t height = 24;

  // Selection: the row id is followed across refreshes, the index is used
  // when the id is gone (or after a key cleared it).
  std::size_t selected = 0;
  std::string selected_id;
  std::size_t scroll = 0;

  bool help = false;
  bool details = false; // showing the details of details_id
  TopView details_view = TopView::processes;
  std::string details_id;
  std::size_t details_scroll = 0;

  bool quit = false;

  // Filled by build_top_frame, used by the keys that move by pages.
  std::size_t rows = 0;      // rows of the current view after filtering
  std::size_t page_rows = 1; // rows that fit on the screen
  // The frame needed rows a paged snapshot does not have: take it again.
  bool page_miss = false;
};

enum class TopStyle : uint8_t {
  normal,
  title,    // the first line
  alert,    // needs attention: lost events, a mount nearly full, an orphan
  columns,  // column titles
  selected, // the selection bar
  help,     // the key help line
};

struct TopLine {
  std::string text; // escaped, printable, never wider than the frame
  TopStyle style = TopStyle::normal;
};

struct TopFrame {
  std::vector<TopLine> lines;
};

// The segments view's rows for state into snap, straight from the engine:
// filtered and ordered over segments read in place, and only the rows a
// frame around the selection can show (all_rows: every row, for batch
// mode and --json) copied out as SegmentInfo. The frame and the JSON are
// the ones a snapshot holding every segment gives.
void fill_segment_page(TopSnapshot &snap, const Engine &engine, const TopState &state,
                       uint64_t orphan_min_age_ns, bool all_rows);

// Builds the frame for state (adjusting its selection, scroll and counts).
TopFrame build_top_frame(const TopSnapshot &snap, TopState &state);

// The frame as plain text, one '\n' after each line.
std::string top_text(const TopFrame &frame);

// One frame as a single-line JSON object (no trailing newline): totals, the
// header's mounts and every row of the current view, filtered and sorted.
std::string top_json(const TopSnapshot &snap, const TopState &state);

// Applies one key; false when the key means nothing here.
bool top_handle_key(TopState &state, int key);

// The lines of the help screen (also what `h` shows).
std::vector<std::string> top_help_lines();

} // namespace shmbpf
