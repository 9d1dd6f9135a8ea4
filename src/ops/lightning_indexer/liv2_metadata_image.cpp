#include "ops/lightning_indexer/liv2_metadata_image.h"

#include <algorithm>
#include <climits>

namespace gradkit::ops {
namespace {

constexpr int64_t kCostPerRows = 6;   // per 16 rows of an M block
constexpr int64_t kCostPerKeys = 10;  // per 64 keys of an S2 block
constexpr int64_t kToleranceDivisor = 2;

int64_t blockCost(int64_t rows, int64_t keys) {
  return kCostPerRows * ((rows + 15) / 16) + kCostPerKeys * ((keys + 63) / 64);
}

// The costs of one M row of blocks: all its S2 blocks, the last one, and a full one.
struct RowCost {
  int64_t blocks = 0;
  int64_t cost = 0;
  int64_t lastBlock = 0;
  int64_t fullBlock = 0;
  int64_t s2Begin = 0, s2End = 0;  // its S2 block range (upstream keeps the last range when a row has none)
};

// Query rows per M block (s1Base): 4, or 2 on Ascend950 with G > 32 or topk > 2048; M block rows are s1Base * G.
int64_t queryRowsPerBlock(const LiV2MetadataRequest& r) {
  return r.ascend950 && (r.headsQ / r.headsK > 32 || r.topk > 2048) ? 2 : 4;
}

class Planner {
 public:
  explicit Planner(const LiV2MetadataRequest& r) : r_(r) {
    batch_ = static_cast<int64_t>(r.queryRows.size());
    group_ = r.headsQ / r.headsK;
    s2Base_ = r.ascend950 ? 128 : 2048;
    mBase_ = queryRowsPerBlock(r) * group_;
    rowsPerBatch_.resize(static_cast<size_t>(batch_));
    rowTail_.resize(static_cast<size_t>(batch_));
    keyBlocks_.resize(static_cast<size_t>(batch_));
    batchCost_.assign(static_cast<size_t>(batch_), 0);
    batchBlocks_.assign(static_cast<size_t>(batch_), 0);
    batchLastBlock_.assign(static_cast<size_t>(batch_), 0);
  }

  std::vector<int32_t> image() {
    std::vector<int32_t> words(1024, 0);  // 36 + 72 rows of 8 words used
    splitRows();
    if (allEmpty_) {
      used_ = 1;
      end_.assign(1, {batch_ * r_.headsK, 0, 0});
      firstWorkspace_.assign(1, 0);
    } else {
      costs();
      assignCores();
      if (!fd_.empty()) spreadReductions();
      used_ = std::max<int64_t>(used_, 1);
      // Cores the loop never reached (nothing to assign) keep zero ranges, as upstream's zeroed arrays.
      end_.resize(std::max(end_.size(), static_cast<size_t>(used_)));
      firstWorkspace_.resize(std::max(firstWorkspace_.size(), static_cast<size_t>(used_)), 0);
    }
    for (int64_t core = 0; core < std::min(used_, r_.aicCores); ++core) {
      int32_t* row = words.data() + core * kLiV2MetadataRowWords;
      const Cursor start = core == 0 ? Cursor{} : end_[static_cast<size_t>(core - 1)];
      const Cursor& end = end_[static_cast<size_t>(core)];
      const int64_t fields[8] = {1,       start.bn2, start.m, start.s2,
                                 end.bn2, end.m,     end.s2,  firstWorkspace_[static_cast<size_t>(core)]};
      for (int f = 0; f < 8; ++f) row[f] = static_cast<int32_t>(static_cast<uint32_t>(fields[f]));
    }
    for (size_t v = 0; v < vector_.size() && static_cast<int64_t>(v) < r_.aivCores; ++v) {
      int32_t* row = words.data() + (kLiV2MetadataAicRows + static_cast<int64_t>(v)) * kLiV2MetadataRowWords;
      const Reduction& task = fd_[static_cast<size_t>(vector_[v].task)];
      const int64_t fields[7] = {1, task.bn2, task.m, task.workspace, task.parts, vector_[v].mStart, vector_[v].mCount};
      for (int f = 0; f < 7; ++f) row[f] = static_cast<int32_t>(static_cast<uint32_t>(fields[f]));
    }
    return words;
  }

