// `shmbpf top`: the live model (Monitor) drawn with ncurses, or printed as
// plain-text / JSON frames in batch mode. The screen itself is built by the
// pure views/top_*; this file only owns the terminal, the keys, the
// signals and the timing.
#include "cli/app.hpp"
#include "cli/signals.hpp"

#include "facts/result.hpp"
#include "live/monitor.hpp"
#include "probe/probe.hpp"
#include "sources/users.hpp"
#include "views/top_frame.hpp"
#include "views/top_json.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>

// Last, and without the function-like macros (erase, move, refresh...) that
// would rewrite unrelated C++ names.
#define NCURSES_NOMACROS
#include <curses.h>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

// The namespace whose mounts are labelled "host": shmbpf's own, since that is
// where the paths the user types mean what they say.
uint32_t own_mntns() {
  struct stat st {};
  return stat("/proc/self/ns/mnt", &st) == 0 ? static_cast<uint32_t>(st.st_ino) : 0;
}

std::string wall_clock() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

TopSnapshot take_snapshot(const Monitor &mon, LoginNames &users, uint32_t host_ns,
                          const TopState &st) {
  const MonitorStats stats = mon.stats();
  TopCounters c{Monitor::now_ns(), wall_clock(), stats.events, stats.lost, host_ns};
  return take_top_snapshot(mon.engine(), std::move(c), st,
                           [&](uint32_t uid) { return users.name_of(uid); });
}

void poll_or_throw(Monitor &mon, int timeout_ms) {
  const int n = mon.poll(timeout_ms);
  if (n < 0 && n != -EINTR)
    throw FatalError("reading the ring buffer", std::strerror(-n));
}

TopState initial_state(const TopOptions &opts) {
  TopState st;
  if (auto v = parse_top_view(opts.by))
    st.view = *v;
  st.pid = opts.pid;
  if (opts.container)
    st.container = *opts.container == "host" ? std::string() : *opts.container;
  st.delay_s = opts.delay_s;
  return st;
}

// ---- batch mode -------------------------------------------------------------

int run_batch(const TopOptions &opts, Monitor &mon) {
  TopState st = initial_state(opts);
  st.width = 0; // plain text: every row, nothing cut
  st.height = 0;
  LoginNames users;
  const uint32_t host_ns = own_mntns();
  const auto delay =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.delay_s));
  for (int frame = 1; !stop_requested(); ++frame) {
    if (frame > 1) {
      const auto due = Clock::now() + delay;
      while (!stop_requested() && Clock::now() < due)
        poll_or_throw(mon, 100);
      if (stop_requested())
        break;
    } else {
      mon.drain();
    }
    const TopSnapshot snap = take_snapshot(mon, users, host_ns, st);
    std::string out;
    if (opts.json) {
      out = top_json(snap, st) + "\n";
    } else {
      out = top_text(build_top_frame(snap, st)) + "\n";
    }
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
      return 0; // the reader went away (e.g. `| head`): nothing more to do
    if (opts.iterations > 0 && frame >= opts.iterations)
      break;
  }
  return 0;
}

// ---- interactive mode ---------------------------------------------------------

// Owns the ncurses screen: whatever ends run_interactive (q, a signal, an
// exception) passes through the destructor, which gives the terminal back.
class Terminal {
public:
  Terminal() {
    std::setlocale(LC_CTYPE, ""); // UTF-8 names need a UTF-8 aware ncurses
    // newterm, unlike initscr, reports an unusable TERM instead of exiting.
    screen_ = newterm(nullptr, stdout, stdin);
    if (!screen_) {
      const char *term = std::getenv("TERM");
      throw FatalError("top",
                       std::string("cannot drive the terminal (TERM=") + (term ? term : "") +
                           "); use -b for batch mode",
                       2);
    }
    set_term(screen_);
    cbreak(); // Ctrl-C still raises SIGINT, handled like q
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25); // Esc closes details: do not wait a second for it
    curs_set(0);
    if (has_colors()) {
      start_color();
      use_default_colors();
      init_pair(1, COLOR_RED, -1);           // alert
      init_pair(2, COLOR_BLACK, COLOR_CYAN); // selection bar
    }
  }
  ~Terminal() {
    endwin();
    delscreen(screen_);
  }
  Terminal(const Terminal &) = delete;
  Terminal &operator=(const Terminal &) = delete;

  void draw(const TopFrame &frame) {
    const int rows = getmaxy(stdscr), cols = getmaxx(stdscr);
    erase();
    for (int y = 0; y < rows && y < static_cast<int>(frame.lines.size()); ++y) {
      const TopLine &l = frame.lines[static_cast<std::size_t>(y)];
      const attr_t a = attr(l.style);
      attrset(a);
      mvaddnstr(y, 0, l.text.c_str(), static_cast<int>(l.text.size()));
      // Bars (column titles, selection) span the whole width.
      if (l.style == TopStyle::columns || l.style == TopStyle::selected)
        mvchgat(y, 0, cols, a, static_cast<short>(PAIR_NUMBER(a)), nullptr);
    }
    attrset(A_NORMAL);
    refresh();
  }

