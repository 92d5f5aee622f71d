// What forward() returns besides logits: the final-normed hidden rows (the MTP drafter's input)
// must be exactly what the tied LM head multiplied; and misuse is a clear error.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "golden.h"
#include "runner/batch_builder.h"

namespace gs::test {
namespace {

TEST(ForwardOutput, HiddenRowsAreWhatTheLmHeadSaw) {
  LoadedModel m = load_cpu_model("k_eq_v");
  Gemma4Model& model = *m.model;
  Backend& be = *m.backend;
  const ModelConfig& cfg = model.config();
  const Golden g = load_golden("k_eq_v");
  const int T = 24, H = cfg.hidden_size, V = cfg.vocab_size;
  model.reserve(T, 3);

  LinearPages pages;
  pages.page_size = 8;
  pages.ensure(T);
  const int num_pages[kNumKvGroups] = {int(pages.table[0].size()), int(pages.table[1].size())};
  KvCache cache = be.allocate_kv_cache(cfg.kv_layout(), pages.page_size, num_pages);
  SequenceStep st;
  st.q_len = T;
  st.page_table[0] = &pages.table[0];
  st.page_table[1] = &pages.table[1];
  AttentionBatch batch = build_attention_batch(be, {st}, pages.page_size);
  Tensor ids = be.empty(DType::I32, Shape{T});
  be.copy_from_host(ids, g.tokens.data());
  const std::vector<int> rows{T - 1, 0, 11};
  Tensor rows_t = be.empty(DType::I32, Shape{3});
  be.copy_from_host(rows_t, rows.data());

  ForwardOutput out = model.forward(ids, batch, cache, rows_t);
  ASSERT_EQ(out.hidden.shape, (Shape{3, H}));
  ASSERT_EQ(out.logits.shape, (Shape{3, V}));
  std::vector<float> hidden(size_t(3) * H), logits(size_t(3) * V), embed(size_t(V) * H);
  be.copy_to_host(out.hidden, hidden.data());
  be.copy_to_host(out.logits, logits.data());
  convert_to_f32(model.weights().embed.dtype, model.weights().embed.data, embed.data(), embed.size());
  const float cap = cfg.final_logit_softcap;
  for (int r = 0; r < 3; ++r) {
    for (int v = 0; v < V; v += 7) {
      double dot = 0;
      for (int i = 0; i < H; ++i) dot += double(hidden[size_t(r) * H + i]) * embed[size_t(v) * H + i];
      const double want = cap > 0 ? cap * std::tanh(dot / cap) : dot;
      EXPECT_NEAR(logits[size_t(r) * V + v], want, 1e-4) << "row " << r << " token " << v;
    }
    // The requested rows, in the requested order: they match the golden prefill of those positions.
    for (int v = 0; v < V; v += 13)
      EXPECT_NEAR(logits[size_t(r) * V + v], g.logits[size_t(rows[size_t(r)]) * V + v], 2e-3);
  }

  // Too many rows for what was reserved, and a batch that disagrees with the ids.
  Tensor four = be.empty(DType::I32, Shape{4});
  be.copy_from_host(four, std::vector<int>{0, 1, 2, 3}.data());
  EXPECT_THROW(model.forward(ids, batch, cache, four), Error);
  Tensor short_ids = ids.slice(0, T - 1);
  EXPECT_THROW(model.forward(short_ids, batch, cache, rows_t), Error);
}

TEST(ForwardOutput, ForwardBeforeReserveIsAnError) {
  LoadedModel m = load_cpu_model("dense");
  AttentionBatch empty;
  KvCache cache;
  Tensor ids = m.backend->empty(DType::I32, Shape{0});
  EXPECT_THROW(m.model->forward(ids, empty, cache, ids), Error);
}

TEST(ForwardOutput, WeightsThatDisagreeWithTheConfigAreRejected) {
  LoadedModel m = load_cpu_model("dense");
  ModelWeights w = m.model->weights();
  w.layers[1].o_proj = w.layers[0].qkv;  // wrong shape
  try {
    Gemma4Model bad(m.model->config(), w, *m.backend);
    FAIL() << "a misshapen weight must be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.1.self_attn.o_proj"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gs::test
