// The Prometheus text format's pieces: escaping of label values and HELP
// text, sample values, and the writer's layout of a family.
#include "views/prometheus.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace shmbpf {
namespace {

std::string label_value(std::string_view v) {
  std::string out;
  append_prometheus_label_value(out, v);
  return out;
}

std::string value(double v) {
  std::string out;
  append_prometheus_value(out, v);
  return out;
}

TEST(Prometheus, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(label_value("/dev/shm"), "/dev/shm");
  EXPECT_EQ(label_value("a\\b"), "a\\\\b");
  EXPECT_EQ(label_value("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(label_value("two\nlines"), "two\\nlines");
  EXPECT_EQ(label_value("\\\"\n"), "\\\\\\\"\\n");
  // Nothing else is the format's business: tabs and UTF-8 pass.
  EXPECT_EQ(label_value("t\tab \xc3\xa9"), "t\tab \xc3\xa9");
}

TEST(Prometheus, HelpEscapesBackslashAndNewlineOnly) {
  std::string out;
  append_prometheus_help(out, "a \\ b\n\"c\"");
  EXPECT_EQ(out, "a \\\\ b\\n\"c\"");
}

TEST(Prometheus, ValuesAsTheFormatSpellsThem) {
  EXPECT_EQ(value(0), "0");
  EXPECT_EQ(value(67108864), "67108864");
  EXPECT_EQ(value(-3), "-3");
  EXPECT_EQ(value(0.5), "0.5");
  EXPECT_EQ(value(1234.25), "1234.25");
  EXPECT_EQ(value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(value(std::nan("")), "NaN");
  // Past 2^53 a double is printed as a double, and reads back the same.
  EXPECT_EQ(std::stod(value(1e300)), 1e300);
}

TEST(Prometheus, WriterPutsHelpAndTypeBeforeTheSamples) {
  PrometheusWriter w;
  w.family("x_total", PrometheusWriter::Type::counter, "Things.\nMore.");
  w.sample({{"event", "create"}}, uint64_t{3});
  w.sample({}, uint64_t{4});
  w.family("y_bytes", PrometheusWriter::Type::gauge, "Bytes.");
  w.sample({{"a", "1"}, {"b", ""}}, 0.25);
  EXPECT_EQ(w.text(), "# HELP x_total Things.\\nMore.\n"
                      "# TYPE x_total counter\n"
                      "x_total{event=\"create\"} 3\n"
                      "x_total 4\n"
                      "# HELP y_bytes Bytes.\n"
                      "# TYPE y_bytes gauge\n"
                      "y_bytes{a=\"1\",b=\"\"} 0.25\n");
}

TEST(Prometheus, WriterEscapesNamesTheWayEveryCommandDoes) {
  // A name from a file system goes through escape_text first (control
  // characters, invalid UTF-8, backslashes), then through the format's
  // escaping: Prometheus stores what `shmbpf ls` prints.
  PrometheusWriter w;
  w.family("m", PrometheusWriter::Type::gauge, "M.");
  w.sample({{"mountpoint", "/mnt/a\"b\\c\nd\x1b\xff"}}, uint64_t{1});
  const std::string want = "m{mountpoint=\"/mnt/a\\\"b\\\\\\\\c\\\\nd\\\\x1b\\\\xff\"} 1\n";
  EXPECT_EQ(w.text().substr(w.text().find("\nm{") + 1), want);
  // One line per sample, whatever the name held.
  size_t lines = 0;
  for (char c : w.text())
    lines += c == '\n';
  EXPECT_EQ(lines, 3u);
}

} // namespace
} // namespace shmbpf
