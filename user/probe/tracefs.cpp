#include "probe/tracefs.hpp"

#include "facts/result.hpp"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shmbpf {

namespace {

constexpr long kTracefsMagic = 0x74726163; // TRACEFS_MAGIC
constexpr const char *kTracing = "/sys/kernel/tracing";

bool exists(const std::string &p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

// A directory that is tracefs itself: anything else mounted there (a tmpfs
// with an events/ directory in it) lists no real tracepoint.
bool is_tracefs(const std::string &dir) {
  struct statfs st {};
  return statfs(dir.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kTracefsMagic;
}

FatalError mount_failure(const std::string &step, int err) {
  return FatalError("tracefs",
                    std::string("not mounted, and ") + step + " failed: " + std::strerror(err) +
                        " (mount it for shmbpf: mount -t tracefs nodev " + kTracing + ")",
                    Exit::refused);
}

} // namespace

TracefsState find_tracefs() {
  // libbpf 1.1 prefers the debugfs path when it exists; either is fine if it works.
  for (const char *dir : {"/sys/kernel/debug/tracing", kTracing}) {
    struct stat st {};
    if (stat((std::string(dir) + "/events").c_str(), &st) != 0) {
      if (errno == EACCES)
        return {dir, "", false};
      continue;
    }
    if (!is_tracefs(dir))
      return {dir, std::string(dir) +
                       " is not tracefs (something else is mounted there); unmount it, or "
                       "mount tracefs: mount -t tracefs nodev " +
                       dir};
    return {dir, ""};
  }
  if (exists("/sys/kernel/debug/tracing"))
    return {"", "/sys/kernel/debug/tracing exists but is empty; libbpf would look there"};
  return {};
}

Tracefs::Tracefs() {
  const TracefsState found = find_tracefs();
  if (!found.problem.empty())
    throw FatalError("tracefs", found.problem, Exit::refused);
  if (!found.dir.empty()) {
    dir_ = found.dir;
    return;
  }
  worker_ = std::thread([this] { serve(); });
  std::unique_lock lk(mu_);
  cv_.wait(lk, [this] { return ready_; });
  if (failed_) {
    const std::exception_ptr e = std::exchange(failed_, nullptr);
    lk.unlock();
    worker_.join();
    std::rethrow_exception(e);
  }
}

Tracefs::~Tracefs() {
  if (!worker_.joinable())
    return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Tracefs::serve() {
  // Mounts made in the new namespace stay in it: its copies of the host's
  // mounts become slaves, which receive mounts and send none back.
  std::exception_ptr err;
  try {
    if (unshare(CLONE_NEWNS) != 0)
      throw mount_failure("making a mount namespace to mount it in", errno);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
      throw mount_failure("keeping a mount of it from the host's mounts", errno);
    if (mount("nodev", kTracing, "tracefs", 0, nullptr) != 0)
      throw mount_failure(std::string("mounting it at ") + kTracing, errno);
    if (!exists(std::string(kTracing) + "/events") || !is_tracefs(kTracing))
      throw FatalError("tracefs", std::string(kTracing) + " has no events/ after mounting it",
                       Exit::refused);
  } catch (...) {
    err = std::current_exception();
  }
  std::unique_lock lk(mu_);
  failed_ = err;
  dir_ = "/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(gettid()) + "/root" +
         kTracing;
  ready_ = true;
  cv_.notify_all();
  if (err)
    return;
  for (;;) {
    cv_.wait(lk, [this] { return stop_ || job_ != nullptr; });
    if (stop_)
      return;
    const std::function<void()> *job = job_;
    lk.unlock();
    std::exception_ptr e;
    try {
      (*job)();
    } catch (...) {
      e = std::current_exception();
    }
    lk.lock();
    failed_ = e;
    job_ = nullptr;
    cv_.notify_all();
  }
}

void Tracefs::run(const std::function<void()> &fn) {
  if (!is_private()) {
    fn();
    return;
  }
  // One job at a time: a second caller waits for the first to finish.
  std::lock_guard one(run_mu_);
  std::unique_lock lk(mu_);
  job_ = &fn;
  cv_.notify_all();
  cv_.wait(lk, [this] { return job_ == nullptr; });
  if (std::exception_ptr e = std::exchange(failed_, nullptr))
    std::rethrow_exception(e);
}

} // namespace shmbpf
