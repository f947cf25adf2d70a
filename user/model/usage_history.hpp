// A bounded history of usage samples (sample_usage), so that growth over
// the last S seconds can be judged at once instead of by watching for S
// seconds: what `shmbpf serve` keeps for /v1/leaks?window=S. Pure: samples
// and their times come from the caller. Not thread-safe; a window it hands
// out shares the samples (immutable) and outlives later changes.
#pragma once

#include "model/leaks.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace shmbpf {

// Who a sample's bytes belong to; one object per subject, shared by every
// sample that has it.
struct UsageSubject {
  std::string what, id, name;
};

// A sample as kept: each subject's bytes, the subject shared.
struct StoredUsage {
  struct Entry {
    std::shared_ptr<const UsageSubject> subject;
    uint64_t bytes = 0;
  };
  uint64_t t_ns = 0;
  std::vector<Entry> entries;
};

struct HistoryLimits {
  // Samples are kept this long (the longest window that can be asked for).
  uint64_t keep_ns = 15 * 60 * uint64_t{1'000'000'000};
  // The memory they may take, as memory_bytes() estimates it. Past it,
  // samples are thinned, older ones more (the spacing grows about
  // geometrically with age); the oldest and the newest stay, so the span
  // is kept and only the resolution falls. Two are kept whatever their size.
  size_t max_bytes = size_t{16} << 20;
};

// The samples of a window, oldest first, and what they span.
struct UsageWindow {
  GrowthWindow span;
  std::vector<std::shared_ptr<const StoredUsage>> samples;
};

class UsageHistory {
public:
  explicit UsageHistory(HistoryLimits limits = {}) : limits_(limits) {}

  // Adds a sample; one not later than the newest is ignored (the caller's
  // clock is monotonic). Then drops what is older than keep_ns (keeping
  // one sample at or before newest - keep_ns, so that a window of keep_ns
  // is covered) and thins what exceeds max_bytes.
  void add(const UsageSample &sample);

  // The samples of the last window_ns: from the newest one at or before
  // newest - window_ns (complete), or from the oldest when the history is
  // shorter than that (not complete).
  UsageWindow window(uint64_t window_ns) const;

  const HistoryLimits &limits() const { return limits_; }
  size_t size() const { return samples_.size(); }
  // Time from the oldest sample to the newest.
  uint64_t span_ns() const;
  // The memory the samples and subjects take, estimated.
  size_t memory_bytes() const { return sample_bytes_ + subject_bytes_; }
  // Distinct subjects held (tests).
  size_t subjects() const { return subjects_.size(); }

private:
  using SubjectPtr = std::shared_ptr<const UsageSubject>;
  struct Key {
    std::string_view what, id, name;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const Key &k) const;
    size_t operator()(const SubjectPtr &s) const { return (*this)(Key{s->what, s->id, s->name}); }
  };
  struct Equal {
    using is_transparent = void;
    static Key key(const Key &k) { return k; }
    static Key key(const SubjectPtr &s) { return {s->what, s->id, s->name}; }
    template <class A, class B> bool operator()(const A &a, const B &b) const {
      const Key x = key(a), y = key(b);
      return x.what == y.what && x.id == y.id && x.name == y.name;
    }
  };

  SubjectPtr intern(const UsageSample::Subject &s);
  static size_t sample_cost(const StoredUsage &s);
  static size_t subject_cost(const UsageSubject &s);
  void drop(size_t index);
  // Forgets subjects that no sample holds any more.
  void sweep();

  HistoryLimits limits_;
  std::deque<std::shared_ptr<const StoredUsage>> samples_;
  std::unordered_set<SubjectPtr, Hash, Equal> subjects_;
  size_t sample_bytes_ = 0;
  size_t subject_bytes_ = 0;
};

// find_growth's rule over a window of the history: subjects in every one
// of its samples whose bytes never fell and rose at least min_rises times.
std::vector<GrowthFinding> find_growth(const UsageWindow &window, uint64_t min_bytes = 1,
                                       size_t min_rises = 2);

} // namespace shmbpf
