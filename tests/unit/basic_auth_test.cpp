// serve's basic auth (daemon/basic_auth): bcrypt hashes told from other
// text, a right pair let in and remembered, a wrong user or password never
// let in nor remembered, an unknown user paying a bcrypt like a known one.
#include "daemon/basic_auth.hpp"

#include <gtest/gtest.h>

#include <crypt.h>

#include <string>
#include <thread>

namespace shmbpf {
namespace {

// "right horse" at cost 4 (the least bcrypt takes: the tests stay fast),
// written $2y$ as htpasswd writes it.
const std::string kHorse = "$2y$04$/nsNRnrqnccJ3U2ujdARfuzZf7w07NN3u7KRU1HBUuvI7m.WkLWqC";

// A fresh hash of password, made by libxcrypt as an operator's tool would.
std::string bcrypt(const std::string &password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_TRUE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt));
  crypt_data data{};
  const char *out = crypt_r(password.c_str(), salt, &data);
  EXPECT_TRUE(out && *out == '$');
  return out ? out : "";
}

TEST(BcryptHash, TellsAHashFromOtherText) {
  EXPECT_TRUE(is_bcrypt_hash(kHorse));
  EXPECT_TRUE(is_bcrypt_hash(bcrypt("x")));
  std::string b = kHorse;
  b[2] = 'b';
  EXPECT_TRUE(is_bcrypt_hash(b));
  b[2] = 'a';
  EXPECT_TRUE(is_bcrypt_hash(b));
  for (std::string bad :
       {std::string(), std::string("right horse"), kHorse.substr(0, 59), kHorse + "x",
        "$1$" + kHorse.substr(3),     // md5-crypt's prefix
        "$2x$" + kHorse.substr(4),    // the buggy variant
        "$2y$03$" + kHorse.substr(7), // below cost 4
        "$2y$32$" + kHorse.substr(7), // above 31
        "$2y$0a$" + kHorse.substr(7), kHorse.substr(0, 20) + "!" + kHorse.substr(21),
        "$6$saltsalt$" + std::string(48, 'x')}) // sha512-crypt
    EXPECT_FALSE(is_bcrypt_hash(bad)) << bad;
}

TEST(BasicAuth, RightPairInWrongUserOrPasswordOut) {
  BasicAuth auth({{"prometheus", kHorse}, {"grafana", bcrypt("battery staple")}});
  EXPECT_TRUE(auth.check("prometheus", "right horse"));
  EXPECT_TRUE(auth.check("grafana", "battery staple"));
  EXPECT_FALSE(auth.check("prometheus", "battery staple")); // another user's password
  EXPECT_FALSE(auth.check("grafana", "right horse"));
  EXPECT_FALSE(auth.check("prometheus", "right hors"));
  EXPECT_FALSE(auth.check("prometheus", "right horsE"));
  EXPECT_FALSE(auth.check("prometheus", ""));
  EXPECT_FALSE(auth.check("Prometheus", "right horse")); // names are exact
  EXPECT_FALSE(auth.check("", "right horse"));
  EXPECT_FALSE(auth.check("nobody", "right horse")); // the password of a user it is not
  // A NUL would end the password crypt(3) sees: "right horse\0x" is not
  // "right horse".
  EXPECT_FALSE(auth.check("prometheus", std::string("right horse\0x", 13)));
}

TEST(BasicAuth, RemembersRightPairsSoAScrapeCostsNoBcrypt) {
  BasicAuth auth({{"prometheus", kHorse}});
  ASSERT_TRUE(auth.check("prometheus", "right horse"));
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(auth.check("prometheus", "right horse"));
  EXPECT_EQ(auth.bcrypt_runs(), 1u) << "a remembered pair ran bcrypt again";
  // Remembered is the pair, not the user: a wrong password still pays, and
  // is refused, each time.
  EXPECT_FALSE(auth.check("prometheus", "wrong horse"));
  EXPECT_FALSE(auth.check("prometheus", "wrong horse"));
  EXPECT_EQ(auth.bcrypt_runs(), 3u);
}

TEST(BasicAuth, UnknownUserPaysABcryptAndIsNeverLetIn) {
  BasicAuth auth({{"prometheus", kHorse}});
  // Its password is the known user's: checked against that hash for the
  // time it takes, refused whatever the result, and not remembered.
  EXPECT_FALSE(auth.check("mallory", "right horse"));
  EXPECT_FALSE(auth.check("mallory", "right horse"));
  EXPECT_EQ(auth.bcrypt_runs(), 2u);
}

TEST(BasicAuth, ForgetsTheOldestPairWhenFull) {
  BasicAuthUsers users;
  const size_t n = BasicAuth::kRemembered + 1;
  for (size_t i = 0; i < n; ++i)
    users.emplace("user" + std::to_string(i), bcrypt("password" + std::to_string(i)));
  BasicAuth auth(users);
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(auth.check("user" + std::to_string(i), "password" + std::to_string(i)));
  ASSERT_EQ(auth.bcrypt_runs(), n);
  EXPECT_TRUE(auth.check("user" + std::to_string(n - 1), "password" + std::to_string(n - 1)));
  EXPECT_EQ(auth.bcrypt_runs(), n) << "the newest pair was forgotten";
  EXPECT_TRUE(auth.check("user0", "password0"));
  EXPECT_EQ(auth.bcrypt_runs(), n + 1) << "the oldest pair was still remembered";
}

// A wrong pair that comes while a bcrypt runs is refused at once, not
// queued behind it: a client guessing passwords holds one of the server's
// threads, and a remembered pair is still let in meanwhile.
TEST(BasicAuth, APairThatComesWhileABcryptRunsIsRefusedAtOnce) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_TRUE(crypt_gensalt_rn("$2b$", 15, nullptr, 0, salt, sizeof salt)); // a second or more
  crypt_data data{};
  const char *slow = crypt_r("slow", salt, &data);
  ASSERT_TRUE(slow && *slow == '$');
  BasicAuth auth({{"prometheus", kHorse}, {"guesser", slow}});
  ASSERT_TRUE(auth.check("prometheus", "right horse"));
  ASSERT_EQ(auth.bcrypt_runs(), 1u);
  std::thread guess([&] { EXPECT_FALSE(auth.check("guesser", "wrong")); });
  while (auth.bcrypt_runs() < 2)
    std::this_thread::yield();
  EXPECT_FALSE(auth.check("prometheus", "wrong horse"));
  EXPECT_TRUE(auth.check("prometheus", "right horse")); // remembered
  // Refused without a bcrypt of its own (queued, it would have run one
  // once the slow one ended).
  EXPECT_EQ(auth.busy_refusals(), 1u);
  EXPECT_EQ(auth.bcrypt_runs(), 2u);
  guess.join();
  EXPECT_EQ(auth.bcrypt_runs(), 2u);
}

TEST(BasicAuth, NoUsersLetsNobodyIn) {
  BasicAuth auth({});
  EXPECT_FALSE(auth.check("", ""));
  EXPECT_FALSE(auth.check("prometheus", "right horse"));
}

} // namespace
} // namespace shmbpf
