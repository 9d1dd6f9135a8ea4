// Part of mhc_pre_backward_hwy.cpp: the MhcPreBackward segment kernel (gradX and grad_phi of a column segment, in
// register tiles, software-pipelined, with prefetches of the next lines). mhc_pre_backward_hwy.cpp includes it inside
// its per-target namespace after the lane helpers it uses (LoadWide, StoreNarrow, RoundHf32, CpuConvertsBf16 and, on
// AVX-512, StoreRow32); it is not a header of its own. It defines Segment, which that file exports.

// Register blocks of the segment kernel: kRows rows x 2 vectors of accumulators (AVX2 has 16 registers: 12 + 2 + 1;
// AVX-512 32). A strip is two vectors wide: 16 columns of 8 lanes, or on AVX-512 32 columns of 16 lanes (one memory
// line of 16-bit values per row, so that no line is fetched twice). Every column is computed on its own, so the strip
// width does not change the bits. The plan's token block (kTokenBlock, 120) is a multiple of every kRows here, so
// that no row of a block falls into the latency-bound 1-row tiles: change them together.
#if HWY_TARGET == HWY_AVX2 || !HWY_NATIVE_FMA
constexpr size_t kRows = 6;
#else
constexpr size_t kRows = 8;  // 12 (24 accumulators) measured ~3 % slower on Zen 5
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kStrip = 32;
#else
constexpr size_t kStrip = 16;
#endif
static_assert(kStrip <= static_cast<size_t>(kMhcStripColumns), "the plan books xgStrip for kMhcStripColumns");
using DS = hn::CappedTag<float, kStrip / 2>;
// Columns of 16-bit values in one 64-byte memory line: the prefetches ask for whole lines.
constexpr size_t kLineColumns = 32;

/**
 * The memory line after a strip's line of each row, in this segment or past its end in the next block: the tiles
 * prefetch their rows' lines while their fma chains run.
 */
struct Ahead {
  static constexpr int kRegions = MhcPrefetchRows::kRegions;
  const unsigned char* at[kRegions] = {};  // row 0, or null
  size_t ld[kRegions] = {};                // bytes from one row to the next
  bool write[kRegions] = {};
  size_t rows = 0;           // rows that have such a line
  bool stream = false;       // gradX rows of the strip are whole aligned lines, written with streaming stores
  bool bf16Convert = false;  // the CPU has AVX512_BF16's conversion
};

/**
 * What a segment has, fixed at compile time so that the per-element code has no branch and no pointer it does not
 * use: gamma (and its sums), gradXPost, HF32 rounding of xg.
 */
template <bool kHalfIn, bool kGammaIn, bool kPostIn, bool kHf32In>
struct SegmentKind {
  static constexpr bool kHalf = kHalfIn;
  static constexpr bool kGamma = kGammaIn;  // gamma and gammaSum given
  static constexpr bool kPost = kPostIn;    // gradXPost given
  static constexpr bool kHf32 = kHf32In;    // xg rounded to HF32
};

/** The tile's share of the next lines: rows [r0, r0 + kR) of every region Ahead lists. */
template <size_t kR>
HWY_INLINE void PrefetchRows(const Ahead& ahead, size_t r0) {
  for (size_t r = r0; r < r0 + kR && r < ahead.rows; ++r) {
    for (int i = 0; i < Ahead::kRegions; ++i) {
      if (ahead.at[i] == nullptr) continue;
      if (ahead.write[i]) {
        __builtin_prefetch(ahead.at[i] + r * ahead.ld[i], 1, 3);
      } else {
        __builtin_prefetch(ahead.at[i] + r * ahead.ld[i], 0, 3);
      }
    }
  }
}

/**
 * The gradX step of one row of kV vectors of d from segment column c (strip column s), given its dxg: gradX, the
 * gamma sums (in row order) and the strip's xg.
 */
