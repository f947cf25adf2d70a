// Basic auth on serve's HTTP port: a user and password checked against
// the bcrypt hashes of --web-config-file with crypt(3) (libxcrypt).
//
// bcrypt is slow on purpose (tens of milliseconds at cost 10), and a
// Prometheus scrapes every few seconds: a pair found right is remembered,
// as the SHA-256 of user, password and hash (never the password), so the
// next scrape costs a hash, not a bcrypt. A wrong pair is never remembered
// and always pays: one bcrypt at a time, and a pair that comes while one
// runs is refused at once rather than queued, so a client guessing
// passwords holds one of the server's threads, never all of them (the
// probes and a remembered Prometheus are answered by the others). An unknown user pays
// the same bcrypt as a known one, so the time of a 401 does not tell which
// users exist.
#pragma once

#include "daemon/web_config.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

struct crypt_data;

namespace shmbpf {

// A bcrypt hash as htpasswd -B and Python's bcrypt write it: $2a$, $2b$
// or $2y$, a cost from 04 to 31, then 53 characters of its base64.
bool is_bcrypt_hash(std::string_view hash);

class BasicAuth {
public:
  // Pairs remembered; the oldest is forgotten first.
  static constexpr size_t kRemembered = 64;

  // users: none empty, each hash is_bcrypt_hash (WebConfigSetting::parse).
  explicit BasicAuth(BasicAuthUsers users);
  ~BasicAuth();
  BasicAuth(const BasicAuth &) = delete;
  BasicAuth &operator=(const BasicAuth &) = delete;

  // True when password is user's; false too, without checking, when a
  // bcrypt is running for another request. Safe from any thread.
  bool check(std::string_view user, std::string_view password);
  // How many times bcrypt ran: for tests of what is remembered.
  uint64_t bcrypt_runs() const { return runs_.load(); }
  // How many pairs were refused because a bcrypt was running.
  uint64_t busy_refusals() const { return busy_.load(); }

private:
  using Digest = std::array<unsigned char, 32>;
  bool remembered(const Digest &d);
  void remember(const Digest &d);
  bool bcrypt_matches(std::string_view password, const std::string &hash);

  BasicAuthUsers users_;
  std::mutex cache_mu_;
  std::set<Digest> cache_;
  std::deque<Digest> order_; // cache_'s entries, oldest first
  std::mutex bcrypt_mu_;     // guards data_: one bcrypt at a time
  std::unique_ptr<crypt_data> data_;
  std::atomic<uint64_t> runs_{0};
  std::atomic<uint64_t> busy_{0};
};

} // namespace shmbpf
