// The runner's batch builder: host mirrors and uploaded tensors of a ragged step, slot mapping
// through both groups' page tables, and clear errors for tables that cannot serve the step.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_backend.h"
#include "runner/batch_builder.h"

namespace gs {
namespace {

std::vector<int> download(Backend& be, const Tensor& t) {
  std::vector<int> v(static_cast<size_t>(t.numel()));
  be.copy_to_host(t, v.data());
  return v;
}

// Whether a batch's rows end their sequences' contexts (the wgmma attention kernels then compute
// the rows' positions instead of loading them).
TEST(BatchBuilder, RowsEndTheirContext) {
  AttentionBatch b;
  auto batch = [&](std::vector<int> q_start, std::vector<int> kv_len, std::vector<int> positions) -> const auto& {
    b.num_seqs = int(kv_len.size()), b.num_tokens = int(positions.size());
    b.h_q_start = std::move(q_start), b.h_kv_len = std::move(kv_len), b.h_positions = std::move(positions);
    return b;
  };
  EXPECT_TRUE(rows_end_their_context(batch({0, 3, 4}, {3, 10}, {0, 1, 2, 9})));  // prefill, decode
  EXPECT_TRUE(rows_end_their_context(batch({0, 2, 4}, {7, 2}, {5, 6, 0, 1})));   // chunk over a prefix
  EXPECT_TRUE(rows_end_their_context(batch({0, 0, 1}, {4, 1}, {0})));            // a sequence without rows
  EXPECT_FALSE(rows_end_their_context(batch({0, 2}, {7}, {5, 5})));              // explicit positions
  EXPECT_FALSE(rows_end_their_context(batch({0, 2}, {7}, {4, 5})));              // rows before the end
  EXPECT_FALSE(rows_end_their_context(batch({0, 2}, {5}, {5, 6})));              // rows that write no K/V
  batch({0, 3}, {3}, {0, 1, 2});
  b.h_q_start = {0, 5};  // inconsistent mirrors
  EXPECT_FALSE(rows_end_their_context(b));
  batch({0, 3}, {3}, {});
  b.num_tokens = 3;  // no host positions
  EXPECT_FALSE(rows_end_their_context(b));
}

TEST(BatchBuilder, RaggedStepWithBothGroups) {
  auto be = make_cpu_backend(1);
  const int ps = 4;
  // Sequence 0: 6 cached + 3 new (positions 6..8). Its first sliding page was freed.
  std::vector<int> full0{5, 1, 7}, slide0{-1, 3, 0};
  // Sequence 1: a decode token at position 2 with 2 cached tokens, a vision row (block ids by
  // position).
  std::vector<int> full1{2}, slide1{4};
  const std::vector<int> mm1{-1, -1, 0};
  SequenceStep a, b;
  a.start = 6;
  a.q_len = 3;
  a.page_table[int(KvGroup::Full)] = &full0;
  a.page_table[int(KvGroup::Sliding)] = &slide0;
  b.start = 2;
  b.q_len = 1;
  b.mm_block = &mm1;
  b.page_table[int(KvGroup::Full)] = &full1;
  b.page_table[int(KvGroup::Sliding)] = &slide1;
  AttentionBatch batch = build_attention_batch(*be, {a, b}, ps);

  EXPECT_EQ(batch.num_seqs, 2);
  EXPECT_EQ(batch.num_tokens, 4);
  EXPECT_EQ(batch.max_q_len, 3);
  EXPECT_EQ(batch.max_kv_len, 9);
  EXPECT_EQ(batch.h_positions, (std::vector<int>{6, 7, 8, 2}));
  EXPECT_EQ(batch.h_token_seq, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(batch.h_q_start, (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(batch.h_kv_len, (std::vector<int>{9, 3}));
  EXPECT_EQ(batch.h_mm_block, (std::vector<int>{-1, -1, -1, 0}));
  EXPECT_TRUE(batch.rows_end_context);
  EXPECT_EQ(batch.max_pages[int(KvGroup::Full)], 3);
  EXPECT_EQ(batch.h_page_table[int(KvGroup::Full)], (std::vector<int>{5, 1, 7, 2, -1, -1}));
  EXPECT_EQ(batch.h_page_table[int(KvGroup::Sliding)], (std::vector<int>{-1, 3, 0, 4, -1, -1}));
  // position p -> page_table[p / 4] * 4 + p % 4
  EXPECT_EQ(batch.h_slot_mapping[int(KvGroup::Full)], (std::vector<int>{1 * 4 + 2, 1 * 4 + 3, 7 * 4 + 0, 2 * 4 + 2}));
  EXPECT_EQ(batch.h_slot_mapping[int(KvGroup::Sliding)], (std::vector<int>{3 * 4 + 2, 3 * 4 + 3, 0 * 4 + 0, 4 * 4 + 2}));

  // The device tensors carry the same values.
  EXPECT_EQ(download(*be, batch.positions), batch.h_positions);
  EXPECT_EQ(download(*be, batch.q_start), batch.h_q_start);
  EXPECT_EQ(download(*be, batch.kv_len), batch.h_kv_len);
  EXPECT_EQ(download(*be, batch.mm_block), batch.h_mm_block);
  EXPECT_EQ(download(*be, batch.slot_mapping[int(KvGroup::Sliding)]), batch.h_slot_mapping[int(KvGroup::Sliding)]);
  EXPECT_EQ(batch.page_table[int(KvGroup::Full)].shape, (Shape{2, 3}));
  EXPECT_EQ(download(*be, batch.page_table[int(KvGroup::Full)]), batch.h_page_table[int(KvGroup::Full)]);
}

TEST(BatchBuilder, QOnlyStepWritesNothing) {
  auto be = make_cpu_backend(1);
  std::vector<int> table{0, 1};
  SequenceStep s;
  s.start = 5;
  s.q_len = 2;
  s.write_kv = false;
  s.page_table[0] = s.page_table[1] = &table;
  AttentionBatch b = build_attention_batch(*be, {s}, 4);
  EXPECT_EQ(b.h_kv_len, std::vector<int>{5});
  EXPECT_EQ(b.h_slot_mapping[0], (std::vector<int>{-1, -1}));
  EXPECT_TRUE(b.h_mm_block.empty());
  EXPECT_FALSE(b.mm_block.defined());
  EXPECT_FALSE(b.rows_end_context);  // rows at positions 5, 6 of a 5-key context
}

TEST(BatchBuilder, RejectsTablesThatCannotServeTheStep) {
  auto be = make_cpu_backend(1);
  std::vector<int> short_table{0}, ok{0, 1, 2}, freed_full{-1, 1, 2}, hole{0, -1, 2}, freed_write{0, 1, -1};
  auto step = [&](const std::vector<int>* full, const std::vector<int>* sliding) {
    SequenceStep s;
    s.start = 6;
    s.q_len = 4;  // positions 6..9 on pages 1 and 2 (page size 4)
    s.page_table[int(KvGroup::Full)] = full;
    s.page_table[int(KvGroup::Sliding)] = sliding;
    return build_attention_batch(*be, {s}, 4);
  };
  EXPECT_NO_THROW(step(&ok, &ok));
  EXPECT_NO_THROW(step(&ok, &freed_full));  // sliding pages may be freed from the front
  EXPECT_THROW(step(&short_table, &ok), Error);
  EXPECT_THROW(step(&freed_full, &ok), Error);  // full pages never
  EXPECT_THROW(step(&ok, &hole), Error);        // not from the middle
  EXPECT_THROW(step(&ok, &freed_write), Error); // nor where this step writes
  EXPECT_THROW(build_attention_batch(*be, {}, 0), Error);
}

TEST(LinearPages, GrowsBothTablesInOrder) {
  LinearPages p;
  p.page_size = 4;
  p.ensure(9);
  EXPECT_EQ(p.table[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.table[1], (std::vector<int>{0, 1, 2}));
  p.ensure(10);
  EXPECT_EQ(p.table[0].size(), 3u);
  p.ensure(13);
  EXPECT_EQ(p.table[0], (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace gs
