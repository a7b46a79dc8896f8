// replace_all: every occurrence, left to right, without searching the inserted text again.
#include "conflux/util/errors.hpp"
#include "conflux/util/replace_all.hpp"

#include <gtest/gtest.h>

namespace replace_all_test {

using namespace conflux;

namespace {

TEST(replace_all, replaces_every_occurrence) {
    EXPECT_EQ(replace_all("a.b.c", ".", "::"), "a::b::c");
    EXPECT_EQ(replace_all("xx", "x", ""), "");
    EXPECT_EQ(replace_all("abc", "z", "y"), "abc");
    EXPECT_EQ(replace_all("", "z", "y"), "");
}

TEST(replace_all, does_not_search_the_inserted_text) {
    EXPECT_EQ(replace_all("aa", "a", "aa"), "aaaa");
    EXPECT_EQ(replace_all("aaa", "aa", "a"), "aa");
}

TEST(replace_all, an_empty_pattern_is_an_internal_error) {
    EXPECT_THROW(replace_all("abc", "", "x"), internal_error);
}

} // namespace

} // namespace replace_all_test
