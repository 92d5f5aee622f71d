#include "runner/batch_builder.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

namespace {

Tensor upload_i32(Backend& backend, const std::vector<int>& host) {
  if (host.empty()) return Tensor{};
  Tensor t = backend.empty(DType::I32, Shape{int64_t(host.size())});
  backend.copy_from_host(t, host.data());
  return t;
}

// A sequence's page table for group g must cover every position it has after this step. Pages may
// be -1 (freed) only before the first page still held: a sliding window drops pages from the
// front, never from the middle. The kernels check the window itself.
void check_page_table(int seq, int group, const std::vector<int>& table, int kv_len, int page_size) {
  const int needed = (kv_len + page_size - 1) / page_size;
  GS_CHECK(int(table.size()) >= needed,
           "batch: sequence {} has {} tokens but its {} page table covers only {} pages of {} tokens", seq, kv_len,
           group == int(KvGroup::Full) ? "full" : "sliding", table.size(), page_size);
  bool held = false;
  for (int i = 0; i < needed; ++i) {
    if (table[size_t(i)] >= 0) {
      held = true;
    } else {
      GS_CHECK(!held && group == int(KvGroup::Sliding),
               "batch: sequence {} has no page for logical page {} of its {} page table (only the oldest sliding "
               "pages may be freed)",
               seq, i, group == int(KvGroup::Full) ? "full" : "sliding");
    }
  }
}

}  // namespace

AttentionBatch build_attention_batch(Backend& backend, const std::vector<SequenceStep>& seqs, int page_size) {
  GS_CHECK(page_size > 0, "batch: page size {} must be positive", page_size);
  AttentionBatch b;
  b.num_seqs = int(seqs.size());
  b.page_size = page_size;
  // The vision overlay's block ids are uploaded only for steps with an image row.
  bool any_mm = false;
  for (const SequenceStep& st : seqs)
    for (int i = 0; i < st.q_len && !any_mm; ++i) any_mm = st.mm_block_of_row(i) >= 0;

  b.h_q_start.push_back(0);
  for (int s = 0; s < b.num_seqs; ++s) {
    const SequenceStep& st = seqs[size_t(s)];
    GS_CHECK(st.start >= 0 && st.q_len >= 0, "batch: sequence {} starts at {} with {} new tokens", s, st.start,
             st.q_len);
    const int kv_len = st.kv_len();
    GS_CHECK(st.position_shift == 0 || !st.write_kv, "batch: sequence {} shifts the positions of rows it writes", s);
    for (int i = 0; i < st.q_len; ++i) {
      const int pos = st.start + i + st.position_shift;
      GS_CHECK(pos >= 0, "batch: sequence {} row {} has position {}", s, i, pos);
      b.h_positions.push_back(pos);
      b.h_token_seq.push_back(s);
      if (any_mm) b.h_mm_block.push_back(st.mm_block_of_row(i));
    }
    b.h_q_start.push_back(b.h_q_start.back() + st.q_len);
    b.h_kv_len.push_back(kv_len);
    b.max_q_len = std::max(b.max_q_len, st.q_len);
    b.max_kv_len = std::max(b.max_kv_len, kv_len);
    for (int g = 0; g < kNumKvGroups; ++g) {
      if (st.page_table[g]) {
        check_page_table(s, g, *st.page_table[g], kv_len, page_size);
        b.max_pages[g] = std::max(b.max_pages[g], int(st.page_table[g]->size()));
      }
    }
  }
  b.num_tokens = int(b.h_positions.size());

  for (int g = 0; g < kNumKvGroups; ++g) {
    const int mp = b.max_pages[g];
    b.h_page_table[g].assign(size_t(b.num_seqs) * mp, -1);
    b.h_slot_mapping[g].assign(size_t(b.num_tokens), -1);
    for (int s = 0; s < b.num_seqs; ++s) {
      const SequenceStep& st = seqs[size_t(s)];
      const std::vector<int>* table = st.page_table[g];
      if (!table) continue;
      std::copy(table->begin(), table->end(), b.h_page_table[g].begin() + size_t(s) * mp);
      if (!st.write_kv) continue;
      for (int r = b.h_q_start[size_t(s)]; r < b.h_q_start[size_t(s) + 1]; ++r) {
        const int pos = b.h_positions[size_t(r)];
        const int lp = pos / page_size;
        GS_CHECK(lp < int(table->size()) && (*table)[size_t(lp)] >= 0,
                 "batch: sequence {} writes position {} but holds no {} page for it", s, pos,
                 g == int(KvGroup::Full) ? "full" : "sliding");
        b.h_slot_mapping[g][size_t(r)] = (*table)[size_t(lp)] * page_size + pos % page_size;
      }
    }
  }

  b.rows_end_context = rows_end_their_context(b);
  b.positions = upload_i32(backend, b.h_positions);
  b.token_seq = upload_i32(backend, b.h_token_seq);
  b.q_start = upload_i32(backend, b.h_q_start);
  b.kv_len = upload_i32(backend, b.h_kv_len);
  if (any_mm) b.mm_block = upload_i32(backend, b.h_mm_block);
  for (int g = 0; g < kNumKvGroups; ++g) {
    b.page_table[g] = upload_i32(backend, b.h_page_table[g]);
    if (b.page_table[g].defined()) b.page_table[g] = b.page_table[g].view(Shape{b.num_seqs, b.max_pages[g]});
    b.slot_mapping[g] = upload_i32(backend, b.h_slot_mapping[g]);
  }
  return b;
}

void LinearPages::ensure(int num_tokens) {
  for (int g = 0; g < kNumKvGroups; ++g)
    while (int64_t(table[g].size()) * page_size < num_tokens) table[g].push_back(next_page[g]++);
}

bool rows_end_their_context(const AttentionBatch& b) {
  if (int(b.h_positions.size()) != b.num_tokens || int(b.h_q_start.size()) != b.num_seqs + 1 ||
      int(b.h_kv_len.size()) != b.num_seqs)
    return false;
  for (int s = 0; s < b.num_seqs; ++s) {
    const int q0 = b.h_q_start[size_t(s)], q1 = b.h_q_start[size_t(s) + 1];
    if (q0 < 0 || q1 < q0 || q1 > b.num_tokens) return false;
    const int first = b.h_kv_len[size_t(s)] - (q1 - q0);
    for (int t = q0; t < q1; ++t)
      if (b.h_positions[size_t(t)] != first + (t - q0)) return false;
  }
  return true;
}

}  // namespace gs
