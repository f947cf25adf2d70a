// The daemon's own request handling over any bytes: a GET of any path with
// any query, and a POST of any body with root's token, as the unix socket
// hands them over. Whatever comes, the answer is one of the statuses the
// API has, and no byte of the request reaches a body raw as a control
// character (an escape sequence on a terminal reading --server).
//
// Input: the path, a newline, the query as key=value pairs joined by '&',
// a newline, then the POST body.
#include "daemon/endpoints.hpp"
#include "daemon/export_file.hpp"
#include "daemon/exporter.hpp"
#include "daemon/local_api.hpp"
#include "daemon/log.hpp"

#include "fuzz_check.hpp"

#include <fcntl.h>

#include <string>

namespace shmbpf {
namespace {

bool status_known(int s) { return s == 200 || s == 400 || s == 403 || s == 404 || s == 503; }

bool no_raw_control(const std::string &body) {
  for (char c : body)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      return false;
  return true;
}

HttpQuery query_of(std::string_view q) {
  HttpQuery out;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const size_t eq = pair.find('=');
    out.emplace(std::string(pair.substr(0, eq)),
                eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
    if (amp == std::string_view::npos)
      break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

struct Daemon {
  Endpoints endpoints{AgentIdentity{"0.0.0", "", ""}};
  Log log;
  Exporter exporter{
      RotatingFile::over_descriptor(::open("/dev/null", O_WRONLY | O_CLOEXEC), "/dev/null"),
      TraceClock{0}, log};
  LocalApi api{endpoints};
  Daemon() { api.take_reap_records(&exporter, "token"); }
};

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  static Daemon *d = new Daemon; // one writer thread for the whole run
  std::string_view in = fuzz::as_text(data, size);
  const size_t nl = in.find('\n');
  const std::string_view path = in.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  const size_t nl2 = rest.find('\n');
  const HttpQuery query = query_of(rest.substr(0, nl2));
  const std::string_view body =
      nl2 == std::string_view::npos ? std::string_view() : rest.substr(nl2 + 1);

  for (const std::string_view p :
       {path, std::string_view("/v1/segments"), std::string_view("/v1/leaks"),
        std::string_view("/v1/top"), std::string_view("/v1/processes")}) {
    HttpReply r;
    try {
      r = d->api.get(p, query);
    } catch (...) {
      FUZZ_CHECK(!"get threw");
    }
    FUZZ_CHECK(status_known(r.status));
    FUZZ_CHECK(no_raw_control(r.body));
  }
  const HttpReply posted = d->api.post("/v1/reaped", body, "token");
  FUZZ_CHECK(status_known(posted.status));
  FUZZ_CHECK(no_raw_control(posted.body));
  return 0;
}
