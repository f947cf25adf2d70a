#include "terminal/screen.hpp"

#include "facts/result.hpp"
#include "views/top_state.hpp"

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <string>
#include <utility>

// Last, and without the function-like macros (erase, move, refresh...) that
// would rewrite unrelated C++ names.
#define NCURSES_NOMACROS
#include <curses.h>

namespace shmbpf {

namespace {

constexpr short alert_pair = 1;
constexpr short selected_pair = 2;

attr_t attr(TopStyle s) {
  const bool color = has_colors();
  switch (s) {
  case TopStyle::title:
    return A_BOLD;
  case TopStyle::alert:
    return A_BOLD | (color ? COLOR_PAIR(alert_pair) : A_UNDERLINE);
  case TopStyle::columns:
    return A_REVERSE;
  case TopStyle::selected:
    return color ? COLOR_PAIR(selected_pair) | A_BOLD : A_REVERSE | A_BOLD;
  case TopStyle::help:
    return A_DIM;
  case TopStyle::normal:
    break;
  }
  return A_NORMAL;
}

} // namespace

Screen::Screen() {
  std::setlocale(LC_CTYPE, ""); // UTF-8 names need a UTF-8 aware ncurses
  // newterm, unlike initscr, reports an unusable TERM instead of exiting.
  screen_ = newterm(nullptr, stdout, stdin);
  if (!screen_) {
    const char *term = std::getenv("TERM");
    throw FatalError("top",
                     std::string("cannot drive the terminal (TERM=") + (term ? term : "") +
                         "); use -b for batch mode",
                     Exit::refused);
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
    init_pair(alert_pair, COLOR_RED, -1);
    init_pair(selected_pair, COLOR_BLACK, COLOR_CYAN);
  }
}

Screen::~Screen() {
  endwin();
  delscreen(screen_);
}

std::size_t Screen::width() const { return static_cast<std::size_t>(std::max(getmaxx(stdscr), 1)); }

std::size_t Screen::height() const {
  return static_cast<std::size_t>(std::max(getmaxy(stdscr), 1));
}

void Screen::draw(const TopFrame &frame) {
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

std::optional<int> Screen::next_key() {
  for (int ch; (ch = getch()) != ERR;) {
    if (ch == KEY_RESIZE) {
      resized_ = true; // ncurses has already updated its size
      continue;
    }
    return top_key_of(ch);
  }
  return std::nullopt;
}

bool Screen::take_resized() { return std::exchange(resized_, false); }

int top_key_of(int ch) {
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

} // namespace shmbpf