template <class Kind, size_t kV, class D>
HWY_INLINE void GradXRow(D d, const MhcColumnSegment& sg, const Ahead& ahead, size_t row, size_t c, size_t s,
                         const hn::Vec<D> (&dxgRow)[kV]) {
  constexpr bool kHalf = Kind::kHalf;
  const size_t lanes = hn::Lanes(d);
  const auto ldx = static_cast<size_t>(sg.ldx);
  const auto ldGin = static_cast<size_t>(sg.ldGin);
  // On AVX-512 a row of the strip is one memory line of gradX, written whole.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  constexpr bool kWholeLine = kV == 2 && hn::MaxLanes(D()) == 16;
#else
  constexpr bool kWholeLine = false;
#endif
  const auto hPre = hn::Set(d, sg.hPre[row * static_cast<size_t>(sg.ldHPre)]);
  const auto coef = hn::Set(d, sg.rmsCoef[row]);
  hn::Vec<D> sums[kV];
  for (size_t v = 0; v < kV; ++v) {
    const size_t at = row * ldx + c + v * lanes;
    const auto xf = LoadWide<kHalf>(d, sg.x, at);
    const auto dxg = dxgRow[v];
    const auto hin = hn::Mul(LoadWide<kHalf>(d, sg.gin, row * ldGin + c + v * lanes), hPre);
    const auto rms = hn::Mul(xf, coef);
    hn::Vec<D> gamma;
    if constexpr (Kind::kGamma) gamma = hn::LoadU(d, sg.gamma + c + v * lanes);
    auto sum = hn::Add(hn::Add(hin, rms), Kind::kGamma ? hn::Mul(gamma, dxg) : dxg);
    if constexpr (Kind::kPost) sum = hn::Add(sum, LoadWide<kHalf>(d, sg.gradXPost, at));
    if constexpr (Kind::kGamma) {
      float* gammaSum = sg.gammaSum + c + v * lanes;
      hn::StoreU(hn::Add(hn::LoadU(d, gammaSum), hn::Mul(xf, dxg)), d, gammaSum);
    }
    if constexpr (kWholeLine) {
      sums[v] = sum;
    } else {
      StoreNarrow<kHalf>(d, sum, sg.gradX, at);
    }
    auto xg = Kind::kGamma ? hn::Mul(xf, gamma) : xf;
    if constexpr (Kind::kHf32) xg = RoundHf32(d, xg);
    hn::StoreU(xg, d, sg.xgStrip + row * kStrip + s + v * lanes);
  }
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (kWholeLine) {
    StoreRow32<kHalf>(sums[0].raw, sums[1].raw, static_cast<uint16_t*>(sg.gradX) + row * ldx + c, ahead.stream,
                      ahead.bf16Convert);
  }
#else
  (void)sums;
#endif
}

/**
 * Rows [r0, r0 + kR) x kV vectors of d from segment column c (strip column s): dxg = dm . phi in registers, then
 * the gradX step of every row.
 */
template <class Kind, size_t kR, size_t kV, class D>
HWY_INLINE void GradXTile(D d, const MhcColumnSegment& sg, const Ahead& ahead, size_t r0, size_t c, size_t s) {
  const size_t lanes = hn::Lanes(d);
  PrefetchRows<kR>(ahead, r0);
  const auto fusion = static_cast<size_t>(sg.fusion);
  const auto ldPhi = static_cast<size_t>(sg.ldPhi);
  const float* HWY_RESTRICT dm = sg.dm + r0 * fusion;
  const float* HWY_RESTRICT phi = sg.phi + c;
  hn::Vec<D> acc[kR][kV];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::Zero(d);
  }
  for (size_t f = 0; f < fusion; ++f) {
    hn::Vec<D> b[kV];
    for (size_t v = 0; v < kV; ++v) b[v] = hn::LoadU(d, phi + f * ldPhi + v * lanes);
    for (size_t r = 0; r < kR; ++r) {
      const auto a = hn::Set(d, dm[r * fusion + f]);
      for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(a, b[v], acc[r][v]);
    }
  }
  for (size_t r = 0; r < kR; ++r) GradXRow<Kind, kV>(d, sg, ahead, r0 + r, c, s, acc[r]);
}

