// parallelFor: every index exactly once, chunk boundaries independent of the thread count,
// exceptions carried out of the OpenMP region, GRADKIT_NUM_THREADS parsing.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel.h"

namespace {

/** Restores the default thread count when a test ends. */
struct ThreadCountGuard {
  ~ThreadCountGuard() { gradkit::setThreadCount(0); }
};

using Chunks = std::set<std::pair<int64_t, int64_t>>;

Chunks runAndRecord(int64_t n, int64_t grain, std::vector<int>& hits) {
  hits.assign(static_cast<size_t>(n), 0);
  Chunks chunks;
  std::mutex mutex;
  gradkit::parallelFor(n, grain, [&](int64_t begin, int64_t end) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      chunks.insert({begin, end});
    }
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
  });
  return chunks;
}

TEST(Parallel, CoversEveryIndexOnceWithFixedChunks) {
  ThreadCountGuard guard;
  const std::pair<int64_t, int64_t> cases[] = {{0, 4},       {1, 4},       {3, 4},  {4, 4},  {5, 4},  {1000, 7},
                                               {1000, 1000}, {1001, 1000}, {97, 1}, {64, 0}, {10, -3}};
  for (const auto& [n, grain] : cases) {
    // The chunks that the definition prescribes: [k*g, min(n, (k+1)*g)), g = max(grain, 1).
    Chunks expected;
    const int64_t g = grain < 1 ? 1 : grain;
    for (int64_t begin = 0; begin < n; begin += g) expected.insert({begin, std::min(n, begin + g)});
    for (int threads = 1; threads <= 4; ++threads) {
      gradkit::setThreadCount(threads);
      ASSERT_EQ(gradkit::threadCount(), threads);
      std::vector<int> hits;
      const Chunks chunks = runAndRecord(n, grain, hits);
      EXPECT_EQ(chunks, expected) << "n=" << n << " grain=" << grain << " threads=" << threads;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "index " << i;
    }
  }
}

TEST(Parallel, UsesSeveralThreadsWhenAllowed) {
  ThreadCountGuard guard;
  gradkit::setThreadCount(3);
  std::mutex mutex;
  std::set<int> seen;
  gradkit::parallelFor(300, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(omp_get_thread_num());
  });
  // Static schedule over 300 chunks with a team of 3: every member gets work.
  EXPECT_EQ(seen.size(), 3u);
}

TEST(Parallel, NestedCallsRunInline) {
  ThreadCountGuard guard;
  gradkit::setThreadCount(2);
  std::vector<std::atomic<int>> hits(50 * 20);
  gradkit::parallelFor(50, 1, [&](int64_t outerBegin, int64_t outerEnd) {
    for (int64_t o = outerBegin; o < outerEnd; ++o) {
      gradkit::parallelFor(20, 3, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(o * 20 + i)]++;
      });
    }
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(Parallel, ExceptionsAreRethrownAfterTheRegion) {
  ThreadCountGuard guard;
  for (int threads = 1; threads <= 4; ++threads) {
    gradkit::setThreadCount(threads);
    try {
      gradkit::parallelFor(100, 10, [](int64_t begin, int64_t) {
        if (begin == 30) throw std::runtime_error("chunk 3 failed");
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk 3 failed");
    }
  }
  // The pool still works afterwards.
  std::vector<int> hits;
  runAndRecord(100, 10, hits);
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(Parallel, SetThreadCountZeroRestoresDefault) {
  ThreadCountGuard guard;
  const int byDefault = gradkit::threadCount();
  EXPECT_GE(byDefault, 1);
  gradkit::setThreadCount(7);
  EXPECT_EQ(gradkit::threadCount(), 7);
  gradkit::setThreadCount(0);
  EXPECT_EQ(gradkit::threadCount(), byDefault);
}

// The environment is read once per process, so these run in a fresh child ("threadsafe" death
// tests re-execute the binary) and report threadCount() through the exit code.
class ParallelEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ParallelEnvironment, ValidValueIsUsed) {
  EXPECT_EXIT(
      {
        setenv("GRADKIT_NUM_THREADS", "3", 1);
        std::exit(gradkit::threadCount());
      },
      ::testing::ExitedWithCode(3), "");
}

/** Matches a stderr text that holds the GRADKIT_NUM_THREADS warning exactly once. */
class WarnedOnce : public ::testing::MatcherInterface<const std::string&> {
 public:
  bool MatchAndExplain(const std::string& text, ::testing::MatchResultListener*) const override {
    const std::string needle = "ignoring GRADKIT_NUM_THREADS";
    const size_t first = text.find(needle);
    return first != std::string::npos && text.find(needle, first + 1) == std::string::npos;
  }
  void DescribeTo(std::ostream* os) const override { *os << "holds the GRADKIT_NUM_THREADS warning exactly once"; }
};

TEST_F(ParallelEnvironment, InvalidValuesWarnOnceAndFallBack) {
  const int cores = omp_get_num_procs();
  for (const char* bad : {"0", "-2", "abc", "3x", "99999"}) {
    EXPECT_EXIT(
        {
          setenv("GRADKIT_NUM_THREADS", bad, 1);
          const int first = gradkit::threadCount();
          const int second = gradkit::threadCount();  // no second warning
          std::exit(first == second ? first : 100);
        },
        ::testing::ExitedWithCode(cores), ::testing::Matcher<const std::string&>(new WarnedOnce))
        << bad;
  }
}

}  // namespace