 private:
  struct Cursor {
    int64_t bn2 = 0, m = 0, s2 = 0;
  };
  struct Reduction {
    int64_t bn2 = 0, m = 0, workspace = 0, parts = 0, rows = 0;
  };
  struct VectorTask {
    int64_t task = 0, mStart = 0, mCount = 0;
  };

  int64_t s1(int64_t b) const { return r_.queryRows[static_cast<size_t>(b)]; }
  int64_t s2(int64_t b) const { return r_.keys[static_cast<size_t>(b)]; }
  int64_t tokens(int64_t b) const {
    return s2(b) * r_.cmpRatio + (r_.residual.empty() ? 0 : r_.residual[static_cast<size_t>(b)]);
  }

  void splitRows() {
    for (int64_t b = 0; b < batch_; ++b) {
      rowsPerBatch_[static_cast<size_t>(b)] = (s1(b) * group_ + mBase_ - 1) / mBase_;
      rowTail_[static_cast<size_t>(b)] = s1(b) * group_ % mBase_;
      keyBlocks_[static_cast<size_t>(b)] = (s2(b) + s2Base_ - 1) / s2Base_;
      if (rowsPerBatch_[static_cast<size_t>(b)] != 0 && keyBlocks_[static_cast<size_t>(b)] != 0) allEmpty_ = false;
    }
  }

  // The S2 blocks of M row `m` of batch b (its S2 tokens seen under the mask, in compressed keys), into `row`, which
  // keeps its old block range when the batch has no blocks (as upstream's cache does).
  void rowCost(int64_t b, int64_t m, RowCost& row) const {
    row.blocks = row.cost = row.lastBlock = row.fullBlock = 0;
    if (rowsPerBatch_[static_cast<size_t>(b)] == 0 || keyBlocks_[static_cast<size_t>(b)] == 0) return;
    const int64_t total = tokens(b);
    int64_t first = 0, last = total;  // every token, and no limit before a row (pre-tokens unbounded)
    if (r_.maskMode == 3) {           // right-down causal: the last token row t sees is t + (tokens - S1)
      const int64_t lastRow = (std::min(m * mBase_ + mBase_, s1(b) * group_) - 1) / group_;
      last = lastRow + (total - s1(b));
    }
    first = std::clamp<int64_t>(first, 0, total - 1);
    last = std::clamp<int64_t>(last, 0, total - 1);
    const int64_t length = (last - first + 1) / r_.cmpRatio;
    row.s2Begin = 0;
    row.s2End = length <= 0 ? 0 : (length + s2Base_ - 1) / s2Base_;
    if (row.s2End <= row.s2Begin) return;
    const int64_t keyTail = length % s2Base_;
    row.blocks = row.s2End - row.s2Begin;
    const int64_t tails = keyTail != 0 ? 1 : 0, fulls = row.blocks - tails;
    const int64_t mTail = rowTail_[static_cast<size_t>(b)];
    const bool tailRow = m == rowsPerBatch_[static_cast<size_t>(b)] - 1 && mTail != 0;
    const int64_t rows = tailRow ? mTail : mBase_;
    const int64_t full = blockCost(rows, s2Base_);
    const int64_t tail = keyTail == 0 ? 0 : blockCost(rows, keyTail);
    row.cost = full * fulls + tail * tails;
    row.lastBlock = tails > 0 ? tail : full;
    row.fullBlock = full;
  }

  void costs() {
    for (int64_t b = 0; b < batch_; ++b) {
      if (s1(b) != 0 && s2(b) != 0) {
        RowCost row;
        for (int64_t m = 0; m < rowsPerBatch_[static_cast<size_t>(b)]; ++m) {
          rowCost(b, m, row);
          batchCost_[static_cast<size_t>(b)] += row.cost;
          batchBlocks_[static_cast<size_t>(b)] += row.blocks;
          if (row.blocks > 0) batchLastBlock_[static_cast<size_t>(b)] = row.lastBlock;
        }
      }
      totalCost_ += batchCost_[static_cast<size_t>(b)] * r_.headsK;
    }
  }