/** The gradX step of row q of the tile whose dxg waits in `held` (kRows x 2 vectors), the tile's first row r0. */
template <class Kind, class D>
HWY_INLINE void HeldRow(D d, const MhcColumnSegment& sg, const Ahead& ahead, const float* HWY_RESTRICT held, size_t r0,
                        size_t q, size_t c, size_t s) {
  const size_t lanes = hn::Lanes(d);
  const hn::Vec<D> dxg[2] = {hn::Load(d, held + 2 * q * lanes), hn::Load(d, held + (2 * q + 1) * lanes)};
  GradXRow<Kind, 2>(d, sg, ahead, r0 + q, c, s, dxg);
}

/**
 * A software-pipelined kRows x 2 tile: while its dxg multiply-adds run, the gradX steps of the previous tile's rows
 * (their dxg in `held`) run between them, one row per kRows-th of the f loop, so that the element-wise work and its
 * loads overlap the multiply-adds instead of waiting for them (out-of-order execution alone does not reach across
 * a tile: its gradX steps fill the reorder buffer). Its own dxg goes to `held`.
 */
template <class Kind, class D>
HWY_INLINE void GradXTilePiped(D d, const MhcColumnSegment& sg, const Ahead& ahead, size_t r0, size_t c, size_t s,
                               float* HWY_RESTRICT held, bool previous) {
  constexpr size_t kV = 2;
  const size_t lanes = hn::Lanes(d);
  PrefetchRows<kRows>(ahead, r0);
  const auto fusion = static_cast<size_t>(sg.fusion);
  const auto ldPhi = static_cast<size_t>(sg.ldPhi);
  // dm from the plan's tiles: one f's values of the tile's rows side by side, so that one base pointer serves all
  // its rows and registers are left to the gradX steps.
  constexpr auto kTileRows = static_cast<size_t>(kMhcDmTileRows);
  static_assert(kTileRows % kRows == 0, "r0 is a multiple of kRows: a row tile lies inside one dm tile");
  const float* HWY_RESTRICT dm = sg.dmTiles + mhcDmTileIndex(static_cast<int64_t>(r0), 0, sg.fusion);
  const float* HWY_RESTRICT phi = sg.phi + c;
  hn::Vec<D> acc[kRows][kV];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::Zero(d);
  }
  // phi and dm walk on from one part of the f loop to the next: no address is computed anew per part.
  size_t f = 0;
  for (size_t q = 0; q < kRows; ++q) {
    if (previous) HeldRow<Kind>(d, sg, ahead, held, r0 - kRows, q, c, s);
    for (const size_t f1 = (q + 1) * fusion / kRows; f < f1; ++f, phi += ldPhi, dm += kTileRows) {
      hn::Vec<D> b[kV];
      for (size_t v = 0; v < kV; ++v) b[v] = hn::LoadU(d, phi + v * lanes);
      for (size_t r = 0; r < kRows; ++r) {
        const auto a = hn::Set(d, dm[r]);
        for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(a, b[v], acc[r][v]);
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kV; ++v) hn::Store(acc[r][v], d, held + (r * kV + v) * lanes);
  }
}

template <class D>
HWY_INLINE void KahanStore(D d, hn::Vec<D> part, float* sum, float* comp) {
  const auto s = hn::LoadU(d, sum);
  const auto low = hn::LoadU(d, comp);
  const auto y = hn::Sub(part, low);
  const auto t = hn::Add(s, y);
  hn::StoreU(hn::Sub(hn::Sub(t, s), y), d, comp);
  hn::StoreU(t, d, sum);
}

