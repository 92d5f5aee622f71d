// VisionTower: patch embedding, encoder layers, pooler, standardize and projection, §4.2 steps 1-5.
#include "model/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "model/gemma4_blocks.h"

namespace gs {

struct VisionTower::Workspace {
  Tensor pix;           // [P, 768] rescaled pixels mapped to [-1, 1]
  Tensor pos;           // i32 [P, 2] (x, y)
  Tensor cu;            // i32 [P + 1] image boundaries (prefix used)
  Tensor pool_src;      // i32 [P / 9, 9] the patches of each soft token
  Tensor h, a, o;       // [P, Hv] residual stream, normed block input, block output
  Tensor tmp;           // [P, max(Hv, I, q width)] a clipped linear's clamped input
  Tensor q, k, v, attn; // [P, heads · hd]
  Tensor gate, up;      // [P, I]
  Tensor pooled;        // [S, Hv] tower output of every soft token of the call
  Tensor normed;        // [S, Hv]
  Tensor soft;          // [S, H] projected soft tokens
  size_t bytes() const {
    size_t n = 0;
    for (const Tensor* t : {&pix, &pos, &cu, &pool_src, &h, &a, &o, &tmp, &q, &k, &v, &attn, &gate, &up, &pooled,
                            &normed, &soft})
      n += t->defined() ? t->nbytes() : 0;
    return n;
  }
};

namespace {
constexpr int kCell = 9;  // patches per soft token (3×3)

// The prefix of a workspace buffer viewed as `shape`.
Tensor prefix(const Tensor& buf, Shape shape) {
  Tensor t = buf;
  t.shape = shape;
  GS_CHECK(t.numel() <= buf.numel(), "vision tower workspace: {} does not fit in {}", shape.str(), buf.str());
  return t;
}

void expect_shape(const Tensor& t, Shape s, const std::string& what) {
  GS_CHECK(t.defined(), "vision tower: weight {} is missing", what);
  GS_CHECK(t.shape == s, "vision tower: weight {} has shape {}, the config implies {}", what, t.shape.str(), s.str());
}
}  // namespace

VisionTower::VisionTower(const ModelConfig& cfg, std::shared_ptr<const VisionWeights> weights, Backend& backend)
    : vc_(cfg.vision), text_hidden_(cfg.hidden_size), w_(std::move(weights)), be_(backend) {
  GS_CHECK(cfg.has_vision() && w_, "vision tower: the model has no vision_config or no tower weights");
  const int64_t Hv = vc_.hidden_size, I = vc_.intermediate_size, qd = int64_t(vc_.num_heads) * vc_.head_dim;
  expect_shape(w_->input_proj, Shape{Hv, vc_.patch_values()}, "patch_embedder.input_proj");
  expect_shape(w_->position_table, Shape{2, vc_.position_embedding_size, Hv},
               "patch_embedder.position_embedding_table");
  expect_shape(w_->embed_projection, Shape{text_hidden_, Hv}, "embed_vision.embedding_projection");
  GS_CHECK(int(w_->layers.size()) == vc_.num_layers, "vision tower: {} layer weights for {} layers", w_->layers.size(),
           vc_.num_layers);
  for (size_t i = 0; i < w_->layers.size(); ++i) {
    const VisionLayerWeights& l = w_->layers[i];
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    for (auto [t, s, n] : {std::tuple{&l.q.w, Shape{qd, Hv}, "q_proj"}, {&l.k.w, Shape{qd, Hv}, "k_proj"},
                           {&l.v.w, Shape{qd, Hv}, "v_proj"}, {&l.o.w, Shape{Hv, qd}, "o_proj"},
                           {&l.gate.w, Shape{I, Hv}, "gate_proj"}, {&l.up.w, Shape{I, Hv}, "up_proj"},
                           {&l.down.w, Shape{Hv, I}, "down_proj"}})
      expect_shape(*t, s, p + n);
  }
  if (vc_.standardize) {
    expect_shape(w_->std_bias, Shape{Hv}, "std_bias");
    expect_shape(w_->std_scale, Shape{Hv}, "std_scale");
  }
}

size_t VisionTower::workspace_bytes_for(const ModelConfig& cfg, DType act, int max_patches, int max_soft_tokens) {
  const VisionConfig& v = cfg.vision;
  const size_t P = size_t(max_patches), S = size_t(max_soft_tokens), e = dtype_size(act);
  const size_t Hv = size_t(v.hidden_size), I = size_t(v.intermediate_size), qd = size_t(v.num_heads) * v.head_dim;
  const size_t per_patch = (size_t(v.patch_values()) + 3 * Hv + std::max({Hv, I, qd}) + 4 * qd + 2 * I) * e + 4 * 4;
  return P * per_patch + S * ((2 * Hv + size_t(cfg.hidden_size)) * e + kCell * 4) + 4;
}

void VisionTower::reserve(int max_patches, int max_soft_tokens) {
  GS_CHECK(max_patches >= kCell && max_soft_tokens >= 1, "vision tower: reserve({}, {}) needs positive sizes",
           max_patches, max_soft_tokens);
  auto ws = std::make_shared<Workspace>();
  const DType act = be_.activation_dtype();
  const int64_t P = max_patches, S = max_soft_tokens, Hv = vc_.hidden_size, I = vc_.intermediate_size;
  const int64_t qd = int64_t(vc_.num_heads) * vc_.head_dim;
  ws->pix = be_.empty(act, Shape{P, vc_.patch_values()});
  ws->pos = be_.empty(DType::I32, Shape{P, 2});
  ws->cu = be_.empty(DType::I32, Shape{P + 1});
  ws->pool_src = be_.empty(DType::I32, Shape{P / kCell, kCell});
  for (Tensor* t : {&ws->h, &ws->a, &ws->o}) *t = be_.empty(act, Shape{P, Hv});
  ws->tmp = be_.empty(act, Shape{P, std::max({Hv, I, qd})});
  for (Tensor* t : {&ws->q, &ws->k, &ws->v, &ws->attn}) *t = be_.empty(act, Shape{P, qd});
  for (Tensor* t : {&ws->gate, &ws->up}) *t = be_.empty(act, Shape{P, I});
  ws->pooled = be_.empty(act, Shape{S, Hv});
  ws->normed = be_.empty(act, Shape{S, Hv});
  ws->soft = be_.empty(act, Shape{S, text_hidden_});
  ws_ = std::move(ws);
  max_patches_ = max_patches;
  max_soft_ = max_soft_tokens;
}

size_t VisionTower::workspace_bytes() const { return ws_ ? ws_->bytes() : 0; }

// A clipped linear (E2B/E4B towers): clamp the input, project, clamp the output; a plain Linear
// when the bounds are ±inf.
void VisionTower::linear(const VisionLinear& l, const Tensor& x, const Tensor& out) {
  Tensor in = x;
  if (l.clip.clips_input()) {
    in = prefix(ws_->tmp, x.shape);
    be_.copy(in, x);
    be_.clamp(in, l.clip.input_min, l.clip.input_max);
  }
  be_.matmul(in, l.w, out);
  if (l.clip.clips_output()) be_.clamp(out, l.clip.output_min, l.clip.output_max);
}

Tensor VisionTower::encode(const std::vector<const PreparedImage*>& images) {
  GS_CHECK(ws_, "vision tower: encode() before reserve()");
  int soft = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const PreparedImage* im = images[i];
    GS_CHECK(im, "vision tower: image {} is null", i);
    const int n = im->num_patches();
    GS_CHECK(im->height > 0 && im->width > 0 && im->height % (PreparedImage::kPatch * PreparedImage::kPool) == 0 &&
                 im->width % (PreparedImage::kPatch * PreparedImage::kPool) == 0,
             "image {}: {}x{} pixels is not a positive multiple of 48 on each side", i, im->width, im->height);
    GS_CHECK(im->pixels.size() == size_t(n) * PreparedImage::kPatchValues && im->pos_x.size() == size_t(n) &&
                 im->pos_y.size() == size_t(n),
             "image {}: {} pixel values and {}/{} positions for {} patches", i, im->pixels.size(), im->pos_x.size(),
             im->pos_y.size(), n);
    GS_CHECK(im->soft_tokens == n / kCell, "image {}: {} soft tokens for {} patches (expected {})", i, im->soft_tokens,
             n, n / kCell);
    GS_CHECK(n <= max_patches_, "image {}: {} patches exceed the vision tower's workspace ({} patches)", i, n,
             max_patches_);
    soft += im->soft_tokens;
  }
  GS_CHECK(soft <= max_soft_, "vision tower: {} soft tokens in one call, reserved for {}", soft, max_soft_);
  // Passes of whole images that fit the workspace, in order.
  int row0 = 0;
  for (size_t first = 0; first < images.size();) {
    size_t last = first;
    int patches = 0;
    while (last < images.size() && patches + images[last]->num_patches() <= max_patches_)
      patches += images[last++]->num_patches();
    encode_pass(images, first, last, row0);
    for (size_t i = first; i < last; ++i) row0 += images[i]->soft_tokens;
    first = last;
  }
  const int64_t Hv = vc_.hidden_size;
  last_pooled_ = prefix(ws_->pooled, Shape{soft, Hv});
  Tensor out = prefix(ws_->soft, Shape{soft, text_hidden_});
  if (soft == 0) return out;
  // model.embed_vision: RMSNorm without weight, then the projection into the text model (§4.2 step 5).
  Tensor normed = prefix(ws_->normed, Shape{soft, Hv});
  be_.rms_norm(last_pooled_, nullptr, vc_.rms_norm_eps, normed);
  be_.matmul(normed, w_->embed_projection, out);
  return out;
}