  // Moves the cursor past a finished row or batch (upstream's UpdateCursor).
  void advance() {
    bool newRow = false, newBatch = false;
    if (at_.s2 >= row_.s2End) {
      at_.s2 = 0;
      ++at_.m;
      newRow = true;
    }
    if (at_.m >= rowsPerBatch_[static_cast<size_t>(batchIndex_)]) {
      at_.m = 0;
      ++at_.bn2;
    }
    if (at_.bn2 == batch_ * r_.headsK) {
      at_.m = at_.s2 = 0;
      finished_ = true;
      return;
    }
    if (at_.bn2 / r_.headsK != batchIndex_) {
      batchIndex_ = at_.bn2 / r_.headsK;
      at_.m = 0;
      newBatch = newRow = true;
    }
    if (newBatch) {
      leftInBatch_ = batchCost_[static_cast<size_t>(batchIndex_)];
      blocksInBatch_ = batchBlocks_[static_cast<size_t>(batchIndex_)];
    }
    if (newRow) {
      rowCost(batchIndex_, at_.m, row_);
      at_.s2 = row_.s2Begin;
    }
  }

  bool fits(int64_t tolerance, int64_t cost) const { return limit_ + tolerance >= load_ + cost; }

  void takeBatches() {
    while (!finished_ && (leftInBatch_ == 0 ||
                          fits(batchLastBlock_[static_cast<size_t>(batchIndex_)] / kToleranceDivisor, leftInBatch_))) {
      load_ += leftInBatch_;
      blocks_ += blocksInBatch_;
      if (++at_.bn2 == batch_ * r_.headsK) {
        at_.m = at_.s2 = 0;
        finished_ = true;
        return;
      }
      batchIndex_ = at_.bn2 / r_.headsK;
      leftInBatch_ = batchCost_[static_cast<size_t>(batchIndex_)];
      blocksInBatch_ = batchBlocks_[static_cast<size_t>(batchIndex_)];
      at_.m = 0;
      rowCost(batchIndex_, 0, row_);
      at_.s2 = row_.s2Begin;
    }
  }

  void takeRows() {
    const int64_t rows = rowsPerBatch_[static_cast<size_t>(batchIndex_)];
    while (!finished_ && at_.m < rows && fits(row_.lastBlock / kToleranceDivisor, row_.cost)) {
      load_ += row_.cost;
      blocks_ += row_.blocks;
      leftInBatch_ = std::max<int64_t>(leftInBatch_ - row_.cost, 0);
      blocksInBatch_ = std::max<int64_t>(blocksInBatch_ - row_.blocks, 0);
      do {
        rowCost(batchIndex_, ++at_.m, row_);
      } while (row_.blocks == 0 && at_.m < rows);  // guard: upstream's loop has no bound
      at_.s2 = row_.s2Begin;
    }
  }

  void takeOneBlock(int64_t cost) {
    load_ += cost;
    ++blocks_;
    ++at_.s2;
    leftInBatch_ -= cost;
    --blocksInBatch_;
    row_.cost -= cost;
    --row_.blocks;
  }

  void takeBlocks() {
    if (finished_) return;
    const int64_t cost = at_.s2 == row_.s2End - 1 ? row_.lastBlock : row_.fullBlock;
    if (cost <= 0) return;  // guard
    while (fits(cost / kToleranceDivisor, cost)) takeOneBlock(cost);
  }

  void forceOneBlock() {
    if (finished_) return;
    takeOneBlock(at_.s2 == row_.s2End - 1 ? row_.lastBlock : row_.fullBlock);
    advance();
  }