/** grad_phi rows [f0, f0 + kR) x kV vectors of d from segment column c (strip column s), Kahan-added. */
template <size_t kR, size_t kV, class D>
HWY_INLINE void PhiTile(D d, const MhcColumnSegment& sg, size_t f0, size_t c, size_t s) {
  const size_t lanes = hn::Lanes(d);
  const auto fusion = static_cast<size_t>(sg.fusion);
  const auto rows = static_cast<size_t>(sg.rows);
  const float* HWY_RESTRICT dm = sg.dm + f0;
  const float* HWY_RESTRICT xg = sg.xgStrip + s;
  hn::Vec<D> acc[kR][kV];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::Zero(d);
  }
  for (size_t t = 0; t < rows; ++t) {
    hn::Vec<D> b[kV];
    for (size_t v = 0; v < kV; ++v) b[v] = hn::LoadU(d, xg + t * kStrip + v * lanes);
    for (size_t r = 0; r < kR; ++r) {
      const auto a = hn::Set(d, dm[t * fusion + r]);
      for (size_t v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(a, b[v], acc[r][v]);
    }
  }
  const auto ldPhi = static_cast<size_t>(sg.ldPhi);
  for (size_t r = 0; r < kR; ++r) {
    for (size_t v = 0; v < kV; ++v) {
      const size_t at = (f0 + r) * ldPhi + c + v * lanes;
      KahanStore(d, acc[r][v], sg.phiSum + at, sg.phiComp + at);
    }
  }
}

/** Columns [c, c + kV vectors of d) of the segment (strip column s): every row, then every grad_phi row. */
template <class Kind, size_t kV, class D>
HWY_INLINE void SegmentColumns(D d, const MhcColumnSegment& sg, const Ahead& ahead, size_t c, size_t s) {
  const auto rows = static_cast<size_t>(sg.rows);
  const auto fusion = static_cast<size_t>(sg.fusion);
  size_t r = 0;
  if constexpr (kV == 2) {
    HWY_ALIGN float held[kRows * kV * hn::MaxLanes(D())];
    for (; r + kRows <= rows; r += kRows) GradXTilePiped<Kind>(d, sg, ahead, r, c, s, held, r > 0);
    for (size_t q = 0; r > 0 && q < kRows; ++q) HeldRow<Kind>(d, sg, ahead, held, r - kRows, q, c, s);
  } else {
    for (; r + kRows <= rows; r += kRows) GradXTile<Kind, kRows, kV>(d, sg, ahead, r, c, s);
  }
  for (; r < rows; ++r) GradXTile<Kind, 1, kV>(d, sg, ahead, r, c, s);
  size_t f = 0;
  for (; f + kRows <= fusion; f += kRows) PhiTile<kRows, kV>(d, sg, f, c, s);
  for (; f < fusion; ++f) PhiTile<1, kV>(d, sg, f, c, s);
}

/**
 * The lines after segment column c0's line (none on a strip that does not start a line: an earlier one asked);
 * gradX's only when the strip is not streamed (a streaming store needs no line in the cache).
 */
HWY_INLINE Ahead AheadOf(const MhcColumnSegment& sg, size_t c0, bool stream) {
  constexpr size_t kBytes = 2;  // FLOAT16 / BF16
  Ahead ahead;
  if (c0 % kLineColumns != 0) return ahead;
  const size_t col = c0 + kLineColumns;
  const auto cols = static_cast<size_t>(sg.cols);
  if (col < cols) {
    ahead.rows = static_cast<size_t>(sg.rows);
    const auto ldx = static_cast<size_t>(sg.ldx) * kBytes;
    ahead.at[0] = static_cast<const unsigned char*>(sg.x) + col * kBytes, ahead.ld[0] = ldx;
    ahead.at[1] = static_cast<const unsigned char*>(sg.gin) + col * kBytes;
    ahead.ld[1] = static_cast<size_t>(sg.ldGin) * kBytes;
    if (sg.gradXPost != nullptr) ahead.at[2] = static_cast<const unsigned char*>(sg.gradXPost) + col * kBytes;
    ahead.ld[2] = ldx;
    if (!stream) ahead.at[3] = static_cast<const unsigned char*>(sg.gradX) + col * kBytes;
    ahead.ld[3] = ldx;
    ahead.write[3] = true;
    return ahead;
  }
  const MhcPrefetchRows& next = sg.next;
  const auto offset = static_cast<int64_t>((col - cols) * kBytes);
  ahead.rows = static_cast<size_t>(next.rows);
  for (int i = 0; i < Ahead::kRegions; ++i) {
    if (next.at[i] == nullptr || offset >= next.bytes[i] || (stream && next.write[i])) continue;
    ahead.at[i] = next.at[i] + offset;
    ahead.ld[i] = static_cast<size_t>(next.ld[i]);
    ahead.write[i] = next.write[i];
  }
  return ahead;
}

