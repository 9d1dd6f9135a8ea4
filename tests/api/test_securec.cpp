// include/securec.h: the bounds-checked copies CANN's example programs include, with the library's results.
#include <gtest/gtest.h>

#include <cstring>

#include "securec.h"

namespace {

TEST(Securec, CopiesWhatFitsAndRefusesTheRest) {
  char dest[8];
  EXPECT_EQ(memcpy_s(dest, sizeof dest, "abcdefg", 8), EOK);
  EXPECT_STREQ(dest, "abcdefg");
  EXPECT_EQ(memcpy_s(dest, sizeof dest, "abcdefghij", 10), SECUREC_ERANGE);
  EXPECT_EQ(dest[0], '\0');  // cleared
  EXPECT_EQ(memcpy_s(nullptr, 4, "ab", 2), SECUREC_EINVAL);
  EXPECT_EQ(memcpy_s(dest, sizeof dest, nullptr, 2), SECUREC_EINVAL);
  EXPECT_EQ(memcpy_s(dest, sizeof dest, dest + 1, 4), SECUREC_EOVERLAP);
  std::strcpy(dest, "abcdef");
  EXPECT_EQ(memmove_s(dest, sizeof dest, dest + 1, 4), EOK);  // overlap is fine for a move
  EXPECT_EQ(std::memcmp(dest, "bcde", 4), 0);
}

TEST(Securec, SetsAndStrings) {
  unsigned char bytes[4] = {1, 2, 3, 4};
  EXPECT_EQ(memset_s(bytes, sizeof bytes, 0, 2), EOK);
  EXPECT_EQ(bytes[1], 0);
  EXPECT_EQ(bytes[2], 3);
  EXPECT_EQ(memset_s(bytes, sizeof bytes, 7, 9), SECUREC_ERANGE);
  EXPECT_EQ(bytes[3], 7);  // destMax bytes set
  char text[6];
  EXPECT_EQ(strcpy_s(text, sizeof text, "hello"), EOK);
  EXPECT_EQ(strcpy_s(text, sizeof text, "hello!"), SECUREC_ERANGE);
  EXPECT_STREQ(text, "");
  EXPECT_EQ(strncpy_s(text, sizeof text, "abcdefgh", 3), EOK);
  EXPECT_STREQ(text, "abc");
  EXPECT_EQ(strcat_s(text, sizeof text, "de"), EOK);
  EXPECT_STREQ(text, "abcde");
  EXPECT_EQ(strcat_s(text, sizeof text, "f"), SECUREC_ERANGE);
}

}  // namespace
