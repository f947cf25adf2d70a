// Where this process finds tracefs, the kernel's list of tracepoints that
// attaching a program to one needs (libbpf reads the tracepoint's id there).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace shmbpf {

// Where tracefs is on the machine: the directory libbpf will use ("" when
// none is mounted), or why none can be used.
struct TracefsState {
  std::string dir;
  std::string problem;  // "" when dir is tracefs or nothing is mounted yet
  bool readable = true; // false: this process may not look (tracefs is root's)
};
TracefsState find_tracefs();

// tracefs for this process, for as long as the object lives. When the
// machine has one mounted, that one. When it has none, one mounted where
// nobody else sees it: a thread of ours moves to a mount namespace of its
// own (whose mounts receive the host's and send nothing back), mounts
// tracefs at its usual place there, and keeps it until this object goes,
// when the namespace and its mount end with the thread. The host's mount
// table never changes, so any number of shmbpf processes can start side by
// side: none can unmount what another is attaching through.
class Tracefs {
public:
  // Throws FatalError (exit status 2) when tracefs cannot be used or mounted.
  Tracefs();
  ~Tracefs();
  Tracefs(const Tracefs &) = delete;
  Tracefs &operator=(const Tracefs &) = delete;

  // A path to tracefs that any thread of this process can read: the
  // machine's directory, or the private mount seen through the thread's
  // root (/proc/<pid>/task/<tid>/root/sys/kernel/tracing).
  const std::string &dir() const { return dir_; }
  // Whether tracefs is a mount of this process's own.
  bool is_private() const { return worker_.joinable(); }
  // Runs fn where tracefs is at the path libbpf looks at (on the thread of
  // the private mount, if there is one) and returns what fn threw.
  void run(const std::function<void()> &fn);

private:
  void serve();

  std::string dir_;
  std::thread worker_;
  std::mutex run_mu_; // held by the caller of run() for the whole job
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()> *job_ = nullptr; // set by run(), cleared by the thread
  std::exception_ptr failed_;                  // the job's exception, or the mount's
  bool ready_ = false;                         // the thread mounted, or failed to
  bool stop_ = false;
};

} // namespace shmbpf
