// What the user of `shmbpf top` chose and where the cursor is, and what a
// key does to it. Pure: no terminal, so every key is testable on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

enum class TopView : uint8_t { processes, containers, mounts, segments, producers };
enum class TopSort : uint8_t { bytes, count, rate, age };

std::string_view to_string(TopView v);
std::string_view to_string(TopSort s);
// "process", "container", "mount", "segments", "producer" (the --by values)
// and plurals.
std::optional<TopView> parse_top_view(std::string_view s);

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

// What a snapshot copies out of the model's segments for a state: none for
// the processes, containers and mounts views; for the segments view only
// the rows around the selection on a screen (every row in batch mode),
// filtered and sorted in place; every segment for the details screens,
// which list the segments of a process or a mount.
enum class SegmentCopy : uint8_t { none, page, all_rows, every };
SegmentCopy segment_copy(const TopState &st);
// Whether a snapshot for a state counts the segments by producer (the
// producers view and its details).
bool counts_producers(const TopState &st);

// What must happen after a key.
enum class TopAction : uint8_t {
  none,    // the key means nothing here
  redraw,  // the state changed: build the frame again from the same snapshot
  refetch, // the snapshot no longer holds what the state shows: take another
};

// Applies one key to st.
TopAction top_handle_key(TopState &st, int key);

} // namespace shmbpf
