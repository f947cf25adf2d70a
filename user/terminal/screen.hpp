// The user's terminal, driven with ncurses: draws top's frames and reads its
// keys. The only place that knows about curses; top's screen itself is
// built by the pure views (views/top_frame.hpp).
#pragma once

#include "views/top_frame.hpp"

#include <cstddef>
#include <optional>

struct screen; // ncurses' SCREEN

namespace shmbpf {

// Owns the curses screen: whatever ends its user (q, a signal, an exception)
// passes through the destructor, which gives the terminal back.
class Screen {
public:
  // Throws FatalError (exit status 2) when the terminal cannot be driven.
  Screen();
  ~Screen();
  Screen(const Screen &) = delete;
  Screen &operator=(const Screen &) = delete;

  // The size in cells, at least 1x1.
  std::size_t width() const;
  std::size_t height() const;

  void draw(const TopFrame &frame);

  // The next key waiting, as top_handle_key takes it (0 for a key that
  // means nothing to top); nullopt when none is waiting.
  std::optional<int> next_key();
  // Whether the terminal changed size since the last call.
  bool take_resized();

private:
  ::screen *screen_ = nullptr;
  bool resized_ = false;
};

// A curses key code as top_handle_key takes it: printable keys as
// themselves, the others as top_key values, 0 when it means nothing to top.
int top_key_of(int curses_key);

} // namespace shmbpf