template <class Kind>
void SegmentTyped(const MhcColumnSegment& segment) {
  const MhcColumnSegment sg = segment;  // a local copy: the kernel's stores cannot change it, so it stays in registers
  const DS d;
  const hn::CappedTag<float, 1> d1;
  const size_t lanes = hn::Lanes(d);
  const auto cols = static_cast<size_t>(sg.cols);
  constexpr size_t kBytes = 2;  // FLOAT16 / BF16
  // Streaming stores (AVX-512: a strip row is one line) where every row of a strip starts a line.
  const bool lineRows = kStrip * kBytes == 64 && static_cast<size_t>(sg.ldx) * kBytes % 64 == 0;
  const auto gradXAt = reinterpret_cast<uintptr_t>(sg.gradX);
  const bool bf16Convert = CpuConvertsBf16();
  bool streamed = false;
  for (size_t c0 = 0; c0 < cols; c0 += kStrip) {
    const bool stream = lineRows && c0 + kStrip <= cols && (gradXAt + c0 * kBytes) % 64 == 0;
    streamed = streamed || stream;
    Ahead ahead = AheadOf(sg, c0, stream);
    ahead.stream = stream;
    ahead.bf16Convert = bf16Convert;
    const size_t w = std::min(kStrip, cols - c0);
    size_t s = 0;
    for (; s + 2 * lanes <= w; s += 2 * lanes) SegmentColumns<Kind, 2>(d, sg, ahead, c0 + s, s);
    for (; s + lanes <= w; s += lanes) SegmentColumns<Kind, 1>(d, sg, ahead, c0 + s, s);
    for (; s < w; ++s) SegmentColumns<Kind, 1>(d1, sg, Ahead(), c0 + s, s);
  }
#if HWY_ARCH_X86
  if (streamed) _mm_sfence();  // the streaming stores are weakly ordered: visible before the caller goes on
#endif
}

template <bool kHalf, bool kGamma, bool kPost>
void SegmentWith(const MhcColumnSegment& sg) {
  if (sg.hf32) {
    SegmentTyped<SegmentKind<kHalf, kGamma, kPost, true>>(sg);
  } else {
    SegmentTyped<SegmentKind<kHalf, kGamma, kPost, false>>(sg);
  }
}

template <bool kHalf, bool kGamma>
void SegmentWith(const MhcColumnSegment& sg) {
  if (sg.gradXPost != nullptr) {
    SegmentWith<kHalf, kGamma, true>(sg);
  } else {
    SegmentWith<kHalf, kGamma, false>(sg);
  }
}

template <bool kHalf>
void SegmentWith(const MhcColumnSegment& sg) {
  if (sg.gamma != nullptr) {
    SegmentWith<kHalf, true>(sg);
  } else {
    SegmentWith<kHalf, false>(sg);
  }
}

bool Segment(bool half, const MhcColumnSegment& sg) {
  if (half && !kExactHalf) return false;
  // gamma and its sums come together (the plan gives both or neither); the scalar kernel takes any other mix.
  if ((sg.gamma == nullptr) != (sg.gammaSum == nullptr)) return false;
  if (half) {
    SegmentWith<true>(sg);
  } else {
    SegmentWith<false>(sg);
  }
  return true;
}
