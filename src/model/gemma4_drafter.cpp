#include "model/gemma4_drafter.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "model/gemma4_blocks.h"

namespace gs {

struct Gemma4Drafter::Workspace : Gemma4Workspace {
  Tensor e;            // [R, Ht] the target's scaled embedding of each row's token
  Tensor z;            // [R, Hd] pre_projection of the hidden half
  Tensor next_hidden;  // [R, Ht]
  Tensor centroid_scores;  // f32 [R, num_centroids]
  Tensor draft_ids, draft_logprobs;  // i32 / f32 [R]: argmax()'s sampler outputs
  std::vector<int> token_ordering;  // the centroid head's clusters on the host: [num_centroids, V / num_centroids]
};

namespace {

void expect_shape(const Tensor& t, Shape s, const std::string& what) {
  GS_CHECK(t.defined(), "drafter: weight {} is missing", what);
  GS_CHECK(t.shape == s, "drafter: weight {} has shape {}, the config implies {}", what, t.shape.str(), s.str());
}

}  // namespace

DraftConvention parse_draft_convention(const std::string& s) {
  if (s == "transformers") return DraftConvention::Transformers;
  if (s == "vllm") return DraftConvention::Vllm;
  throw Error("--speculative-convention '{}' is not one of transformers, vllm", s);
}

Gemma4Drafter::Gemma4Drafter(ModelConfig cfg, ModelWeights weights, const Gemma4Model& target, Backend& backend,
                             DraftConvention convention)
    : cfg_(std::move(cfg)), convention_(convention), w_(std::move(weights)), target_(target), be_(backend) {
  const ModelConfig& t = target.config();
  GS_CHECK(cfg_.is_assistant, "drafter: {} is not an MTP assistant", cfg_.architecture);
  GS_CHECK(cfg_.backbone_hidden_size == t.hidden_size,
           "drafter: the assistant's backbone_hidden_size {} is not the target's hidden size {}",
           cfg_.backbone_hidden_size, t.hidden_size);
  GS_CHECK(!cfg_.layers.empty() && int(w_.layers.size()) == cfg_.num_layers, "drafter: {} layer weights for {} layers",
           w_.layers.size(), cfg_.num_layers);
  for (const LayerSpec& s : cfg_.layers)
    GS_CHECK(!s.owns_kv && s.kv_slot >= 0, "drafter: the assistant's layers are not bound to the target's caches "
             "(ModelConfig::bind_assistant_to)");
  const int64_t H = cfg_.hidden_size, Ht = t.hidden_size;
  expect_shape(w_.embed, Shape{cfg_.vocab_size, H}, "embed_tokens (the head)");
  expect_shape(w_.pre_projection_embed, Shape{H, Ht}, "pre_projection (embedding half)");
  expect_shape(w_.pre_projection_hidden, Shape{H, Ht}, "pre_projection (hidden half)");
  expect_shape(w_.post_projection, Shape{Ht, H}, "post_projection");
  GS_CHECK(cfg_.vocab_size == t.vocab_size, "drafter: vocabulary {} differs from the target's {}", cfg_.vocab_size,
           t.vocab_size);
  if (cfg_.use_ordered_embeddings) {
    expect_shape(w_.centroids, Shape{cfg_.num_centroids, H}, "masked_embedding.centroids");
    GS_CHECK(cfg_.centroid_top_k <= cfg_.num_centroids, "drafter: centroid_intermediate_top_k {} > num_centroids {}",
             cfg_.centroid_top_k, cfg_.num_centroids);
  }
  // transformers' drafter masks its sliding layers with a bidirectional window flipped onto the past:
  // the last W+1 target keys, i.e. the causal rule with window W+2 for a query one past the cache.
  if (convention_ == DraftConvention::Transformers)
    for (LayerSpec& s : cfg_.layers)
      if (s.type == LayerType::Sliding) s.sliding_window += 2;
}

void Gemma4Drafter::reserve(int max_rows) {
  GS_CHECK(max_rows > 0, "drafter: reserve({}) needs a positive row count", max_rows);
  auto ws = std::make_shared<Workspace>();
  ws->max_tokens = ws->max_logit_rows = max_rows;
  const DType act = be_.activation_dtype();
  const int64_t R = max_rows, H = cfg_.hidden_size, Ht = target_.config().hidden_size;
  int64_t q_width = 0, inter = 0;
  for (const LayerWeights& l : w_.layers) {
    q_width = std::max(q_width, l.o_proj.dim(1));
    inter = std::max(inter, l.down.dim(1));
  }
  ws->x = be_.empty(act, Shape{R, H});
  ws->a = be_.empty(act, Shape{R, H});
  ws->o = be_.empty(act, Shape{R, H});
  ws->qkv = be_.empty(act, Shape{R, q_width});  // Q-only layers: the projection is the queries
  ws->q = be_.empty(act, Shape{R, q_width});
  ws->attn = be_.empty(act, Shape{R, q_width});
  ws->gate_up = be_.empty(act, Shape{R, 2 * inter});
  ws->act = be_.empty(act, Shape{R, inter});
  ws->hidden = be_.empty(act, Shape{R, H});
  ws->logits = be_.empty(DType::F32, Shape{R, cfg_.vocab_size});
  ws->e = be_.empty(act, Shape{R, Ht});
  ws->z = be_.empty(act, Shape{R, H});
  ws->next_hidden = be_.empty(act, Shape{R, Ht});
  ws->draft_ids = be_.empty(DType::I32, Shape{R});
  ws->draft_logprobs = be_.empty(DType::F32, Shape{R});
  if (cfg_.use_ordered_embeddings) {
    ws->centroid_scores = be_.empty(DType::F32, Shape{R, cfg_.num_centroids});
    ws->token_ordering.resize(size_t(cfg_.vocab_size));
    be_.copy_to_host(w_.token_ordering, ws->token_ordering.data());
  }
  ws_ = std::move(ws);
}

Tensor Gemma4Drafter::trunk(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch,
                             KvCache& target_cache, Tensor& next_hidden) {
  GS_CHECK(ws_, "drafter: step() before reserve()");
  Workspace& ws = *ws_;
  const ModelConfig& t = target_.config();
  const int R = int(ids.numel());
  const int64_t H = cfg_.hidden_size, Ht = t.hidden_size;
  GS_CHECK(R > 0 && R <= ws.max_tokens, "drafter: {} rows in one step, reserved for {}", R, ws.max_tokens);
  GS_CHECK(batch.num_tokens == R && batch.num_seqs == R, "drafter: a batch of {} rows / {} sequences for {} ids",
           batch.num_tokens, batch.num_seqs, R);
  GS_CHECK(hidden.rows() == R && hidden.cols() == Ht, "drafter: hidden {} must be [{}, {}]", hidden.str(), R, Ht);

  // z = pre_projection([E_target[t] · sqrt(Ht), h]) as two products over the weight's halves.
  Tensor e = rows_of(ws.e, R, Ht), x = rows_of(ws.x, R, H), z = rows_of(ws.z, R, H);
  be_.embedding(target_.weights().embed, ids, round_to(be_.activation_dtype(), t.embed_scale()), e);
  be_.matmul(e, w_.pre_projection_embed, x);
  be_.matmul(hidden, w_.pre_projection_hidden, z);
  be_.add(x, z, x);

  // The trunk: ordinary decoder layers whose attention is Q-only over the target's caches.
  be_.rms_norm(x, &w_.layers[0].input_norm, cfg_.rms_norm_eps, rows_of(ws.a, R, H));
  for (int i = 0; i < cfg_.num_layers; ++i) {
    const LayerWeights& lw = w_.layers[size_t(i)];
    const Tensor* next_input_norm = i + 1 < cfg_.num_layers ? &w_.layers[size_t(i) + 1].input_norm : nullptr;
    attention_block(be_, cfg_, i, lw, ws, batch, target_cache, R);
    ffn_block(be_, cfg_, i, lw, ws, R, lw.layer_scalar, next_input_norm);
  }

  Tensor d = rows_of(ws.hidden, R, H);
  be_.rms_norm(x, &w_.final_norm, cfg_.rms_norm_eps, d);
  next_hidden = rows_of(ws.next_hidden, R, Ht);
  be_.matmul(d, w_.post_projection, next_hidden);
  return d;
}

DraftStepOutput Gemma4Drafter::step(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch,
                                    KvCache& target_cache) {
  DraftStepOutput out;
  const Tensor d = trunk(ids, hidden, batch, target_cache, out.next_hidden);
  const int R = int(d.rows());
  // The head: the drafter's own (tied) embedding table, no soft-cap (transformers applies none).
  out.logits = rows_of(ws_->logits, R, cfg_.vocab_size);
  be_.matmul(d, w_.embed, out.logits);
  if (cfg_.use_ordered_embeddings) {
    Tensor scores = rows_of(ws_->centroid_scores, R, cfg_.num_centroids);
    be_.matmul(d, w_.centroids, scores);
    mask_to_top_clusters(scores, out.logits);
  }
  return out;
}

Tensor Gemma4Drafter::greedy_step(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch,
                                  KvCache& target_cache, const Tensor& out_ids) {
  Tensor next_hidden;
  const Tensor d = trunk(ids, hidden, batch, target_cache, next_hidden);
  const int R = int(d.rows());
  GS_CHECK(out_ids.dtype == DType::I32 && out_ids.numel() == R, "drafter: out_ids {} for {} rows", out_ids.str(), R);
  if (cfg_.use_ordered_embeddings) {
    // Only the chosen clusters' tokens are scored: top_k · V/C rows of the table instead of V.
    Tensor scores = rows_of(ws_->centroid_scores, R, cfg_.num_centroids);
    be_.matmul(d, w_.centroids, scores);
    be_.centroid_head_argmax(d, w_.embed, scores, w_.token_ordering, cfg_.centroid_top_k, out_ids);
  } else {
    Tensor logits = rows_of(ws_->logits, R, cfg_.vocab_size);
    be_.matmul(d, w_.embed, logits);
    be_.argmax_rows(logits, out_ids);
  }
  return next_hidden;
}

// On the host for now (the `draft` tool and the parity tests); the serving loop's drafts need it on
// the device. A cluster's tokens are row c of token_ordering viewed as [num_centroids, V / C].
void Gemma4Drafter::mask_to_top_clusters(const Tensor& centroid_scores, const Tensor& logits) {
  const int R = int(logits.rows()), V = cfg_.vocab_size, C = cfg_.num_centroids, per = V / C;
  std::vector<float> scores(size_t(R) * C), lg(size_t(R) * V);
  be_.copy_to_host(centroid_scores, scores.data());
  be_.copy_to_host(logits, lg.data());
  std::vector<int> order(static_cast<size_t>(C));
  std::vector<char> keep(static_cast<size_t>(V));
  for (int r = 0; r < R; ++r) {
    const float* s = scores.data() + size_t(r) * C;
    std::iota(order.begin(), order.end(), 0);
    // The best clusters, ties to the lower index (torch.topk's choice among equal scores is unspecified).
    std::partial_sort(order.begin(), order.begin() + cfg_.centroid_top_k, order.end(),
                      [&](int a, int b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
    std::fill(keep.begin(), keep.end(), 0);
    float* row = lg.data() + size_t(r) * V;
    float lowest = std::numeric_limits<float>::infinity();
    for (int k = 0; k < cfg_.centroid_top_k; ++k)
      for (int j = 0; j < per; ++j) {
        const int tok = ws_->token_ordering[size_t(order[size_t(k)]) * per + j];
        keep[size_t(tok)] = 1;
        lowest = std::min(lowest, row[tok]);
      }
    // transformers fills with the smallest kept score of the whole batch minus 1; per row keeps a
    // row's result independent of its batch (the same value at one row).
    for (int v = 0; v < V; ++v)
      if (!keep[size_t(v)]) row[v] = lowest - 1.0f;
  }
  be_.copy_from_host(logits, lg.data());
}

std::vector<int> Gemma4Drafter::argmax(const DraftStepOutput& out) {
  // Greedy rows of the backend's sampler (ties to the lowest id): only the ids come back.
  const int R = int(out.logits.rows());
  Tensor ids = ws_->draft_ids.slice(0, R), lps = ws_->draft_logprobs.slice(0, R);
  be_.sample(out.logits, std::vector<SamplingRow>(static_cast<size_t>(R)), ids, lps);
  std::vector<int> host(static_cast<size_t>(R));
  be_.copy_to_host(ids, host.data());
  return host;
}

}  // namespace gs
