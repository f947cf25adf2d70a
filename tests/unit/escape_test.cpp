#include "views/escape.hpp"

#include "text_checks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <string>

using namespace std::string_literals;

namespace shmbpf {
namespace {

using test::has_raw_control;

// UTF-8 encodings of the code points that must never appear raw.
bool has_dangerous_code_point(std::string_view s) {
  const std::string bad[] = {"\xd8\x9c",     "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
                             "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                             "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",
                             "\xe2\x80\xa8", "\xe2\x80\xa9"};
  for (const auto &b : bad)
    if (s.find(b) != std::string_view::npos)
      return true;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (static_cast<unsigned char>(s[i]) == 0xc2 && b1 >= 0x80 && b1 <= 0x9f)
      return true;
  }
  return false;
}

std::string random_bytes(std::mt19937 &rng, std::size_t max_len) {
  std::uniform_int_distribution<std::size_t> len(0, max_len);
  // Bias towards bytes that make interesting UTF-8 and control sequences.
  const unsigned char pool[] = {0x00, 0x07, 0x0a, 0x1b, 0x5c, 0x22, 0x41, 0x7f, 0x80, 0x9b, 0xa0,
                                0xbf, 0xc0, 0xc2, 0xd8, 0xe0, 0xe2, 0xed, 0xf0, 0xf4, 0xf5, 0xff};
  std::uniform_int_distribution<int> any(0, 255);
  std::uniform_int_distribution<std::size_t> pick(0, sizeof pool - 1);
  std::string s(len(rng), '\0');
  for (auto &c : s)
    c = static_cast<char>((any(rng) & 1) ? pool[pick(rng)] : any(rng));
  return s;
}

TEST(EscapeText, PlainTextUnchanged) {
  EXPECT_EQ(escape_text(""), "");
  EXPECT_EQ(escape_text("/dev/shm/my-seg_1.dat"), "/dev/shm/my-seg_1.dat");
  EXPECT_EQ(escape_text("a \"quoted\" name"), "a \"quoted\" name");
}

TEST(EscapeText, BackslashIsDoubled) {
  EXPECT_EQ(escape_text("a\\b"), "a\\\\b");
  // A literal "\x41" cannot be confused with an escaped byte.
  EXPECT_EQ(escape_text("\\x41"), "\\\\x41");
}

TEST(EscapeText, NewlineTabCarriageReturn) {
  EXPECT_EQ(escape_text("a\nb\tc\rd"), "a\\nb\\tc\\rd");
}

TEST(EscapeText, TerminalEscapeSequences) {
  EXPECT_EQ(escape_text("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(escape_text("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(escape_text("x\x7fy"), "x\\x7fy");
  EXPECT_EQ(escape_text("\x01\x1f"), "\\x01\\x1f");
  EXPECT_EQ(escape_text("a\0b"s), "a\\x00b");
}

TEST(EscapeText, InvalidUtf8EscapedPerByte) {
  EXPECT_EQ(escape_text("\xff"), "\\xff");
  EXPECT_EQ(escape_text("a\xfe"), "a\\xfe");
  EXPECT_EQ(escape_text("\x80"), "\\x80");            // lone continuation byte
  EXPECT_EQ(escape_text("\xe6\x97"), "\\xe6\\x97");   // truncated 3-byte sequence
  EXPECT_EQ(escape_text("\xe6\x97z"), "\\xe6\\x97z"); // truncated, then ASCII
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");   // overlong '/'
  EXPECT_EQ(escape_text("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
  EXPECT_EQ(escape_text("\xf0\x80\x80\xaf"), "\\xf0\\x80\\x80\\xaf");
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");          // surrogate U+D800
  EXPECT_EQ(escape_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); // > U+10FFFF
  EXPECT_EQ(escape_text("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
}

TEST(EscapeText, ValidMultibyteUnchanged) {
  EXPECT_EQ(escape_text("caf\xc3\xa9"), "caf\xc3\xa9");                           // é
  EXPECT_EQ(escape_text("\xe6\x97\xa5\xe6\x9c\xac"), "\xe6\x97\xa5\xe6\x9c\xac"); // 日本
  EXPECT_EQ(escape_text("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");                 // U+1F600
  EXPECT_EQ(escape_text("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");                 // U+10FFFF
  EXPECT_EQ(escape_text("\xc2\xa0"), "\xc2\xa0");         // NBSP is harmless
  EXPECT_EQ(escape_text("\xed\x9f\xbf"), "\xed\x9f\xbf"); // U+D7FF
}

TEST(EscapeText, C1ControlsEscaped) {
  EXPECT_EQ(escape_text("\xc2\x80"), "\\u{0080}");
  EXPECT_EQ(escape_text("\xc2\x85"), "\\u{0085}");
  EXPECT_EQ(escape_text("a\xc2\x9b"
                        "2J"),
            "a\\u{009b}2J"); // 8-bit CSI
  EXPECT_EQ(escape_text("\xc2\x9f"), "\\u{009f}");
}

TEST(EscapeText, BidiAndSeparatorsEscaped) {
  EXPECT_EQ(escape_text("\xd8\x9c"), "\\u{061c}");
  EXPECT_EQ(escape_text("\xe2\x80\x8e\xe2\x80\x8f"), "\\u{200e}\\u{200f}");
  EXPECT_EQ(escape_text("evil\xe2\x80\xaegpj.exe"), "evil\\u{202e}gpj.exe");
  EXPECT_EQ(escape_text("\xe2\x80\xaa"), "\\u{202a}");
  EXPECT_EQ(escape_text("\xe2\x81\xa6\xe2\x81\xa9"), "\\u{2066}\\u{2069}");
  EXPECT_EQ(escape_text("\xe2\x80\xa8\xe2\x80\xa9"), "\\u{2028}\\u{2029}");
  // Neighbours of the ranges are ordinary characters.
  EXPECT_EQ(escape_text("\xe2\x80\xaf"), "\xe2\x80\xaf"); // U+202F
  EXPECT_EQ(escape_text("\xe2\x81\xa5"), "\xe2\x81\xa5"); // U+2065
}

TEST(EscapeText, EveryByteIsSafe) {
  for (int b = 0; b < 256; ++b) {
    const std::string out = escape_text(std::string(1, static_cast<char>(b)));
    EXPECT_FALSE(has_raw_control(out)) << b;
    if (b >= 0x80) {
      EXPECT_EQ(out.size(), 4u) << b; // \xNN
    }
  }
}

// Plain runs are scanned a word at a time: a byte that needs escaping is
// found wherever it sits in a word, in the last, partial one, and in a
// string shorter than a word.
TEST(EscapeText, EveryByteAtEveryPlaceInAWord) {
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    for (std::size_t len = 1; len <= 19; ++len)
      for (std::size_t at = 0; at < len; ++at) {
        const std::string before(at, 'a');
        const std::string after(len - 1 - at, 'z');
        EXPECT_EQ(escape_text(before + one + after), before + escape_text(one) + after)
            << "byte " << b << " at " << at << " of " << len;
        std::string json;
        append_json_text(json, before + one + after);
        std::string alone;
        append_json_text(alone, one);
        EXPECT_EQ(json, '"' + before + alone.substr(1, alone.size() - 2) + after + '"')
            << "byte " << b << " at " << at << " of " << len;
      }
  }
}

// The JSON string of text: what every JSON writer of shmbpf emits.
std::string json_text(std::string_view s) {
  std::string out;
  append_json_text(out, s);
  return out;
}

TEST(EscapeText, RandomInputIsSafeValidUtf8) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 5000; ++i) {
    const std::string in = random_bytes(rng, 24);
    const std::string out = escape_text(in);
    ASSERT_FALSE(has_raw_control(out)) << out;
    ASSERT_FALSE(has_dangerous_code_point(out)) << out;
    // nlohmann rejects invalid UTF-8, so this also checks validity.
    const auto j = nlohmann::json::parse(json_text(in));
    ASSERT_EQ(j.get<std::string>(), out);
  }
}

TEST(EscapeText, InvisibleCharactersEscaped) {
  // They take no cell: raw, they hide in a name and shift a table's columns.
  EXPECT_EQ(escape_text("a\xe2\x80\x8b"
                        "b"),
            "a\\u{200b}b");                                                 // zero-width space
  EXPECT_EQ(escape_text("\xe2\x80\x8c\xe2\x80\x8d"), "\\u{200c}\\u{200d}"); // joiners
  EXPECT_EQ(escape_text("\xe2\x81\xa0"), "\\u{2060}");                      // word joiner
  EXPECT_EQ(escape_text("\xef\xbb\xbf"), "\\u{feff}");                      // BOM
  EXPECT_EQ(escape_text("\xc2\xad"), "\\u{00ad}");                          // soft hyphen
  EXPECT_EQ(escape_text("\xe2\x80\x8a"), "\xe2\x80\x8a"); // U+200A hair space is visible
}

// Two different names never print the same, in text or in JSON: the
// escaping can be undone.
TEST(EscapeText, InjectiveByRoundTrip) {
  const std::string fixed[] = {
      "",
      "plain/ascii name_1.dat",
      "\\xff",
      "\xff",
      "\\\\xff",
      "\\u{202e}",
      "\xe2\x80\xae",
      "quote\" and backslash\\ and both \\\"",
      "\x1b]0;title\x07\n\t\r\b\f\x7f",
      "\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe0\x80",
      "\xc2\x9b\xe2\x80\xae\xe2\x80\xa8\xe2\x81\xa6\xd8\x9c\xe2\x80\x8b",
      "caf\xc3\xa9 \xf0\x9f\x98\x80 ok",
      "trailing lead byte \xe2\x80",
      std::string("nul\0inside", 10),
  };
  for (const auto &s : fixed) {
    const auto back = unescape_text(escape_text(s));
    ASSERT_TRUE(back.has_value()) << escape_text(s);
    EXPECT_EQ(*back, s) << escape_text(s);
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 20000; ++i) {
    const std::string in = random_bytes(rng, 24);
    const auto back = unescape_text(escape_text(in));
    ASSERT_TRUE(back.has_value()) << escape_text(in);
    ASSERT_EQ(*back, in) << escape_text(in);
  }
  // The byte 0xff and the four characters \xff: two names, two outputs.
  EXPECT_NE(escape_text("\xff"), escape_text("\\xff"));
  EXPECT_NE(json_text("\xff"), json_text("\\xff"));
}

TEST(UnescapeText, RejectsWhatEscapeTextNeverWrites) {
  EXPECT_FALSE(unescape_text("\\"));           // lone backslash
  EXPECT_FALSE(unescape_text("\\q"));          // unknown escape
  EXPECT_FALSE(unescape_text("\\x4"));         // short byte escape
  EXPECT_FALSE(unescape_text("\\x41"));        // 'A' is never escaped
  EXPECT_FALSE(unescape_text("\\xFF"));        // upper-case hex is never written
  EXPECT_FALSE(unescape_text("\\u{0041}"));    // 'A' is not a dangerous code point
  EXPECT_FALSE(unescape_text("\\u{202e"));     // unterminated
  EXPECT_FALSE(unescape_text("\\xc3\\xa9"));   // é is kept whole, never as bytes
  EXPECT_FALSE(unescape_text("\x1b"));         // raw control character
  EXPECT_FALSE(unescape_text("\xff"));         // invalid UTF-8
  EXPECT_FALSE(unescape_text("\xe2\x80\xae")); // raw bidi control
  EXPECT_EQ(unescape_text("a\\nb\\\\c\\x1b\\u{202e}"), "a\nb\\c\x1b\xe2\x80\xae");
}

TEST(JsonText, PlainAndStructural) {
  EXPECT_EQ(json_text(""), "\"\"");
  EXPECT_EQ(json_text("/dev/shm/x"), "\"/dev/shm/x\"");
  EXPECT_EQ(json_text("a\"b\\c"), R"("a\"b\\\\c")");
}

// JSON carries the text a terminal shows: the escapes are part of the value.
TEST(JsonText, CarriesTheEscapedText) {
  EXPECT_EQ(json_text("\x1b[2J"), R"("\\x1b[2J")");
  EXPECT_EQ(json_text("\n\t"), R"("\\n\\t")");
  EXPECT_EQ(json_text("\xff"), R"("\\xff")");
  EXPECT_EQ(json_text("\xe2\x80\xae"), R"("\\u{202e}")");
  EXPECT_EQ(nlohmann::json::parse(json_text("x\xc0\xaf\n")).get<std::string>(), "x\\xc0\\xaf\\n");
}

TEST(JsonText, ValidUtf8PassesThrough) {
  const std::string s = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(json_text(s), "\"" + s + "\"");
}

TEST(JsonText, RandomInputIsOneLineOfValidJsonThatUnescapes) {
  std::mt19937 rng(777);
  for (int i = 0; i < 5000; ++i) {
    const std::string in = random_bytes(rng, 24);
    const std::string out = json_text(in);
    ASSERT_FALSE(has_raw_control(out)) << out;
    ASSERT_FALSE(has_dangerous_code_point(out)) << out;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(out)) << out;
    ASSERT_TRUE(j.is_string());
    ASSERT_EQ(unescape_text(j.get<std::string>()), in) << out;
  }
}

TEST(EscapeText, AppendFormAppends) {
  std::string out = "x=";
  append_escaped_text(out, "a\nb");
  EXPECT_EQ(out, "x=a\\nb");
}

} // namespace
} // namespace shmbpf
