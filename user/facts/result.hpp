// Result<T>: a value or the reason there is none, for expected failures
// (Result<void>: done, or why not); FatalError: the one exception type, for
// failures nothing can recover from, with the exit status they end in.
// docs/ARCHITECTURE.md, Errors.
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

// Done, or why not: `return {};` for done, `return Error{why};` otherwise.
template <> class Result<void> {
public:
  Result() = default;
  Result(Error err) : err_(std::move(err)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &error() const { return err_.message; }

private:
  Error err_;
  bool failed_ = false;
};

} // namespace shmbpf

#include <stdexcept>

namespace shmbpf {

// The exit statuses every command keeps to (each command's --help and man
// page say which it uses).
enum class Exit : int {
  ok = 0,
  failed = 1,  // it ran and failed (trace, top, ls, serve)
  found = 1,   // it ran and found something: leaks, findings, something skipped
  refused = 2, // bad input, or refused before anything ran; every error of
               // leaks, doctor, audit and reap, for which 1 means found
};

// An Exit as the process's status.
constexpr int status(Exit e) { return static_cast<int>(e); }

// The one exception type: unrecoverable errors, caught in main, printed as
// "shmbpf: <what>: <why>" with the given exit status.
class FatalError : public std::runtime_error {
public:
  FatalError(const std::string &what, const std::string &why, Exit exit = Exit::failed)
      : std::runtime_error(what + ": " + why), exit_code_(static_cast<int>(exit)) {}
  int exit_code() const { return exit_code_; }

private:
  int exit_code_;
};

} // namespace shmbpf
