// Standard output for the commands that print: every write checked, so that
// a full disk or a closed pipe is told apart from success. A reader that
// went away (`| head`) ends the output quietly; any other failure is an
// error the command reports.
#pragma once

#include <string_view>

namespace shmbpf {

class Output {
public:
  explicit Output(int fd = 1) : fd_(fd) {}

  // Writes all of data; false once any write has failed (later calls
  // write nothing).
  bool write(std::string_view data);
  bool ok() const { return err_ == 0; }
  // The reader closed its end (EPIPE): not an error of ours.
  bool reader_gone() const;
  // Throws FatalError (exit status 2) when a write failed for any other
  // reason than a reader that went away.
  void check() const;

private:
  int fd_;
  int err_ = 0;
};

} // namespace shmbpf
