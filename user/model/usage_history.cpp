#include "model/usage_history.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>

namespace shmbpf {

namespace {

constexpr double kNsPerS = 1'000'000'000.0;
constexpr uint64_t kNsPerSecond = 1'000'000'000;

// A string's heap block, if it has one (past the small-string buffer).
size_t heap_of(const std::string &s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}

} // namespace

size_t UsageHistory::Hash::operator()(const Key &k) const {
  const std::hash<std::string_view> h;
  size_t out = h(k.what);
  for (std::string_view part : {k.id, k.name})
    out = out * 31 + h(part);
  return out;
}

// Estimates, not measurements: the vectors' blocks, the shared pointers'
// control blocks, the set's nodes and buckets, each string's heap block.
size_t UsageHistory::sample_cost(const StoredUsage &s) {
  return sizeof(StoredUsage) + 2 * sizeof(void *) + 16 + // its control block and deque slot
         s.entries.capacity() * sizeof(StoredUsage::Entry);
}

size_t UsageHistory::subject_cost(const UsageSubject &s) {
  return sizeof(UsageSubject) + 16 + 4 * sizeof(void *) + heap_of(s.what) + heap_of(s.id) +
         heap_of(s.name);
}

UsageHistory::SubjectPtr UsageHistory::intern(const UsageSample::Subject &s) {
  if (auto it = subjects_.find(Key{s.what, s.id, s.name}); it != subjects_.end())
    return *it;
  auto p = std::make_shared<const UsageSubject>(UsageSubject{s.what, s.id, s.name});
  subject_bytes_ += subject_cost(*p);
  subjects_.insert(p);
  return p;
}

void UsageHistory::add(const UsageSample &sample) {
  if (!samples_.empty() && sample.t_ns <= samples_.back()->t_ns)
    return;
  auto stored = std::make_shared<StoredUsage>();
  stored->t_ns = sample.t_ns;
  stored->entries.reserve(sample.subjects.size());
  for (const UsageSample::Subject &s : sample.subjects)
    stored->entries.push_back({intern(s), s.bytes});
  sample_bytes_ += sample_cost(*stored);
  samples_.push_back(std::move(stored));

  // Older than needed for the longest window.
  const uint64_t newest = samples_.back()->t_ns;
  const uint64_t horizon = newest - std::min(newest, limits_.keep_ns);
  bool dropped = false;
  while (samples_.size() >= 2 && samples_[1]->t_ns <= horizon) {
    drop(0);
    dropped = true;
  }
  if (dropped)
    sweep();
  // Over the memory bound: drop the sample whose neighbours are closest
  // together for their age (the oldest of equals). The spacing then grows
  // with age, about geometrically: a window of 10 s keeps a second's
  // resolution and one of 15 minutes as many samples as fit, so growth is
  // judged on several samples whatever the window. The oldest and the
  // newest stay.
  while (memory_bytes() > limits_.max_bytes && samples_.size() > 2) {
    size_t best = 1;
    double best_score = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i + 1 < samples_.size(); ++i) {
      const auto gap = static_cast<double>(samples_[i + 1]->t_ns - samples_[i - 1]->t_ns);
      const auto age = static_cast<double>(newest - samples_[i - 1]->t_ns + kNsPerSecond);
      if (gap / age < best_score) {
        best_score = gap / age;
        best = i;
      }
    }
    drop(best);
    sweep();
  }
}

void UsageHistory::drop(size_t index) {
  sample_bytes_ -= std::min(sample_bytes_, sample_cost(*samples_[index]));
  samples_.erase(samples_.begin() + static_cast<std::ptrdiff_t>(index));
}

void UsageHistory::sweep() {
  // Only the set holds it: no sample here, nor any window handed out. Only
  // this object hands out new references, so a count of 1 cannot rise.
  std::erase_if(subjects_, [&](const SubjectPtr &p) {
    if (p.use_count() != 1)
      return false;
    subject_bytes_ -= std::min(subject_bytes_, subject_cost(*p));
    return true;
  });
}

uint64_t UsageHistory::span_ns() const {
  return samples_.empty() ? 0 : samples_.back()->t_ns - samples_.front()->t_ns;
}

UsageWindow UsageHistory::window(uint64_t window_ns) const {
  UsageWindow w;
  w.span.requested_s = static_cast<double>(window_ns) / kNsPerS;
  if (samples_.empty())
    return w;
  const uint64_t newest = samples_.back()->t_ns;
  size_t first = 0;
  if (window_ns <= newest) {
    const uint64_t from = newest - window_ns;
    // The last sample at or before from: the window is covered in full.
    auto after = std::upper_bound(samples_.begin(), samples_.end(), from,
                                  [](uint64_t t, const auto &s) { return t < s->t_ns; });
    if (after != samples_.begin()) {
      first = static_cast<size_t>(after - samples_.begin()) - 1;
      w.span.complete = true;
    }
  }
  w.samples.assign(samples_.begin() + static_cast<std::ptrdiff_t>(first), samples_.end());
  w.span.samples = w.samples.size();
  w.span.covered_s = static_cast<double>(newest - w.samples.front()->t_ns) / kNsPerS;
  return w;
}

std::vector<GrowthFinding> find_growth(const UsageWindow &window, uint64_t min_bytes,
                                       size_t min_rises) {
  std::vector<GrowthFinding> out;
  const auto &samples = window.samples;
  if (samples.size() < 2)
    return out;
  // Subjects are shared: one object per subject in the whole history.
  std::unordered_map<const UsageSubject *, std::vector<uint64_t>> tracks;
  for (const auto &e : samples.front()->entries)
    tracks[e.subject.get()].push_back(e.bytes);
  for (size_t i = 1; i < samples.size(); ++i)
    for (const auto &e : samples[i]->entries) {
      auto it = tracks.find(e.subject.get());
      if (it != tracks.end() && it->second.size() == i) // a duplicate within one sample counts once
        it->second.push_back(e.bytes);
    }
  const double seconds =
      static_cast<double>(samples.back()->t_ns - samples.front()->t_ns) / kNsPerS;
  for (const auto &[subject, bytes] : tracks)
    if (bytes.size() == samples.size() && steady_growth(bytes, min_bytes, min_rises))
      out.push_back(growth_finding(subject->what, subject->id, subject->name, bytes, seconds));
  sort_growth(out);
  return out;
}

} // namespace shmbpf
