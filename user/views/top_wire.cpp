#include "views/top_wire.hpp"

#include "views/escape.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace shmbpf {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void percent_encode(std::string &out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size())
        return std::nullopt;
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0)
        return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

std::string_view style_letters() { return "ntacsh"; } // TopStyle's order

std::string_view sort_name(TopSort s) { return to_string(s); }

std::optional<TopSort> parse_sort(std::string_view s) {
  for (TopSort v : {TopSort::bytes, TopSort::count, TopSort::rate, TopSort::age})
    if (to_string(v) == s)
      return v;
  return std::nullopt;
}

template <class T> bool parse_unsigned(std::string_view s, T &out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc{} && end == s.data() + s.size();
}

bool parse_flag(std::string_view s, bool &out) {
  if (s != "0" && s != "1")
    return false;
  out = s == "1";
  return true;
}

} // namespace

std::string query_string(const QueryFields &fields) {
  std::string out;
  for (const auto &[name, value] : fields) {
    if (!out.empty())
      out += '&';
    percent_encode(out, name);
    out += '=';
    percent_encode(out, value);
  }
  return out;
}

Result<QueryFields> parse_query_string(std::string_view query) {
  QueryFields fields;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty())
      continue;
    const std::size_t eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq));
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name || !value)
      return Error{"bad percent escape in '" + escape_text(pair) + "'"};
    fields.emplace(std::move(*name), std::move(*value));
  }
  return fields;
}

QueryFields top_state_fields(const TopState &st) {
  QueryFields f;
  auto put = [&](const char *name, std::string value) { f.emplace(name, std::move(value)); };
  auto num = [&](const char *name, std::size_t v) { put(name, std::to_string(v)); };
  auto flag = [&](const char *name, bool v) { put(name, v ? "1" : "0"); };
  put("view", std::string(to_string(st.view)));
  put("sort", std::string(sort_name(st.sort)));
  put("filter", st.filter);
  flag("editing_filter", st.editing_filter);
  if (st.pid)
    num("pid", *st.pid);
  if (st.container)
    put("container", *st.container); // "" is the host, absent is every container
  char delay[32];
  auto [end, ec] = std::to_chars(delay, delay + sizeof delay, st.delay_s);
  put("delay", ec == std::errc{} ? std::string(delay, end) : "1");
  num("width", st.width);
  num("height", st.height);
  num("selected", st.selected);
  put("selected_id", st.selected_id);
  num("scroll", st.scroll);
  flag("help", st.help);
  flag("details", st.details);
  put("details_view", std::string(to_string(st.details_view)));
  put("details_id", st.details_id);
  num("details_scroll", st.details_scroll);
  num("rows", st.rows);
  num("page_rows", st.page_rows);
  flag("page_miss", st.page_miss);
  return f;
}

Result<TopState> top_state_from_fields(const QueryFields &fields) {
  TopState st;
  for (const auto &[name, v] : fields) {
    bool ok = true;
    if (name == "view") {
      const auto view = parse_top_view(v);
      ok = view.has_value();
      st.view = view.value_or(st.view);
    } else if (name == "details_view") {
      const auto view = parse_top_view(v);
      ok = view.has_value();
      st.details_view = view.value_or(st.details_view);
    } else if (name == "sort") {
      const auto sort = parse_sort(v);
      ok = sort.has_value();
      st.sort = sort.value_or(st.sort);
    } else if (name == "filter") {
      st.filter = v;
    } else if (name == "selected_id") {
      st.selected_id = v;
    } else if (name == "details_id") {
      st.details_id = v;
    } else if (name == "container") {
      st.container = v;
    } else if (name == "pid") {
      uint32_t pid = 0;
      ok = parse_unsigned(v, pid) && pid > 0;
      st.pid = pid;
    } else if (name == "delay") {
      char *end = nullptr;
      const std::string text(v);
      st.delay_s = std::strtod(text.c_str(), &end);
      ok = !text.empty() && end == text.c_str() + text.size() && std::isfinite(st.delay_s) &&
           st.delay_s > 0;
    } else if (name == "editing_filter") {
      ok = parse_flag(v, st.editing_filter);
    } else if (name == "help") {
      ok = parse_flag(v, st.help);
    } else if (name == "details") {
      ok = parse_flag(v, st.details);
    } else if (name == "page_miss") {
      ok = parse_flag(v, st.page_miss);
    } else {
      std::size_t *target = name == "width"            ? &st.width
                            : name == "height"         ? &st.height
                            : name == "selected"       ? &st.selected
                            : name == "scroll"         ? &st.scroll
                            : name == "details_scroll" ? &st.details_scroll
                            : name == "rows"           ? &st.rows
                            : name == "page_rows"      ? &st.page_rows
                                                       : nullptr;
      if (!target)
        return Error{"unknown parameter '" + escape_text(name) + "'"};
      ok = parse_unsigned(v, *target);
    }
    if (!ok)
      return Error{"bad value for " + name + ": '" + escape_text(v) + "'"};
  }
  return st;
}

std::string top_frame_reply(const TopFrame &frame, const TopState &state) {
  std::string out = query_string(top_state_fields(state));
  out += '\n';
  for (const TopLine &line : frame.lines) {
    out += style_letters()[static_cast<std::size_t>(line.style)];
    out += line.text;
    out += '\n';
  }
  return out;
}

Result<TopFrameReply> parse_top_frame_reply(std::string_view body) {
  const std::size_t nl = body.find('\n');
  if (nl == std::string_view::npos)
    return Error{"a frame reply without its state line"};
  auto fields = parse_query_string(body.substr(0, nl));
  if (!fields)
    return Error{fields.error()};
  auto state = top_state_from_fields(*fields);
  if (!state)
    return Error{state.error()};
  TopFrameReply r{{}, std::move(*state)};
  body.remove_prefix(nl + 1);
  while (!body.empty()) {
    const std::size_t end = body.find('\n');
    if (end == std::string_view::npos)
      return Error{"a frame reply cut short"};
    const std::size_t style = style_letters().find(body[0]);
    if (end == 0 || style == std::string_view::npos)
      return Error{"a frame line without its style"};
    r.frame.lines.push_back({std::string(body.substr(1, end - 1)), static_cast<TopStyle>(style)});
    body.remove_prefix(end + 1);
  }
  return r;
}

} // namespace shmbpf