private:
  attr_t attr(TopStyle s) const {
    const bool color = has_colors();
    switch (s) {
    case TopStyle::title:
      return A_BOLD;
    case TopStyle::alert:
      return A_BOLD | (color ? COLOR_PAIR(1) : A_UNDERLINE);
    case TopStyle::columns:
      return A_REVERSE;
    case TopStyle::selected:
      return color ? COLOR_PAIR(2) | A_BOLD : A_REVERSE | A_BOLD;
    case TopStyle::help:
      return A_DIM;
    case TopStyle::normal:
      break;
    }
    return A_NORMAL;
  }

  SCREEN *screen_ = nullptr;
};

// ncurses key -> top_view key, 0 when it means nothing to top.
int map_key(int ch) {
  switch (ch) {
  case KEY_UP:
    return top_key::up;
  case KEY_DOWN:
    return top_key::down;
  case KEY_PPAGE:
    return top_key::page_up;
  case KEY_NPAGE:
    return top_key::page_down;
  case KEY_HOME:
    return top_key::home;
  case KEY_END:
    return top_key::end;
  case KEY_ENTER:
  case '\n':
  case '\r':
    return top_key::enter;
  case 27:
    return top_key::escape;
  case KEY_BACKSPACE:
  case 127:
  case 8:
    return top_key::backspace;
  case KEY_LEFT:
    return top_key::left;
  case KEY_RIGHT:
    return top_key::right;
  default:
    return ch >= 0 && ch < 0x100 ? ch : 0;
  }
}

int run_interactive(const TopOptions &opts, Monitor &mon) {
  TopState st = initial_state(opts);
  LoginNames users;
  const uint32_t host_ns = own_mntns();
  const auto delay =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.delay_s));

  mon.drain();
  Terminal term;
  TopSnapshot snap = take_snapshot(mon, users, host_ns, st);
  auto next = Clock::now() + delay;
  int frames = 1;
  bool dirty = true;
  while (!stop_requested() && !st.quit) {
    if (dirty) {
      st.width = static_cast<std::size_t>(std::max(getmaxx(stdscr), 1));
      st.height = static_cast<std::size_t>(std::max(getmaxy(stdscr), 1));
      TopFrame frame = build_top_frame(snap, st);
      if (st.page_miss && segment_copy(st) == SegmentCopy::page) {
        // The selection moved past the rows the snapshot has: page again.
        snap = take_snapshot(mon, users, host_ns, st);
        frame = build_top_frame(snap, st);
      }
      term.draw(frame);
      dirty = false;
    }
    // Short waits keep keys responsive; events are applied as they come.
    poll_or_throw(mon, 50);
    TopAction action = TopAction::none;
    for (int ch; (ch = getch()) != ERR;) {
      if (ch == KEY_RESIZE) {
        action = std::max(action, TopAction::redraw); // ncurses has already updated its size
        continue;
      }
      if (const int key = map_key(ch))
        action = std::max(action, top_handle_key(st, key));
      if (st.quit)
        break;
    }
    // A key changed what the snapshot must hold (another view, the details,
    // the filter or sort of paged segments): take it now.
    if (action == TopAction::refetch)
      snap = take_snapshot(mon, users, host_ns, st);
    dirty = dirty || action != TopAction::none;
    if (Clock::now() >= next) {
      if (opts.iterations > 0 && frames >= opts.iterations)
        break;
      snap = take_snapshot(mon, users, host_ns, st);
      next = Clock::now() + delay;
      ++frames;
      dirty = true;
    }
  }
  return 0;
}

} // namespace

int run_top(const TopOptions &opts) {
  const bool batch = opts.batch || opts.json; // --json implies frames on stdout
  if (!batch && !isatty(STDOUT_FILENO))
    throw FatalError("top",
                     "standard output is not a terminal; use -b for batch mode "
                     "(plain-text frames) or -b --json (one JSON object per frame)",
                     2);
  require_bpf_privileges("top");

  MonitorOptions mopts;
  mopts.probe.ring_buffer_bytes = opts.ring_buffer_bytes;
  mopts.probe.verbose = opts.verbose;
  Monitor mon(mopts);
  for (const auto &m : mon.session().probe().missing_hooks())
    std::fprintf(stderr, "shmbpf: warning: hook not available: %s\n", m.c_str());
  // Before ncurses starts: it only installs its own SIGINT/SIGTERM handlers
  // where the default action is still in place, so ours win and the loop
  // ends through the RAII guard, which restores the terminal.
  install_stop_signals();
  return batch ? run_batch(opts, mon) : run_interactive(opts, mon);
}

} // namespace shmbpf
