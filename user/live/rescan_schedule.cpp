#include "live/rescan_schedule.hpp"

#include <algorithm>

namespace shmbpf {

std::chrono::steady_clock::duration rescan_gap(std::chrono::steady_clock::duration least,
                                               std::chrono::steady_clock::duration cost,
                                               int share) {
  return std::max(least, cost * share);
}

void RescanSchedule::began(Clock::time_point now, Clock::duration cpu) {
  last_rescan_ = last_sample_ = now;
  rescan_cpu_ = cpu;
}

RescanSchedule::Next RescanSchedule::next(Clock::time_point now, uint64_t lost, bool unlinked_due) {
  // Lost records mean the tables may be wrong in any way: rescan now, but
  // not on every poll of a storm, or rescans would feed the loss.
  const bool loss_due =
      lost != lost_seen_ &&
      now - last_rescan_ >= rescan_gap(periods_.loss_gap, rescan_wall_, kLossShare);
  if (loss_due) {
    lost_seen_ = lost;
    return Next::loss_rescan;
  }
  if (now - last_rescan_ >= rescan_gap(periods_.rescan_every, rescan_cpu_, kIdleShare))
    return Next::rescan;
  // Whoever holds many unlinked files may have closed them unseen.
  if (unlinked_due)
    return Next::unlinked;
  if (now - last_sample_ >= periods_.sample_every) {
    last_sample_ = now;
    return Next::sample;
  }
  return Next::nothing;
}

bool RescanSchedule::resolve_new_cgroups(Clock::time_point now) {
  if (now - last_resolve_ < std::chrono::milliseconds(100))
    return false;
  last_resolve_ = now;
  return true;
}

bool RescanSchedule::resolve_all_cgroups(Clock::time_point now) {
  if (now - last_full_resolve_ < std::chrono::seconds(10))
    return false;
  last_full_resolve_ = now;
  return true;
}

void RescanSchedule::rescanned(Clock::time_point started, Clock::time_point done,
                               Clock::duration cpu) {
  last_rescan_ = done;
  rescan_wall_ = done - started;
  rescan_cpu_ = cpu;
}

} // namespace shmbpf