  void assignCores() {
    leftInBatch_ = batchCost_[0];
    blocksInBatch_ = batchBlocks_[0];
    rowCost(0, 0, row_);
    at_.s2 = row_.s2Begin;
    int64_t unassigned = totalCost_, parts = 1, workspace = 0, core = 0;
    for (int64_t i = 0; i < r_.aicCores; ++i) {
      if (finished_ || unassigned <= 0) break;
      core = i;
      firstWorkspace_.push_back(workspace + parts - 1);
      limit_ = unassigned / (r_.aicCores - core);
      load_ = blocks_ = 0;
      takeBatches();
      takeRows();
      takeBlocks();
      if (blocks_ == 0) forceOneBlock();
      end_.push_back(at_);
      unassigned -= load_;
      // A row the previous core ended in, finished by this one: a reduction over `parts` partial results.
      if (core > 0 && parts > 1 &&
          !(at_.bn2 == end_[static_cast<size_t>(core - 1)].bn2 && at_.m == end_[static_cast<size_t>(core - 1)].m)) {
        const Cursor& cut = end_[static_cast<size_t>(core - 1)];
        const int64_t b = cut.bn2 / r_.headsK;
        const int64_t rows =
            cut.m == rowsPerBatch_[static_cast<size_t>(b)] - 1 ? s1(b) * group_ - cut.m * mBase_ : mBase_;
        fd_.push_back({cut.bn2, cut.m, workspace, parts, rows / group_});
        workspace += parts;
        parts = 1;
      }
      if (at_.s2 > row_.s2Begin && at_.s2 <= row_.s2End) ++parts;
      if (!finished_ && unassigned <= 0) {  // trailing zero-cost batches stay with this core
        end_.back() = {batch_ * r_.headsK, 0, 0};
        finished_ = true;
      }
    }
    used_ = core + 1;
  }

  void spreadReductions() {
    int64_t load = 0;
    for (const Reduction& t : fd_) load += t.parts * t.rows;
    int64_t spare = r_.aivCores - static_cast<int64_t>(fd_.size());
    const int64_t average = std::max<int64_t>((load + r_.aivCores - 1) / r_.aivCores, 1);
    for (size_t i = 0; i < fd_.size(); ++i) {
      const Reduction& t = fd_[i];
      if (spare <= 0) {
        vector_.push_back({static_cast<int64_t>(i), 0, t.rows});
        continue;
      }
      int64_t count = std::max<int64_t>(t.parts * t.rows / average, 1);
      const int64_t each = std::max<int64_t>((t.rows + count - 1) / count, 1);
      count = std::min((t.rows + each - 1) / each, spare + 1);
      for (int64_t v = 0; v < count; ++v) {
        vector_.push_back({static_cast<int64_t>(i), v * each, v < count - 1 ? each : t.rows - v * each});
      }
      spare -= count - 1;
    }
  }

  const LiV2MetadataRequest& r_;
  int64_t batch_ = 0, group_ = 1, mBase_ = 1, s2Base_ = 128;
  std::vector<int64_t> rowsPerBatch_, rowTail_, keyBlocks_, batchCost_, batchBlocks_, batchLastBlock_;
  bool allEmpty_ = true, finished_ = false;
  int64_t totalCost_ = 0;
  // The assignment's state.
  Cursor at_;
  int64_t batchIndex_ = 0, leftInBatch_ = 0, blocksInBatch_ = 0;
  RowCost row_;
  int64_t limit_ = 0, load_ = 0, blocks_ = 0, used_ = 0;
  std::vector<Cursor> end_;
  std::vector<int64_t> firstWorkspace_;
  std::vector<Reduction> fd_;
  std::vector<VectorTask> vector_;
};

}  // namespace

std::vector<int32_t> liv2MetadataImage(const LiV2MetadataRequest& request) { return Planner(request).image(); }

int64_t liv2MetadataRowBlocks(const LiV2MetadataRequest& request) {
  const int64_t rowsPerBlock = queryRowsPerBlock(request);
  int64_t blocks = 0;
  for (int64_t rows : request.queryRows) {
    blocks += (rows + rowsPerBlock - 1) / rowsPerBlock;  // = ceil(rows * G / (rowsPerBlock * G))
    if (blocks > kLiV2MetadataMaxRowBlocks) break;
  }
  return blocks;
}

}  // namespace gradkit::ops
