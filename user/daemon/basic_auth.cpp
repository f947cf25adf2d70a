#include "daemon/basic_auth.hpp"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <cstring>
#include <string>

namespace shmbpf {

namespace {

constexpr std::string_view kBcryptAlphabet =
    "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// Equal in a time that depends on the lengths alone, not on where the
// first difference is.
bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A string that held a secret, overwritten before its memory goes back.
struct Scrubbed {
  std::string text;
  ~Scrubbed() { explicit_bzero(text.data(), text.size()); }
};

} // namespace

bool is_bcrypt_hash(std::string_view hash) {
  // "$2b$10$" then 22 characters of salt and 31 of hash.
  if (hash.size() != 60 || !hash.starts_with("$2") || hash[3] != '$' || hash[6] != '$')
    return false;
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y')
    return false;
  if (hash[4] < '0' || hash[4] > '3' || hash[5] < '0' || hash[5] > '9')
    return false;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  return cost >= 4 && cost <= 31 &&
         hash.find_first_not_of(kBcryptAlphabet, 7) == std::string_view::npos;
}

BasicAuth::BasicAuth(BasicAuthUsers users)
    : users_(std::move(users)), data_(std::make_unique<crypt_data>()) {}

BasicAuth::~BasicAuth() = default;

bool BasicAuth::check(std::string_view user, std::string_view password) {
  if (users_.empty() || password.find('\0') != std::string_view::npos)
    return false;
  auto it = users_.find(user);
  const bool known = it != users_.end();
  // An unknown user is checked against a known one's hash, for the same
  // time, and refused whatever the result.
  const std::string &hash = known ? it->second : users_.begin()->second;
  Scrubbed key{std::string(user)};
  key.text.push_back('\0');
  key.text.append(password);
  key.text.push_back('\0');
  key.text.append(hash);
  Digest digest{};
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key.text.data(), key.text.size(), digest.data()) != 0)
    return false;
  if (known && remembered(digest))
    return true;
  const bool matches = bcrypt_matches(password, hash);
  if (known && matches)
    remember(digest);
  return known && matches;
}

bool BasicAuth::remembered(const Digest &d) {
  std::lock_guard lock(cache_mu_);
  return cache_.count(d) != 0;
}

void BasicAuth::remember(const Digest &d) {
  std::lock_guard lock(cache_mu_);
  if (!cache_.insert(d).second)
    return;
  order_.push_back(d);
  if (order_.size() > kRemembered) {
    cache_.erase(order_.front());
    order_.pop_front();
  }
}

bool BasicAuth::bcrypt_matches(std::string_view password, const std::string &hash) {
  const Scrubbed phrase{std::string(password)};
  std::unique_lock lock(bcrypt_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    busy_.fetch_add(1);
    return false;
  }
  runs_.fetch_add(1);
  const char *out = crypt_r(phrase.text.c_str(), hash.c_str(), data_.get());
  // A failure is NULL or a token that starts with '*', never a hash.
  const bool ok = out && *out != '*' && same_bytes(out, hash);
  explicit_bzero(data_.get(), sizeof(crypt_data)); // the work areas held the password
  return ok;
}

} // namespace shmbpf
