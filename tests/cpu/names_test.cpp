// Every enumeration value has one spelling, and parse inverts to_string.
#include <gtest/gtest.h>
#include <mxq/names.hpp>

#include <set>
#include <string>

namespace {

template <class E>
void expect_round_trip() {
  std::set<std::string> seen;
  for (E v : mxq::AllValues<E>::v) {
    const std::string s = mxq::to_string(v);
    EXPECT_TRUE(seen.insert(s).second) << "duplicate spelling " << s;
    E back{};
    ASSERT_TRUE(mxq::parse(s, &back)) << s;
    EXPECT_EQ(back, v) << s;
    EXPECT_EQ(mxq::names_of<E>().at(s), v);
  }
  EXPECT_EQ(mxq::names_of<E>().size(), seen.size());
  E untouched = mxq::AllValues<E>::v[0];
  EXPECT_FALSE(mxq::parse("no-such-name", &untouched));
  EXPECT_EQ(untouched, mxq::AllValues<E>::v[0]);
  EXPECT_STREQ(mxq::to_string(static_cast<E>(99)), "unknown");
}

TEST(Names, RoundTripEveryEnumeration) {
  expect_round_trip<mxq::DType>();
  expect_round_trip<mxq::Format>();
  expect_round_trip<mxq::ScaleRule>();
  expect_round_trip<mxq::ScaleLayout>();
  expect_round_trip<mxq::Direction>();
  expect_round_trip<mxq::Backend>();
}

TEST(Names, SpellingsOfTheCommandLine) {
  EXPECT_STREQ(mxq::to_string(mxq::Format::mxfp8_e5m2), "mxfp8_e5m2");
  EXPECT_STREQ(mxq::to_string(mxq::Backend::auto_), "auto");
  EXPECT_STREQ(mxq::to_string(mxq::Direction::both), "both");
}

}  // namespace
