#include "views/json.hpp"

#include "views/escape.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace shmbpf {
namespace {

TEST(JsonWriter, NestsAndSeparates) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().str("a", "x\"y").key("b").begin_array().num(1).null().real(0.5).end_array();
  w.key("c").begin_object().boolean("d", true).end_object().real("nan", 0.0 / 0.0).end_object();
  EXPECT_EQ(out, R"({"a": "x\"y", "b": [1, null, 0.5], "c": {"d": true}, "nan": null})");
  EXPECT_TRUE(nlohmann::json::accept(out));
}

TEST(JsonWriter, CompactHasNoSpaces) {
  std::string out;
  JsonWriter w(out, /*compact=*/true);
  w.begin_object().num("n", -3).num("u", uint64_t{18446744073709551615u}).boolean("t", false);
  w.key("a").begin_array().begin_object().end_object().begin_array().end_array().end_array();
  w.null("z").end_object();
  EXPECT_EQ(out, R"({"n":-3,"u":18446744073709551615,"t":false,"a":[{},[]],"z":null})");
}

// Every string, keys and values alike, follows the one escaping rule.
TEST(JsonWriter, StringsFollowTheOneEscapingRule) {
  const std::string hostile = "evil\x1b[2J\n\xff\xe2\x80\xae";
  std::string out;
  JsonWriter w(out, true);
  w.begin_object().str("path", hostile).key(hostile).str(hostile).end_object();
  const auto doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc["path"], escape_text(hostile));
  EXPECT_EQ(doc[escape_text(hostile)], escape_text(hostile));
  EXPECT_EQ(out.find('\n'), std::string::npos);
}

// Keys too long for the composed fast path, and with characters to escape,
// come out the same way as short plain ones.
TEST(JsonWriter, LongAndOddKeys) {
  const std::string long_key(100, 'k');
  std::string out;
  JsonWriter w(out, true);
  // A literal key that needs escaping does not compile: this one is text.
  const std::string_view odd = "q\"k";
  w.begin_object().num(long_key, 1).str(odd, "v").boolean(long_key + "b", true);
  w.null(long_key + "n").end_object();
  const auto doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc[long_key], 1);
  EXPECT_EQ(doc["q\"k"], "v");
  EXPECT_EQ(doc[long_key + "b"], true);
  EXPECT_TRUE(doc[long_key + "n"].is_null());
}

TEST(JsonWriter, RawValueTakesItsPlaceInTheSequence) {
  std::string out;
  JsonWriter w(out, true);
  w.begin_object().num("a", 1);
  w.key("time").raw_value() += "\"12:00\"";
  w.key("list").begin_array();
  w.raw_value() += "1";
  w.raw_value() += "2";
  w.end_array().end_object();
  EXPECT_EQ(out, R"({"a":1,"time":"12:00","list":[1,2]})");
}

TEST(JsonWriter, ExtremeNumbers) {
  std::string out;
  JsonWriter w(out, true);
  w.begin_array()
      .num(std::numeric_limits<int64_t>::min())
      .num(std::numeric_limits<int32_t>::min())
      .real(std::numeric_limits<double>::infinity())
      .real(1e300)
      .end_array();
  const auto doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc[0].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(doc[1].get<int64_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_TRUE(doc[2].is_null());
  EXPECT_DOUBLE_EQ(doc[3].get<double>(), 1e300);
}

// Values are staged in the writer and reach the output in blocks: strings
// of every length, up to well past what is staged, with the bytes that
// grow most when escaped, come out as append_json_text writes them, in
// order, and the output holds the document once it is closed.
TEST(JsonWriter, StagedOutputIsTheSameAsWrittenAtOnce) {
  std::mt19937 rng(7);
  const std::string growing = "\x01\\\"\xff\xc2\x85";
  for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 200u, 203u, 204u, 205u, 1000u, 5000u}) {
    for (int variant = 0; variant < 3; ++variant) {
      std::string v;
      for (std::size_t i = 0; i < len; ++i) {
        if (variant == 0)
          v += static_cast<char>('a' + i % 26);
        else if (variant == 1)
          v += growing[i % growing.size()];
        else
          v += static_cast<char>(rng());
      }
      std::string out = "x";
      std::string want = "x{";
      {
        JsonWriter w(out, true);
        w.begin_object();
        for (int f = 0; f < 12; ++f) {
          const std::string k = "k" + std::to_string(f);
          w.num(k, f).str("s", v);
          want += (f ? ",\"" : "\"") + k + "\":" + std::to_string(f) + ",\"s\":";
          append_json_text(want, v);
        }
        w.end_object();
        want += '}';
        EXPECT_EQ(out, want) << "length " << len << ", variant " << variant;
      }
      EXPECT_EQ(out, want);
    }
  }
}

// A value written by hand between staged ones lands where it was asked.
TEST(JsonWriter, StagedFieldsAroundRawValues) {
  std::string out;
  JsonWriter w(out);
  w.begin_array().num(1);
  w.raw_value() += "true";
  w.str("two").begin_object().num("n", 3).end_object();
  w.raw_value() += "4";
  w.end_array();
  EXPECT_EQ(out, R"([1, true, "two", {"n": 3}, 4])");
}

TEST(JsonWriter, NestingBeyondItsDepthIsAnError) {
  std::string out;
  JsonWriter w(out, true);
  for (int i = 0; i < 64; ++i)
    w.begin_array();
  EXPECT_THROW(w.begin_array(), std::length_error);
}

} // namespace
} // namespace shmbpf
