#include "views/top_state.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

namespace shmbpf {

namespace {

// The keys of the filter prompt: text, Backspace, Enter keeps, Esc clears.
bool filter_key(TopState &st, int key) {
  if (key == top_key::enter) {
    st.editing_filter = false;
  } else if (key == top_key::escape) {
    st.editing_filter = false;
    st.filter.clear();
  } else if (key == top_key::backspace) {
    if (!st.filter.empty()) {
      // Remove one whole UTF-8 code point.
      std::size_t n = st.filter.size() - 1;
      while (n > 0 && (static_cast<unsigned char>(st.filter[n]) & 0xc0) == 0x80)
        --n;
      st.filter.resize(n);
    }
  } else if (key >= 0x20 && key != 0x7f && key < 0x100) {
    st.filter += static_cast<char>(key);
  } else {
    return false;
  }
  st.selected = 0;
  st.selected_id.clear();
  st.scroll = 0;
  return true;
}

// Scrolling the details screen; false for the keys it leaves to the views.
bool details_key(TopState &st, int key) {
  switch (key) {
  case top_key::escape:
  case top_key::left:
  case top_key::backspace:
  case top_key::enter:
    st.details = false;
    return true;
  case top_key::up:
    st.details_scroll -= st.details_scroll ? 1 : 0;
    return true;
  case top_key::down:
    ++st.details_scroll; // clamped when the frame is built
    return true;
  case top_key::page_up:
    st.details_scroll -= std::min(st.details_scroll, st.page_rows);
    return true;
  case top_key::page_down:
    st.details_scroll += st.page_rows;
    return true;
  case top_key::home:
    st.details_scroll = 0;
    return true;
  case top_key::end:
    st.details_scroll = SIZE_MAX / 2;
    return true;
  default:
    return false;
  }
}

// The views' keys: switch view or sort, move the selection, open details.
bool view_key(TopState &st, int key) {
  auto view = [&](TopView v) {
    if (st.view != v) {
      st.view = v;
      st.selected = 0;
      st.selected_id.clear();
      st.scroll = 0;
    }
    return true;
  };
  auto sort = [&](TopSort s) {
    st.sort = s;
    return true; // the selection follows its row to the new place
  };
  auto move_to = [&](std::size_t i) {
    st.selected = st.rows ? std::min(i, st.rows - 1) : 0;
    st.selected_id.clear();
    return true;
  };
  switch (key) {
  case 'p':
    return view(TopView::processes);
  case 'c':
    return view(TopView::containers);
  case 'm':
    return view(TopView::mounts);
  case 's':
    return view(TopView::segments);
  case 'w':
    return view(TopView::producers);
  case 'b':
    return sort(TopSort::bytes);
  case 'n':
    return sort(TopSort::count);
  case 'r':
    return sort(TopSort::rate);
  case 'a':
    return sort(TopSort::age);
  case '/':
    st.editing_filter = true;
    return true;
  case top_key::up:
    return move_to(st.selected ? st.selected - 1 : 0);
  case top_key::down:
    return move_to(st.selected + 1);
  case top_key::page_up:
    return move_to(st.selected - std::min(st.selected, st.page_rows));
  case top_key::page_down:
    return move_to(st.selected + st.page_rows);
  case top_key::home:
    return move_to(0);
  case top_key::end:
    return move_to(st.rows ? st.rows - 1 : 0);
  case top_key::enter:
  case top_key::right:
    if (st.rows == 0 || st.selected_id.empty())
      return false;
    st.details = true;
    st.details_view = st.view;
    st.details_id = st.selected_id;
    st.details_scroll = 0;
    return true;
  case top_key::escape:
    if (!st.filter.empty()) {
      st.filter.clear();
      return true;
    }
    return false;
  default:
    return false;
  }
}

bool apply_key(TopState &st, int key) {
  if (st.editing_filter)
    return filter_key(st, key);
  // A space types into the filter; elsewhere it pages down, as in less.
  if (key == ' ')
    key = top_key::page_down;
  if (st.help) {
    if (key == 'q')
      st.quit = true;
    st.help = false; // any key closes help
    return true;
  }
  if (key == 'q') {
    st.quit = true;
    return true;
  }
  if (key == 'h' || key == '?') {
    st.help = true;
    return true;
  }
  if (st.details) {
    if (details_key(st, key))
      return true;
    // View and sort keys leave the details; other keys leave them alone.
    TopState out = st;
    out.details = false;
    if (!view_key(out, key))
      return false;
    st = std::move(out);
    return true;
  }
  return view_key(st, key);
}

// What a snapshot taken for st depends on: which segments it copies and,
// when it filters and orders them itself, the filter and the sort.
auto snapshot_inputs(const TopState &st) {
  const SegmentCopy copy = segment_copy(st);
  const bool ordered = copy == SegmentCopy::page || copy == SegmentCopy::all_rows;
  return std::tuple(copy, ordered ? st.filter : std::string(), ordered ? st.sort : TopSort::bytes,
                    counts_producers(st));
}

} // namespace

std::string_view to_string(TopView v) {
  switch (v) {
  case TopView::processes:
    return "processes";
  case TopView::containers:
    return "containers";
  case TopView::mounts:
    return "mounts";
  case TopView::segments:
    return "segments";
  case TopView::producers:
    return "producers";
  }
  return "?";
}

std::string_view to_string(TopSort s) {
  switch (s) {
  case TopSort::bytes:
    return "bytes";
  case TopSort::count:
    return "count";
  case TopSort::rate:
    return "rate";
  case TopSort::age:
    return "age";
  }
  return "?";
}

std::optional<TopView> parse_top_view(std::string_view s) {
  if (s == "process" || s == "processes")
    return TopView::processes;
  if (s == "container" || s == "containers")
    return TopView::containers;
  if (s == "mount" || s == "mounts")
    return TopView::mounts;
  if (s == "segment" || s == "segments")
    return TopView::segments;
  if (s == "producer" || s == "producers")
    return TopView::producers;
  return std::nullopt;
}

SegmentCopy segment_copy(const TopState &st) {
  if (st.details)
    return SegmentCopy::every;
  if (st.view != TopView::segments)
    return SegmentCopy::none;
  return st.height == 0 ? SegmentCopy::all_rows : SegmentCopy::page;
}

bool counts_producers(const TopState &st) {
  return st.view == TopView::producers || (st.details && st.details_view == TopView::producers);
}

TopAction top_handle_key(TopState &st, int key) {
  const auto before = snapshot_inputs(st);
  if (!apply_key(st, key))
    return TopAction::none;
  return snapshot_inputs(st) == before ? TopAction::redraw : TopAction::refetch;
}

} // namespace shmbpf
