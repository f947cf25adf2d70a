#include "views/errno_name.hpp"

#include <cerrno>

namespace shmbpf {

const char *errno_literal(int err) {
  switch (err) {
  case EPERM:
    return "EPERM";
  case ENOENT:
    return "ENOENT";
  case ESRCH:
    return "ESRCH";
  case EINTR:
    return "EINTR";
  case EIO:
    return "EIO";
  case ENXIO:
    return "ENXIO";
  case E2BIG:
    return "E2BIG";
  case ENOEXEC:
    return "ENOEXEC";
  case EBADF:
    return "EBADF";
  case ECHILD:
    return "ECHILD";
  case EAGAIN:
    return "EAGAIN";
  case ENOMEM:
    return "ENOMEM";
  case EACCES:
    return "EACCES";
  case EFAULT:
    return "EFAULT";
  case EBUSY:
    return "EBUSY";
  case EEXIST:
    return "EEXIST";
  case EXDEV:
    return "EXDEV";
  case ENODEV:
    return "ENODEV";
  case ENOTDIR:
    return "ENOTDIR";
  case EISDIR:
    return "EISDIR";
  case EINVAL:
    return "EINVAL";
  case ENFILE:
    return "ENFILE";
  case EMFILE:
    return "EMFILE";
  case ETXTBSY:
    return "ETXTBSY";
  case EFBIG:
    return "EFBIG";
  case ENOSPC:
    return "ENOSPC";
  case ESPIPE:
    return "ESPIPE";
  case EROFS:
    return "EROFS";
  case EMLINK:
    return "EMLINK";
  case ERANGE:
    return "ERANGE";
  case ENAMETOOLONG:
    return "ENAMETOOLONG";
  case ENOSYS:
    return "ENOSYS";
  case ENOTEMPTY:
    return "ENOTEMPTY";
  case ELOOP:
    return "ELOOP";
  case EIDRM:
    return "EIDRM";
  case EOVERFLOW:
    return "EOVERFLOW";
  case EOPNOTSUPP:
    return "EOPNOTSUPP";
  case EDQUOT:
    return "EDQUOT";
  default:
    return nullptr;
  }
}

std::string errno_name(int err) {
  if (const char *name = errno_literal(err))
    return name;
  return std::to_string(err);
}

} // namespace shmbpf
