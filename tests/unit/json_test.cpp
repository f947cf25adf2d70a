#include "views/json.hpp"

#include "views/escape.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
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

TEST(JsonWriter, NestingBeyondItsDepthIsAnError) {
  std::string out;
  JsonWriter w(out, true);
  for (int i = 0; i < 64; ++i)
    w.begin_array();
  EXPECT_THROW(w.begin_array(), std::length_error);
}

} // namespace
} // namespace shmbpf
