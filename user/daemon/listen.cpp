#include "daemon/listen.hpp"

#include "views/escape.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace shmbpf {

std::string ListenAddress::text() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> ListenSetting::parse(std::string_view text) {
  const Error usage{"must be ADDRESS:PORT with a numeric address, such as 127.0.0.1:19746, "
                    "0.0.0.0:19746 or [::1]:19746, not '" +
                    escape_text(text) + "'"};
  ListenAddress a;
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":")
      return usage;
    a.host = text.substr(1, close - 1);
    a.ipv6 = true;
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
      return usage; // an IPv6 address needs brackets
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned char buf[16];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.host.c_str(), buf) != 1)
    return usage;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
      value > 65535)
    return Error{"port must be a whole number from 1 to 65535, not '" + escape_text(port) + "'"};
  a.port = static_cast<uint16_t>(value);
  return a;
}

} // namespace shmbpf
