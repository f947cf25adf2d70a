// Result<T>: a value or the reason there is none, for expected failures;
// FatalError: the one exception type, for failures nothing can recover from.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace shmbpf {

struct Error {
  std::string message;
};

template <class T> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error err) : v_(std::move(err)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T &value() { return std::get<T>(v_); }
  const T &value() const { return std::get<T>(v_); }
  T &operator*() { return value(); }
  T *operator->() { return &value(); }
  const std::string &error() const { return std::get<Error>(v_).message; }

private:
  std::variant<T, Error> v_;
};

} // namespace shmbpf

#include <stdexcept>

namespace shmbpf {

// The one exception type: unrecoverable errors, caught in main, printed as
// "shmbpf: <what>: <why>" with the given exit status.
class FatalError : public std::runtime_error {
public:
  FatalError(const std::string &what, const std::string &why, int exit_code = 1)
      : std::runtime_error(what + ": " + why), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

private:
  int exit_code_;
};

} // namespace shmbpf
