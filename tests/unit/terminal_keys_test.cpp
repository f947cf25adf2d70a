// The terminal's key map (terminal/screen.hpp): what reaches top's state.
#include "terminal/screen.hpp"
#include "views/top_state.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

TEST(TerminalKeys, PrintableKeysPassAndControlKeysMap) {
  for (int c : {int{'q'}, int{'p'}, int{'/'}, int{'?'}, int{' '}, 0xc3,
                0xa9}) // UTF-8 bytes of a typed "é" too
    EXPECT_EQ(top_key_of(c), c) << c;
  EXPECT_EQ(top_key_of('\n'), top_key::enter);
  EXPECT_EQ(top_key_of('\r'), top_key::enter);
  EXPECT_EQ(top_key_of(27), top_key::escape);
  EXPECT_EQ(top_key_of(127), top_key::backspace);
  EXPECT_EQ(top_key_of(8), top_key::backspace);
  EXPECT_EQ(top_key_of(-1), 0);     // ERR
  EXPECT_EQ(top_key_of(0x1ff0), 0); // a curses key top has no use for
}

} // namespace
} // namespace shmbpf
