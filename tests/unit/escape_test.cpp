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

TEST(EscapeText, RandomInputIsSafeValidUtf8) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 5000; ++i) {
    const std::string in = random_bytes(rng, 24);
    const std::string out = escape_text(in);
    ASSERT_FALSE(has_raw_control(out)) << json_string(in);
    ASSERT_FALSE(has_dangerous_code_point(out)) << json_string(in);
    // nlohmann rejects invalid UTF-8, so this also checks validity.
    const auto j = nlohmann::json::parse(json_string(out));
    ASSERT_EQ(j.get<std::string>(), out);
  }
}

TEST(JsonString, PlainAndStructural) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("/dev/shm/x"), "\"/dev/shm/x\"");
  EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
}

TEST(JsonString, ControlCharacters) {
  EXPECT_EQ(json_string("\n\t\r\b\f"), R"("\n\t\r\b\f")");
  EXPECT_EQ(json_string("\x1b[2J"), R"("\u001b[2J")");
  EXPECT_EQ(json_string("\x01\x7f"), R"("\u0001\u007f")");
  EXPECT_EQ(json_string("a\0b"s), R"("a\u0000b")");
}

TEST(JsonString, DangerousCodePoints) {
  EXPECT_EQ(json_string("\xc2\x9b"), R"("\u009b")");
  EXPECT_EQ(json_string("\xe2\x80\xae"), R"("\u202e")");
  EXPECT_EQ(json_string("\xe2\x80\xa8\xe2\x80\xa9"), R"("\u2028\u2029")");
  EXPECT_EQ(json_string("\xd8\x9c"), R"("\u061c")");
  // Still decodes to the original character.
  EXPECT_EQ(nlohmann::json::parse(json_string("\xe2\x80\xae")).get<std::string>(), "\xe2\x80\xae");
}

TEST(JsonString, InvalidUtf8BecomesText) {
  EXPECT_EQ(json_string("\xff"), R"("\\xff")");
  EXPECT_EQ(json_string("a\xed\xa0\x80"), R"("a\\xed\\xa0\\x80")");
  EXPECT_EQ(nlohmann::json::parse(json_string("x\xc0\xaf")).get<std::string>(), "x\\xc0\\xaf");
}

TEST(JsonString, ValidUtf8PassesThrough) {
  const std::string s = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(json_string(s), "\"" + s + "\"");
}

TEST(JsonString, AppendsToExisting) {
  std::string out = "{\"k\":";
  append_json_string(out, "v\n");
  out += '}';
  EXPECT_EQ(out, R"({"k":"v\n"})");
  EXPECT_EQ(nlohmann::json::parse(out)["k"], "v\n");
}

TEST(JsonString, RandomInputIsOneLineOfValidJson) {
  std::mt19937 rng(777);
  for (int i = 0; i < 5000; ++i) {
    const std::string in = random_bytes(rng, 24);
    const std::string out = json_string(in);
    ASSERT_FALSE(has_raw_control(out)) << escape_text(in);
    ASSERT_FALSE(has_dangerous_code_point(out)) << escape_text(in);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(out)) << escape_text(in);
    ASSERT_TRUE(j.is_string());
  }
}

TEST(JsonString, ValidTextRoundTrips) {
  const std::string samples[] = {"plain", "quote\"back\\slash", "ctl\x01\x1b\x7f\n",
                                 "\xc2\x85\xe2\x80\xae\xe2\x80\xa8", "\xf0\x9f\x98\x80"};
  for (const auto &s : samples)
    EXPECT_EQ(nlohmann::json::parse(json_string(s)).get<std::string>(), s);
}

// append_json_text is the one-pass form of json_string(escape_text(s)): for
// the nastiest inputs and for random bytes they must agree byte for byte.
TEST(JsonText, SameAsJsonStringOfEscapeText) {
  const std::string fixed[] = {
      "",
      "plain/ascii name_1.dat",
      "quote\" and backslash\\ and both \\\"",
      "\x1b]0;title\x07\n\t\r\b\f\x7f",
      "\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe0\x80",
      "\xc2\x9b\xe2\x80\xae\xe2\x80\xa8\xe2\x81\xa6\xd8\x9c",
      "caf\xc3\xa9 \xf0\x9f\x98\x80 ok",
      "trailing lead byte \xe2\x80",
      std::string("nul\0inside", 10),
  };
  for (const auto &s : fixed) {
    std::string out = "prefix";
    append_json_text(out, s);
    EXPECT_EQ(out, "prefix" + json_string(escape_text(s))) << s;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 24, '\0');
    for (char &c : s)
      c = static_cast<char>(rng() % 4 == 0 ? 'a' + rng() % 26 : rng() % 256);
    std::string out;
    append_json_text(out, s);
    ASSERT_EQ(out, json_string(escape_text(s)));
  }
}

TEST(EscapeText, AppendFormAppends) {
  std::string out = "x=";
  append_escaped_text(out, "a\nb");
  EXPECT_EQ(out, "x=a\\nb");
}

} // namespace
} // namespace shmbpf
