#include "views/list_wire.hpp"

#include "model/glob.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <set>

namespace shmbpf {

namespace {

// A parameter the request cannot be answered with: the text of the 400.
struct QueryError {
  std::string why;
};

// A query's parameters, each named at most once and every one known.
class Params {
public:
  Params(const QueryFields &q, std::initializer_list<std::string_view> known) : q_(q) {
    const std::set<std::string_view> names(known);
    for (auto it = q.begin(); it != q.end(); it = q.upper_bound(it->first)) {
      if (!names.contains(it->first))
        throw QueryError{"unknown parameter '" + escape_text(it->first) + "'"};
      if (q.count(it->first) > 1)
        throw QueryError{"parameter '" + escape_text(it->first) + "' given more than once"};
    }
  }

  // A --match glob that can match.
  std::optional<std::string> glob(const std::string &name) const {
    auto v = text(name);
    if (v)
      if (std::string why = glob_problem(*v); !why.empty())
        throw QueryError{name + ": " + why};
    return v;
  }

  std::optional<std::string> text(const std::string &name) const {
    auto it = q_.find(name);
    return it == q_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  std::optional<uint32_t> id(const std::string &name) const {
    const auto v = text(name);
    if (!v)
      return std::nullopt;
    uint32_t out = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (v->empty() || ec != std::errc{} || end != v->data() + v->size() || out == 0 ||
        out > INT32_MAX)
      throw QueryError{name + " must be a whole number from 1 to 2147483647, not '" +
                       escape_text(*v) + "'"};
    return out;
  }

  double seconds(const std::string &name, double fallback) const {
    const auto v = text(name);
    if (!v)
      return fallback;
    char *end = nullptr;
    const double out = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size() || !std::isfinite(out) || out < 0)
      throw QueryError{name + " must be a number of seconds, 0 or more, not '" + escape_text(*v) +
                       "'"};
    return out;
  }

  bool flag(const std::string &name) const {
    const auto v = text(name);
    if (!v || *v == "0" || *v == "false")
      return false;
    if (v->empty() || *v == "1" || *v == "true")
      return true;
    throw QueryError{name + " must be 1, true, 0 or false, not '" + escape_text(*v) + "'"};
  }

  // json (the default) or text: the document of --json or the table.
  bool json() const {
    const auto v = text("format");
    if (!v || *v == "json")
      return true;
    if (*v == "text")
      return false;
    throw QueryError{"format must be json or text, not '" + escape_text(*v) + "'"};
  }

private:
  const QueryFields &q_;
};

constexpr std::pair<ListBy, std::string_view> kListPaths[] = {
    {ListBy::segments, "/v1/segments"},
    {ListBy::processes, "/v1/processes"},
    {ListBy::containers, "/v1/containers"},
    {ListBy::mounts, "/v1/mounts"},
};

} // namespace

std::string LsQuery::path() const {
  for (const auto &[b, p] : kListPaths)
    if (b == by)
      return std::string(p);
  return {};
}

QueryFields LsQuery::fields() const {
  QueryFields q;
  if (!json)
    q.emplace("format", "text");
  if (by != ListBy::segments)
    return q;
  if (pid)
    q.emplace("pid", std::to_string(*pid));
  if (container)
    q.emplace("container", *container);
  if (mount)
    q.emplace("mount", *mount);
  if (kind)
    q.emplace("kind", std::string(to_string(*kind)));
  if (match)
    q.emplace("match", *match);
  return q;
}

bool LsQuery::is_list_path(std::string_view path) {
  for (const auto &[b, p] : kListPaths)
    if (p == path)
      return true;
  return false;
}

Result<LsQuery> LsQuery::from_request(std::string_view path, const QueryFields &fields) {
  LsQuery out;
  bool known = false;
  for (const auto &[b, p] : kListPaths)
    if (p == path) {
      out.by = b;
      known = true;
    }
  if (!known)
    return Error{"no list at " + escape_text(path)};
  try {
    if (out.by != ListBy::segments) {
      out.json = Params(fields, {"format"}).json();
      return out;
    }
    const Params p(fields, {"format", "pid", "container", "mount", "kind", "match"});
    out.pid = p.id("pid");
    out.container = p.text("container");
    out.mount = p.text("mount");
    if (auto k = p.text("kind")) {
      if (*k != "tmpfs" && *k != "memfd" && *k != "sysv")
        throw QueryError{"kind must be tmpfs, memfd or sysv, not '" + escape_text(*k) + "'"};
      out.kind = parse_kind(*k);
    }
    out.match = p.glob("match");
    out.json = p.json();
  } catch (const QueryError &e) {
    return Error{e.why};
  }
  return out;
}

SegmentFilter LsQuery::filter() const {
  SegmentFilter f;
  f.pid = pid;
  if (container)
    f.container = *container == "host" ? std::string() : *container;
  f.mount = mount;
  f.kind = kind;
  f.path_glob = match;
  return f;
}

QueryFields LeaksQuery::fields() const {
  QueryFields q;
  if (!json)
    q.emplace("format", "text");
  q.emplace("min_age", shortest_decimal(min_age_s));
  if (window_s > 0)
    q.emplace("window", shortest_decimal(window_s));
  if (match)
    q.emplace("match", *match);
  if (all_mounts)
    q.emplace("all_mounts", "1");
  return q;
}

Result<LeaksQuery> LeaksQuery::from_fields(const QueryFields &fields) {
  LeaksQuery out;
  try {
    const Params p(fields, {"format", "min_age", "match", "all_mounts", "window"});
    out.min_age_s = p.seconds("min_age", kLeakMinAgeS);
    out.match = p.glob("match");
    out.all_mounts = p.flag("all_mounts");
    out.window_s = p.seconds("window", 0);
    out.json = p.json();
  } catch (const QueryError &e) {
    return Error{e.why};
  }
  return out;
}

uint64_t LeaksQuery::min_age_ns() const {
  return static_cast<uint64_t>(std::llround(min_age_s * 1e9));
}

uint64_t LeaksQuery::window_ns() const {
  return static_cast<uint64_t>(std::llround(window_s * 1e9));
}

} // namespace shmbpf
