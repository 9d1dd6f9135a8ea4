// The keys of one query row, in the order the softmax takes them (ori part, then cmp part; smla_semantics.h), as the
// addresses of their D elements: a cursor the forward and backward kernels draw key tiles from. Plain element-wise
// code: the same keys in the same order for every kernel table and thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/sparse_attention/kernels/smla_kernel.h"
#include "ops/sparse_attention/kernels/smla_semantics.h"

namespace gradkit::kernels {

/** Address of row j of batch b in `source` (elements of 2 bytes); row0 = the batch's first row in a TND tensor. */
inline const void* smlaRowAddress(const SmlaKvSource& source, int64_t b, int64_t row0, int64_t j) {
  const auto* base = static_cast<const uint16_t*>(source.data);
  if (source.blockSize > 0) {
    const int64_t block = source.blockTable[b * source.tableColumns + j / source.blockSize];
    return base + block * source.blockStride + (j % source.blockSize) * source.rowStride;
  }
  return base + b * source.batchStride + (row0 + j) * source.rowStride;
}

/** One part (ori or cmp) of a row's keys: a dense range or an index list filtered to a range. */
struct SmlaKeyPart {
  const SmlaKvSource* source = nullptr;
  int64_t batch = 0, row0 = 0;
  SmlaRange range;                // dense: the keys; listed: the keys an entry may name
  const int32_t* list = nullptr;  // listed keys (null: dense)
  int64_t listCount = 0;          // entries read from the list
  int64_t position = 0;           // next key of the range, or next entry of the list
  bool done = false;

  /**
   * Appends up to `max` addresses to rows; returns how many. keys / slots (optional) receive each key's row in the
   * batch and the list entry it came from (-1 for a dense key).
   */
  int64_t draw(const void** rows, int64_t max, int64_t* keys = nullptr, int32_t* slots = nullptr) {
    int64_t n = 0;
    if (list == nullptr) {
      for (; n < max && range.begin + position < range.end; ++position, ++n) {
        rows[n] = smlaRowAddress(*source, batch, row0, range.begin + position);
        if (keys != nullptr) keys[n] = range.begin + position;
        if (slots != nullptr) slots[n] = -1;
      }
      return n;
    }
    while (n < max && !done && position < listCount) {
      const int64_t slot = position++;
      const int64_t key = list[slot];
      if (key < 0) {
        done = true;  // a negative entry ends the list
      } else if (key >= range.begin && key < range.end) {
        if (keys != nullptr) keys[n] = key;
        if (slots != nullptr) slots[n] = static_cast<int32_t>(slot);
        rows[n++] = smlaRowAddress(*source, batch, row0, key);
      }
    }
    return n;
  }
};

/** Where the keys of one draw of SmlaKeyCursor::nextOfOnePart come from. */
struct SmlaKeyTrace {
  bool cmp = false;          // out: the keys are cmp_kv rows (else ori_kv rows)
  bool dense = false;        // out: the keys are the consecutive rows keys[0], keys[0] + 1, ...
  int64_t rowStride = 0;     // out: dense and not paged: elements from one key's address to the next's (else 0)
  int64_t* keys = nullptr;   // [max] in: where each key's row in its batch goes
  int32_t* slots = nullptr;  // [max] in: where each key's list entry goes (-1: dense)
};

/** The keys of query row i of batch b (token = its row in q): ori part, then cmp part. */
class SmlaKeyCursor {
 public:
  SmlaKeyCursor(const SmlaProblem& p, int64_t b, int64_t i, int64_t token) {
    const SmlaBatch& batch = p.batches[static_cast<size_t>(b)];
    ori_ = {&p.ori, b, batch.oriRow0, smlaOriRange(batch.s1, batch.s2, i, p.oriMaskMode, p.oriWinLeft, p.oriWinRight)};
    if (p.oriIndices.data != nullptr) {
      const SmlaIndexList& l = p.oriIndices;
      ori_.list = l.data + token * l.rowStride;
      const int64_t limit = p.oriMaskMode == kSmlaMaskNone && l.lengths != nullptr ? l.lengths[token * l.lengthStride]
                                                                                   : ori_.range.size();
      ori_.listCount = smlaIndicesRead(l.k, limit);
    }
    if (p.hasCmp) {
      const int64_t visible = smlaCmpVisible(batch.s1, batch.c, batch.restored, p.cmpRatio, i, p.cmpMaskMode);
      cmp_ = {&p.cmp, b, batch.cmpRow0, SmlaRange{0, visible}};
      if (p.cmpIndices.data != nullptr) {
        const SmlaIndexList& l = p.cmpIndices;
        cmp_.list = l.data + token * l.rowStride;
        // mode 0: the row's top-k length (or K); mode 3: the visible count, and the top-k length when given
        int64_t limit = p.cmpMaskMode == kSmlaMaskNone ? l.k : visible;
        if (l.lengths != nullptr) limit = std::min<int64_t>(limit, l.lengths[token * l.lengthStride]);
        cmp_.listCount = smlaIndicesRead(l.k, limit);
      }
    } else {
      cmp_.done = true;
      cmp_.range = {};
      cmp_.source = &p.ori;
    }
  }

  /** Fills rows with the addresses of up to `max` next keys; 0 when every key was drawn. */
  int64_t next(const void** rows, int64_t max) {
    int64_t n = ori_.draw(rows, max);
    if (n < max) n += cmp_.draw(rows + n, max - n);
    return n;
  }

  /** Leaves out the ori part (its keys were taken elsewhere: the backward's blocks of rows). */
  void skipOriPart() { ori_.done = true, ori_.position = ori_.list == nullptr ? ori_.range.size() : ori_.listCount; }

  /** Like next, but a draw never mixes the two parts (the backward adds a draw's gradients to one tensor). */
  int64_t nextOfOnePart(const void** rows, int64_t max, SmlaKeyTrace& trace) {
    int64_t n = ori_.draw(rows, max, trace.keys, trace.slots);
    trace.cmp = false;
    trace.dense = ori_.list == nullptr;
    trace.rowStride = trace.dense && ori_.source->blockSize == 0 ? ori_.source->rowStride : 0;
    if (n == 0) {
      n = cmp_.draw(rows, max, trace.keys, trace.slots);
      trace.cmp = true;
      trace.dense = cmp_.list == nullptr;
      trace.rowStride = trace.dense && cmp_.source->blockSize == 0 ? cmp_.source->rowStride : 0;
    }
    return n;
  }

 private:
  SmlaKeyPart ori_, cmp_;
};

}  // namespace gradkit::kernels