void VisionTower::encode_pass(const std::vector<const PreparedImage*>& images, size_t first, size_t last, int row0) {
  Workspace& ws = *ws_;
  const int64_t Hv = vc_.hidden_size, I = vc_.intermediate_size, V = vc_.patch_values();
  const int heads = vc_.num_heads, hd = vc_.head_dim;
  const int64_t qd = int64_t(heads) * hd;

  // Host side: packed pixels (p -> 2(p - 0.5), as the patch embedder does before its Linear),
  // positions, image boundaries and each soft token's 9 patches.
  int64_t P = 0, S = 0;
  for (size_t i = first; i < last; ++i) P += images[i]->num_patches(), S += images[i]->soft_tokens;
  std::vector<float> pix(size_t(P * V));
  std::vector<int32_t> pos(size_t(2 * P)), src(size_t(S * kCell), -1), filled(size_t(S), 0);
  std::vector<int> cu{0};
  int64_t base = 0, cell0 = 0;
  for (size_t i = first; i < last; ++i) {
    const PreparedImage& im = *images[i];
    const int n = im.num_patches(), gw = im.width / PreparedImage::kPatch, gh = im.height / PreparedImage::kPatch;
    for (int64_t e = 0; e < int64_t(n) * V; ++e) pix[size_t(base * V + e)] = 2.f * (im.pixels[size_t(e)] - 0.5f);
    for (int p = 0; p < n; ++p) {
      const int x = im.pos_x[size_t(p)], y = im.pos_y[size_t(p)];
      GS_CHECK(x >= 0 && x < gw && y >= 0 && y < gh, "image {}: patch {} at ({}, {}) is outside its {}x{} patch grid",
               i, p, x, y, gw, gh);
      pos[size_t(2 * (base + p))] = x;
      pos[size_t(2 * (base + p) + 1)] = y;
      // The pooler's cell of this patch: (x/3) + (gw/3)·(y/3), row-major over the 3×3 cells.
      constexpr int k = PreparedImage::kPool;
      const int64_t c = cell0 + x / k + int64_t(gw / k) * (y / k);
      GS_CHECK(filled[size_t(c)] < kCell, "image {}: more than 9 patches fall in soft token {}", i, c - cell0);
      src[size_t(c * kCell + filled[size_t(c)]++)] = int32_t(base + p);
    }
    base += n;
    cell0 += im.soft_tokens;
    cu.push_back(int(base));
  }
  for (int64_t c = 0; c < S; ++c)
    GS_CHECK(filled[size_t(c)] == kCell, "vision tower: soft token {} has {} patches, not 9", c, filled[size_t(c)]);

  Tensor pix_t = prefix(ws.pix, Shape{P, V});
  if (pix_t.dtype == DType::F32) {
    be_.copy_from_host(pix_t, pix.data());
  } else {
    std::vector<uint16_t> half(pix.size());
    convert_from_f32(pix_t.dtype, pix.data(), half.data(), pix.size());
    be_.copy_from_host(pix_t, half.data());
  }
  Tensor pos_t = prefix(ws.pos, Shape{P, 2}), cu_t = prefix(ws.cu, Shape{int64_t(cu.size())});
  Tensor src_t = prefix(ws.pool_src, Shape{S, kCell});
  be_.copy_from_host(pos_t, pos.data());
  be_.copy_from_host(cu_t, cu.data());
  be_.copy_from_host(src_t, src.data());

  // 1. Patch embedding plus the 2-D position table.
  Tensor h = prefix(ws.h, Shape{P, Hv}), a = prefix(ws.a, Shape{P, Hv}), o = prefix(ws.o, Shape{P, Hv});
  be_.matmul(pix_t, w_->input_proj, h);
  be_.vision_position_add(h, w_->position_table, pos_t);

  // 2. Encoder layers: pre/post-normed attention and MLP blocks, no layer scalar.
  Tensor q = prefix(ws.q, Shape{P, qd}), k = prefix(ws.k, Shape{P, qd}), v = prefix(ws.v, Shape{P, qd});
  Tensor attn = prefix(ws.attn, Shape{P, qd}), gate = prefix(ws.gate, Shape{P, I}), up = prefix(ws.up, Shape{P, I});
  const float eps = vc_.rms_norm_eps;
  for (const VisionLayerWeights& l : w_->layers) {
    be_.rms_norm(h, &l.input_norm, eps, a);
    linear(l.q, a, q);
    linear(l.k, a, k);
    linear(l.v, a, v);
    // Per-head norms: q and k with their weights, v without; then 2-D RoPE on q and k.
    const Shape per_head{P * heads, hd};
    be_.rms_norm(q.view(per_head), &l.q_norm, eps, q.view(per_head));
    be_.rms_norm(k.view(per_head), &l.k_norm, eps, k.view(per_head));
    be_.rms_norm(v.view(per_head), nullptr, eps, v.view(per_head));
    be_.vision_rope(q, pos_t, heads, hd, vc_.rope_theta);
    be_.vision_rope(k, pos_t, heads, hd, vc_.rope_theta);
    be_.vision_attention(q, k, v, cu_t, cu, heads, hd, attn);
    linear(l.o, attn, o);
    be_.residual_add_norm(h, o, l.post_attn_norm, eps, 1.0f);
    be_.rms_norm(h, &l.pre_ffn_norm, eps, a);
    linear(l.gate, a, gate);
    linear(l.up, a, up);
    be_.gelu_tanh_mul_pair(gate, up, gate);
    linear(l.down, gate, o);
    be_.residual_add_norm(h, o, l.post_ffn_norm, eps, 1.0f);
  }

  // 3. Pool each image's 3×3 cells, times sqrt(Hv) (a Python float in the reference); 4. standardize.
  Tensor pooled = ws.pooled;
  pooled.data = static_cast<char*>(ws.pooled.data) + size_t(row0) * Hv * dtype_size(ws.pooled.dtype);
  pooled.shape = Shape{S, Hv};
  be_.vision_pool(h, src_t, float(std::sqrt(double(Hv))), pooled);
  if (vc_.standardize) be_.standardize(pooled, w_->std_bias, w_->std_scale);
}

}  // namespace gs
