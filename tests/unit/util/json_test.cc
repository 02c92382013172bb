#include "xbak/util/json.h"

#include <gtest/gtest.h>

namespace xbak::util {
namespace {

TEST(JsonQuote, EscapesWhatJsonNeedsAndKeepsUtf8) {
  EXPECT_EQ(JsonQuote("plain/name-1"), "\"plain/name-1\"");
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd\\u0009e\"");
  EXPECT_EQ(JsonQuote("h\xc3\xa4user"), "\"h\xc3\xa4user\"");  // UTF-8 as it is
  EXPECT_EQ(JsonQuote(std::string("\x00\x7f", 2)), "\"\\u0000\\u007f\"");
  // Not UTF-8: a lone continuation byte, a cut sequence, an overlong '/', a surrogate.
  EXPECT_EQ(JsonQuote("\x80"), "\"\\u0080\"");
  EXPECT_EQ(JsonQuote("\xc3"), "\"\\u00c3\"");
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\u00c0\\u00af\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");
  EXPECT_EQ(JsonQuote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");
}

}  // namespace
}  // namespace xbak::util
