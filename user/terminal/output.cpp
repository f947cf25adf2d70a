#include "terminal/output.hpp"

#include "facts/result.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shmbpf {

bool Output::write(std::string_view data) {
  while (err_ == 0 && !data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err_ = n < 0 ? errno : EIO;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return err_ == 0;
}

bool Output::reader_gone() const { return err_ == EPIPE; }

void Output::check() const {
  if (err_ != 0 && !reader_gone())
    throw FatalError("writing the output", std::strerror(err_), Exit::refused);
}

} // namespace shmbpf
