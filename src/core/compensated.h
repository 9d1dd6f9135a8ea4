// Error-free transformations and compensated accumulators, for sums that cancel (compressor, mHC
// reductions). Header-only templates for float and double.
//
// Every routine relies on IEEE round-to-nearest arithmetic evaluated as written: no -ffast-math and
// no FMA contraction (the project builds everything with -ffp-contract=off: C++ compilers contract by
// default). TwoProd uses an explicit std::fma, which is exact by definition.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace gradkit {

/** An unevaluated sum: the exact value is `sum + error`, with |error| <= ulp(sum) / 2. */
template <class T>
struct SumAndError {
  T sum;
  T error;
};

/** Knuth's TwoSum: a + b split exactly into the rounded sum and its rounding error (any a, b). */
template <class T>
inline SumAndError<T> twoSum(T a, T b) {
  static_assert(std::is_floating_point<T>::value, "twoSum needs a floating type");
  const T s = a + b;
  const T bVirtual = s - a;
  const T aVirtual = s - bVirtual;
  return {s, (a - aVirtual) + (b - bVirtual)};
}

/** Dekker's FastTwoSum: as twoSum with three operations, valid only when |a| >= |b| (or a == 0). */
template <class T>
inline SumAndError<T> fastTwoSum(T a, T b) {
  static_assert(std::is_floating_point<T>::value, "fastTwoSum needs a floating type");
  const T s = a + b;
  return {s, b - (s - a)};
}

/** TwoProd: a * b split exactly into the rounded product and its error, via one fused multiply-add. */
template <class T>
inline SumAndError<T> twoProd(T a, T b) {
  static_assert(std::is_floating_point<T>::value, "twoProd needs a floating type");
  const T p = a * b;
  return {p, std::fma(a, b, -p)};
}

/**
 * Dekker's TwoProduct without FMA (Veltkamp split, constant 2^12+1 for float, 2^27+1 for double),
 * as NPU kernels compute it. Exact unless a * b overflows or the split of a huge operand overflows.
 */
template <class T>
inline SumAndError<T> twoProdDekker(T a, T b) {
  static_assert(std::is_floating_point<T>::value, "twoProdDekker needs a floating type");
  constexpr T kSplitter = std::is_same<T, float>::value ? T(4097) : T(134217729);
  const auto split = [](T x, T& hi, T& lo) {
    const T c = kSplitter * x;
    hi = c - (c - x);
    lo = x - hi;
  };
  T aHi, aLo, bHi, bLo;
  split(a, aHi, aLo);
  split(b, bHi, bLo);
  const T p = a * b;
  return {p, aLo * bLo - (((p - aHi * bHi) - aLo * bHi) - aHi * bLo)};
}

/**
 * One step of Kahan's compensated sum: adds x to `sum`, `compensation` holding the negated low part lost so far
 * (the running total is sum - compensation). KahanSum below and the array helpers run this step.
 */
template <class T>
inline void kahanStep(T& sum, T& compensation, T x) {
  const T y = x - compensation;
  const T t = sum + y;
  compensation = (t - sum) - y;
  sum = t;
}

/**
 * Kahan's compensated sum. `compensation` holds the negated low part lost so far, so the running
 * total is value() = sum - compensation. The result is exact to about 2 ulp regardless of n, as
 * long as the terms do not grow far beyond the sum.
 */
template <class T>
class KahanSum {
 public:
  /** Adds x. */
  void add(T x) { kahanStep(sum_, compensation_, x); }
  /**
   * Adds the unevaluated pair hi + lo (e.g. a TwoProd result): lo joins the low part with the
   * correct sign (it is subtracted from the negated compensation), then hi is added.
   */
  void add(const SumAndError<T>& pair) {
    compensation_ -= pair.error;
    add(pair.sum);
  }
  /** The compensated total (the last compensation applied). */
  T value() const { return sum_ - compensation_; }
  /** The running sum without the last compensation (what a kernel that never applies it keeps). */
  T rawSum() const { return sum_; }

 private:
  T sum_ = T(0);
  T compensation_ = T(0);
};

/**
 * Kahan sums kept as two arrays (e.g. per-column sums whose terms arrive block by block): sum[i] += term[i] with
 * compensation comp[i], i < n, in KahanSum's representation.
 */
template <class T>
inline void kahanAddEach(T* sum, T* comp, const T* term, int64_t n) {
  for (int64_t i = 0; i < n; ++i) kahanStep(sum[i], comp[i], term[i]);
}

/** The compensated totals of kahanAddEach's arrays: out[i] = sum[i] - comp[i] (out may be sum). */
template <class T>
inline void kahanTotalEach(T* out, const T* sum, const T* comp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = sum[i] - comp[i];
}

/**
 * Neumaier's improved Kahan sum: also exact when a term is larger than the running sum (e.g. the
 * sum cancels to near zero and a large term arrives), at the price of one compare per term.
 */
template <class T>
class NeumaierSum {
 public:
  /** Adds x. */
  void add(T x) {
    const T t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x)) {
      compensation_ += (sum_ - t) + x;
    } else {
      compensation_ += (x - t) + sum_;
    }
    sum_ = t;
  }
  /** Adds the unevaluated pair hi + lo. */
  void add(const SumAndError<T>& pair) {
    compensation_ += pair.error;
    add(pair.sum);
  }
  /** The compensated total. */
  T value() const { return sum_ + compensation_; }

 private:
  T sum_ = T(0);
  T compensation_ = T(0);
};

}  // namespace gradkit
