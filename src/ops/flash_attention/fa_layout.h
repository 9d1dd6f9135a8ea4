// The flash attention size model (spec fag.md 2.4-2.6): what each inputLayout means for the dims and strides of
// query-like and key-like tensors, the sizes a call implies, TND's cumulative sequence ends, the statistics shape and
// the dropout bit count. One description, used by the checks (which add the rules and messages), the plan, the CLI
// suites and, through the Python bindings, gradkit.ops' shape helpers. It knows nothing about aclTensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace gradkit::ops {

enum class FaLayout { BNSD, BSND, BSH, SBH, TND };

/** "BNSD", "BSND", "BSH", "SBH" or "TND". */
const char* faLayoutName(FaLayout layout);

/** The layout named `name`, or nothing for an unknown name. */
std::optional<FaLayout> faLayoutFromName(std::string_view name);

/** The layout's dims in letters, for messages: "[B, N, S, D]", "[B, S, N, D]", "[B, S, N*D]", "[S, B, N*D]", "[T, N,
 * D]". */
const char* faLayoutDims(FaLayout layout);

/** 4 for BNSD / BSND, 3 for BSH / SBH / TND. */
int64_t faLayoutRank(FaLayout layout);

/** BSH / SBH: heads and head dim share one axis H = N * D. */
inline bool faPackedHeads(FaLayout layout) { return layout == FaLayout::BSH || layout == FaLayout::SBH; }

/**
 * One tensor's dims read through the layout: batch (0 for TND), rows (S, or T for TND), heads and the per-head width.
 * BSH / SBH: `heads` is 0 and `width` the packed H until divided by a head count or head dim (the caller knows which).
 */
struct FaAxes {
  int64_t batch = 0, rows = 0, heads = 0, width = 0;
};
FaAxes faAxesOf(FaLayout layout, const std::vector<int64_t>& dims);

/** The sizes a call implies. TND: s1 / s2 are the largest per-batch lengths, seqQ / seqKv the lengths. */
struct FaSizes {
  FaLayout layout = FaLayout::BNSD;
  int64_t b = 0, n1 = 0, n2 = 0, s1 = 0, s2 = 0, d = 0, dv = 0, dRope = 0;
  int64_t t1 = 0, t2 = 0;  // TND: query / key rows
  std::vector<int64_t> seqQ, seqKv;
  bool tnd() const { return layout == FaLayout::TND; }
};

/**
 * The sizes of query, key and value dims (each of faLayoutRank dims) with headNum query heads; TND's batches come
 * from faSetSequenceEnds. Divisions that do not go (packed H not a multiple of a head count) give 0: the checks
 * report those, this only reads.
 */
FaSizes faSizesOf(FaLayout layout, const std::vector<int64_t>& query, const std::vector<int64_t>& key,
                  const std::vector<int64_t>& value, int64_t headNum);

/**
 * TND: the per-batch lengths from the cumulative ends (entries after the last positive one are batches that are not
 * computed: length 0), and b, s1, s2 from them.
 */
void faSetSequenceEnds(const std::vector<int64_t>& queryEnds, const std::vector<int64_t>& keyEnds, FaSizes* sizes);

/** The rope head dim of a queryRope whose last dim is `lastDim` (BSH / SBH: divided by N1; 0 when it does not go). */
int64_t faRopeDim(const FaSizes& s, int64_t lastDim);

/** The dims of a tensor laid out like query (queryRows) or key, with `heads` heads and last dim `lastDim`. */
std::vector<int64_t> faLayoutShape(const FaSizes& s, bool queryRows, int64_t heads, int64_t lastDim);

/** The softmax statistics: [B, N1, S1, 8] (padded) or [T1, N1, 8] (TND). */
std::vector<int64_t> faStatisticsShape(const FaSizes& s);

inline constexpr int64_t kFaMaskTemplate = 2048;    // compressed mask of sparse modes 2, 3, 4, 7, 8
inline constexpr int64_t kFaPrefixMaskRows = 3072;  // compressed mask of sparse mode 6: [3072, 2048]
inline constexpr int64_t kFaAlibiRows = 1024;       // the compressed ALiBi pse [B|1, N1, 1024, S2]

/** The forms of an attenMask (spec 2.7): full masks and the compressed templates. */
enum class FaMaskForm { SS, OneOneSS, B1SS, BNSS, Template, PrefixTemplate };

/** [S1, S2], [1, 1, S1, S2], [B, 1, S1, S2], [B, N1, S1, S2], [2048, 2048], [3072, 2048] (TND: S = largest lengths). */
std::vector<int64_t> faMaskShape(const FaSizes& s, FaMaskForm form);

/** The compressed template a sparse mode's mask is: Template for 2, 3, 4, 7, 8, PrefixTemplate for 6, else nothing. */
std::optional<FaMaskForm> faTemplateMaskOf(int64_t sparseMode);

/** The forms of a pse (spec 2.9): tables of pse types 0 / 1 (full, row- or batch-broadcast, the 1024-row ALiBi
 *  tables) and the slopes of types 2 / 3. */
enum class FaPseForm { BNSS, BN1S, OneNSS, BNHS, OneNHS, BN, N };

/** [B, N1, S1, S2], [B, N1, 1, S2], [1, N1, S1, S2], [B, N1, 1024, S2], [1, N1, 1024, S2], [B, N1], [N1]. */
std::vector<int64_t> faPseShape(const FaSizes& s, FaPseForm form);

/** The form named as spec 2.7 / 2.9 write it ("SS", "11SS", "B1SS", "BNSS"; "BNSS", "BN1S", "1NSS", "BNHS", "1NHS",
 *  "BN", "N"), or nothing. */
std::optional<FaMaskForm> faMaskFormFromName(std::string_view name);
std::optional<FaPseForm> faPseFormFromName(std::string_view name);

/**
 * A tensor's element strides per axis: batch, head, row (sequence position or token) and element within a head, from
 * the tensor's own strides (dims order) and the head dim that splits a packed H. TND has no batch axis (0).
 */
struct FaAxisStrides {
  int64_t batch = 0, head = 0, row = 0, element = 0;
};
FaAxisStrides faAxisStrides(FaLayout layout, const std::vector<int64_t>& strides, int64_t headDim);

/**
 * The keep bits one dropout call draws or reads: B*N1*S1*S2 (TND: N1 * sum S1_b*S2_b), saturated at UINT64_MAX. A
 * packed dropMask holds ceil(count / 8) bytes.
 */
uint64_t faDropoutElements(const FaSizes& s);

/** The bytes of a packed dropMask the kernels read: ceil(faDropoutElements / 8). */
inline uint64_t faDropMaskBytes(const FaSizes& s) {
  const uint64_t bits = faDropoutElements(s);
  return bits / 8 + (bits % 8 != 0 ? 1 : 0);
}

}  // namespace gradkit::ops
