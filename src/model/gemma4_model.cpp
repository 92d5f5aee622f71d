// Gemma4Model: the whole text decoder, gemma4-architecture.md §2.10, as a sequence of blocks
// (model/gemma4_blocks.cpp) over one ragged batch.
#include "model/gemma4_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/gemma4_blocks.h"
#include "model/tensor_parallel.h"

namespace gs {

struct Gemma4Model::Workspace : Gemma4Workspace {
  Tensor image_rows;  // i32 [T] rows of the step that receive soft tokens
};

namespace {

void expect_shape(const Tensor& t, Shape s, const std::string& what) {
  GS_CHECK(t.defined(), "model: weight {} is missing", what);
  GS_CHECK(t.shape == s, "model: weight {} has shape {}, the config implies {}", what, t.shape.str(), s.str());
}

// Catches a weights/config mismatch at construction with the tensor's name, rather than as a
// shape error deep inside an op.
void validate_weights(const ModelConfig& cfg, const ModelWeights& w, int ranks) {
  const int64_t H = cfg.hidden_size, L = cfg.num_layers;
  GS_CHECK(int64_t(w.layers.size()) == L, "model: {} layer weights for {} layers", w.layers.size(), L);
  expect_shape(w.embed, Shape{vocab_shard_rows(cfg, ranks), H}, "embed_tokens");
  expect_shape(w.final_norm, Shape{H}, "norm");
  if (cfg.ple_dim > 0) {
    GS_CHECK(w.ple_table.defined() && w.ple_table.ndim() == 2 && w.ple_table.dim(1) == L * cfg.ple_dim,
             "model: embed_tokens_per_layer {} must be [V, {}]", w.ple_table.str(), L * cfg.ple_dim);
    expect_shape(w.ple_model_proj, Shape{L * cfg.ple_dim, H}, "per_layer_model_projection");
    expect_shape(w.ple_proj_norm, Shape{cfg.ple_dim}, "per_layer_projection_norm");
  }
  for (int i = 0; i < L; ++i) {
    const LayerSpec& s = cfg.layers[size_t(i)];
    const LayerWeights& l = w.layers[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    const int64_t d = s.head_dim, nq = cfg.num_q_heads, nkv = s.num_kv_heads;
    const int64_t width = !s.owns_kv ? nq * d : s.k_eq_v ? (nq + nkv) * d : (nq + 2 * nkv) * d;
    expect_shape(l.qkv, Shape{width, H}, p + "self_attn.q|k|v_proj");
    expect_shape(l.q_norm, Shape{d}, p + "self_attn.q_norm");
    if (s.owns_kv) expect_shape(l.k_norm, Shape{d}, p + "self_attn.k_norm");
    expect_shape(l.o_proj, Shape{H, nq * d}, p + "self_attn.o_proj");
    expect_shape(l.gate_up, Shape{2 * int64_t(s.intermediate), H}, p + "mlp.gate|up_proj");
    expect_shape(l.down, Shape{H, s.intermediate}, p + "mlp.down_proj");
    for (auto [t, n] : {std::pair{&l.input_norm, "input_layernorm"}, {&l.post_attn_norm, "post_attention_layernorm"},
                        {&l.pre_ffn_norm, "pre_feedforward_layernorm"}, {&l.post_ffn_norm, "post_feedforward_layernorm"}})
      expect_shape(*t, Shape{H}, p + n);
    if (cfg.ple_dim > 0) {
      expect_shape(l.ple_gate, Shape{cfg.ple_dim, H}, p + "per_layer_input_gate");
      expect_shape(l.ple_proj, Shape{H, cfg.ple_dim}, p + "per_layer_projection");
      expect_shape(l.ple_post_norm, Shape{H}, p + "post_per_layer_input_norm");
    }
    if (cfg.moe) {
      const int64_t E = cfg.num_experts, I = cfg.moe_intermediate_size;
      expect_shape(l.router_proj, Shape{E, H}, p + "router.proj");
      expect_shape(l.router_scale, Shape{H}, p + "router.scale");
      expect_shape(l.per_expert_scale, Shape{E}, p + "router.per_expert_scale");
      expect_shape(l.experts_gate_up, Shape{E, 2 * I, H}, p + "experts.gate_up_proj");
      expect_shape(l.experts_down, Shape{E, H, I}, p + "experts.down_proj");
      for (auto [t, n] : {std::pair{&l.pre_ffn_norm_2, "pre_feedforward_layernorm_2"},
                          {&l.post_ffn_norm_1, "post_feedforward_layernorm_1"},
                          {&l.post_ffn_norm_2, "post_feedforward_layernorm_2"}})
        expect_shape(*t, Shape{H}, p + n);
    }
  }
}

}  // namespace

Gemma4Model::Gemma4Model(ModelConfig cfg, ModelWeights weights, Backend& backend, Communicator* tp)
    : cfg_(std::move(cfg)), w_(std::move(weights)), be_(backend), tp_(tp && tp->size() > 1 ? tp : nullptr) {
  GS_CHECK(!cfg_.is_assistant, "model: {} is an MTP assistant, not a decoder to run on its own", cfg_.architecture);
  GS_CHECK(int(cfg_.layers.size()) == cfg_.num_layers, "model: config lists {} layer specs for {} layers",
           cfg_.layers.size(), cfg_.num_layers);
  validate_weights(cfg_, w_, tp_ ? tp_->size() : 1);
  if (w_.vision) tower_ = std::make_unique<VisionTower>(cfg_, w_.vision, be_);
}

int Gemma4Model::vision_patches_for(int max_tokens) {
  // A step's soft tokens are at most its rows; the workspace takes 16 images of 280 soft tokens at a
  // time (more are encoded in further passes), but always one image of the largest budget (1120).
  const int soft = std::min(max_tokens, 16 * 280);
  return std::max(soft, 1120) * PreparedImage::kPool * PreparedImage::kPool;
}

// The step's images through the tower together; their soft tokens overwrite their placeholder rows
// (unscaled: the sqrt(H) scale is the text embedding's only, §4.4 step 2).
void Gemma4Model::merge_images(const StepImages& images, const Tensor& x, int T) {
  GS_CHECK(tower_, "model: a step carries {} images, but the vision tower is not loaded (--enable-multimodal)",
           images.images.size());
  GS_CHECK(images.first_row.size() == images.images.size(), "model: {} images with {} first rows",
           images.images.size(), images.first_row.size());
  std::vector<int> rows;
  for (size_t i = 0; i < images.images.size(); ++i) {
    const int n = images.images[i] ? images.images[i]->soft_tokens : 0;
    GS_CHECK(images.first_row[i] >= 0 && images.first_row[i] + n <= T,
             "model: image {}'s {} soft tokens from row {} do not fit in the step's {} rows", i, n,
             images.first_row[i], T);
    for (int r = 0; r < n; ++r) rows.push_back(images.first_row[i] + r);
  }
  Tensor soft = tower_->encode(images.images);
  if (rows.empty()) return;
  Tensor rows_t = ws_->image_rows.slice(0, int64_t(rows.size()));
  be_.copy_from_host(rows_t, rows.data());
  be_.scatter_rows(soft, rows_t, x);
}

size_t Gemma4Model::vision_workspace_bytes() const { return tower_ ? tower_->workspace_bytes() : 0; }

void Gemma4Model::reserve(int max_tokens, int max_logit_rows) {
  GS_CHECK(max_tokens > 0 && max_logit_rows > 0, "model: reserve({}, {}) needs positive sizes", max_tokens,
           max_logit_rows);
  auto ws = std::make_shared<Workspace>();
  ws->max_tokens = max_tokens;
  ws->max_logit_rows = max_logit_rows;
  const DType act = be_.activation_dtype();
  const int64_t T = max_tokens, H = cfg_.hidden_size;
  int64_t qkv_width = 0, q_width = 0, inter = 0;
  for (const LayerWeights& l : w_.layers) {
    qkv_width = std::max(qkv_width, l.qkv.dim(0));
    q_width = std::max(q_width, l.o_proj.dim(1));
    inter = std::max(inter, l.down.dim(1));
  }
  ws->x = be_.empty(act, Shape{T, H});
  ws->a = be_.empty(act, Shape{T, H});
  ws->o = be_.empty(act, Shape{T, H});
  ws->qkv = be_.empty(act, Shape{T, qkv_width});
  ws->q = be_.empty(act, Shape{T, q_width});
  ws->attn = be_.empty(act, Shape{T, q_width});
  ws->gate_up = be_.empty(act, Shape{T, 2 * inter});
  ws->act = be_.empty(act, Shape{T, inter});
  if (cfg_.moe) {
    ws->m = be_.empty(act, Shape{T, H});
    ws->moe_ids = be_.empty(DType::I32, Shape{T, cfg_.top_k_experts});
    ws->moe_w = be_.empty(DType::F32, Shape{T, cfg_.top_k_experts});
  }
  if (cfg_.ple_dim > 0) {
    const int64_t LP = int64_t(cfg_.num_layers) * cfg_.ple_dim;
    ws->ple_proj = be_.empty(act, Shape{T, LP});
    ws->ple = be_.empty(act, Shape{cfg_.num_layers, T, cfg_.ple_dim});
    ws->ple_gate = be_.empty(act, Shape{T, cfg_.ple_dim});
  }
  ws->hidden = be_.empty(act, Shape{max_logit_rows, H});
  ws->logits = be_.empty(DType::F32, Shape{max_logit_rows, cfg_.vocab_size});
  if (tower_) {
    ws->image_rows = be_.empty(DType::I32, Shape{T});
    tower_->reserve(vision_patches_for(max_tokens), max_tokens);
  }
  if (tp_) {
    ws->tp = tp_;
    ws->logits_shard = be_.empty(DType::F32, Shape{max_logit_rows, vocab_shard_rows(cfg_, tp_->size())});
    tp_->reserve(ws->logits_shard.nbytes() * size_t(tp_->size()));  // the gather, padding included
  }
  ws_ = std::move(ws);
}

size_t Gemma4Model::workspace_bytes() const {
  return (ws_ ? ws_->bytes() + (ws_->image_rows.defined() ? ws_->image_rows.nbytes() : 0) : 0) +
         vision_workspace_bytes();
}

ForwardOutput Gemma4Model::forward(const Tensor& ids, const AttentionBatch& batch, KvCache& cache,
                                   const Tensor& logit_rows, const StepImages* images) {
  GS_CHECK(ws_, "model: forward() before reserve()");
  Workspace& ws = *ws_;
  const int T = int(ids.numel()), R = int(logit_rows.numel());
  GS_CHECK(T == batch.num_tokens, "model: {} token ids for a batch of {} rows", T, batch.num_tokens);
  GS_CHECK(T <= ws.max_tokens, "model: {} tokens in one step, reserved for {}", T, ws.max_tokens);
  GS_CHECK(R <= ws.max_logit_rows, "model: {} logit rows in one step, reserved for {}", R, ws.max_logit_rows);
  const int64_t H = cfg_.hidden_size;

  // x0 = E[ids] · sqrt(H), the scale rounded to the activation dtype as the reference does (§2.2).
  Tensor x = rows_of(ws.x, T, H);
  const float embed_scale = round_to(be_.activation_dtype(), cfg_.embed_scale());
  if (tp_) {
    // Vocabulary-parallel: each rank fills the rows of its ids, the others are zero.
    be_.embedding_rows(w_.embed, ids, int64_t(tp_->rank()) * w_.embed.dim(0), embed_scale, x);
    tp_->all_reduce_sum(x);
  } else {
    be_.embedding(w_.embed, ids, embed_scale, x);
  }
  if (images && !images->empty()) merge_images(*images, x, T);
  // PLE: the identity part from the ids (the pad id at placeholders), the context part from the
  // merged embeddings (§4.4 step 3).
  if (cfg_.ple_dim > 0) compute_per_layer_inputs(be_, cfg_, w_, ws, ids, T);

  // The first layer's input norm; every later norm that starts a block is fused into the residual
  // add that ends the block before it (gemma4_blocks.h).
  be_.rms_norm(x, &w_.layers[0].input_norm, cfg_.rms_norm_eps, rows_of(ws.a, T, H));
  for (int i = 0; i < cfg_.num_layers; ++i) {
    const LayerWeights& lw = w_.layers[size_t(i)];
    const Tensor* next_input_norm = i + 1 < cfg_.num_layers ? &w_.layers[size_t(i) + 1].input_norm : nullptr;
    attention_block(be_, cfg_, i, lw, ws, batch, cache, T);
    // layer_scalar multiplies the whole residual after the layer's last add (§2.4 step 6): it is
    // folded into that add, and the next layer's input norm reads the scaled residual.
    if (cfg_.ple_dim > 0) {
      ffn_block(be_, cfg_, i, lw, ws, T, 1.0f, nullptr);
      ple_block(be_, cfg_, i, lw, ws, T, lw.layer_scalar, next_input_norm);
    } else {
      ffn_block(be_, cfg_, i, lw, ws, T, lw.layer_scalar, next_input_norm);
    }
  }

  ForwardOutput out;
  out.hidden = rows_of(ws.hidden, R, H);
  out.logits = rows_of(ws.logits, R, cfg_.vocab_size);
  if (R == 0) return out;
  be_.gather_rows(x, logit_rows, out.hidden);
  be_.rms_norm(out.hidden, &w_.final_norm, cfg_.rms_norm_eps, out.hidden);
  // Tied LM head, unscaled. Tensor parallel: this rank's vocabulary slice, soft-capped (elementwise)
  // and gathered into full rows on every rank.
  const Tensor head = tp_ ? rows_of(ws.logits_shard, R, w_.embed.dim(0)) : out.logits;
  be_.matmul(out.hidden, w_.embed, head);
  if (cfg_.final_logit_softcap > 0.f) be_.softcap(head, cfg_.final_logit_softcap);
  if (tp_) tp_->all_gather_cols(head, out.logits);
  return out;
}

}  // namespace gs
