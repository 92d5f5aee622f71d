// Shard shapes (model/tensor_parallel.h) and the host slicing the loader uses (model/tensor_shard.h).
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/presets.h"
#include "model/dummy_weights.h"
#include "model/tensor_parallel.h"
#include "model/tensor_shard.h"

namespace gs {
namespace {

Tensor iota(Shape s) {
  Tensor t = host_tensor(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = float(i);
  return t;
}

TEST(TensorShard, CutAndConcatAlongEachDimension) {
  const Tensor t = iota(Shape{2, 3, 4});
  const Tensor mid = cut_host(t, 1, 1, 2);  // [2, 2, 4]
  ASSERT_EQ(mid.shape, (Shape{2, 2, 4}));
  EXPECT_EQ(mid.ptr<float>()[0], 4.f);
  EXPECT_EQ(mid.ptr<float>()[8], 16.f);
  const Tensor last = cut_host(t, 2, 3, 1);  // [2, 3, 1]
  EXPECT_EQ(last.ptr<float>()[1], 7.f);
  EXPECT_EQ(cut_host(t, 0, 0, -1).data, t.data);  // the whole tensor is not copied
  const Tensor back = concat_host({cut_host(t, 1, 0, 1), mid}, 1);
  ASSERT_EQ(back.shape, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(back.ptr<float>()[i], float(i));
  EXPECT_THROW(cut_host(t, 1, 2, 2), Error);
}

TEST(TensorShard, ShardConfigOfTheRealShapes) {
  for (const char* name : {"31b", "26b-a4b", "e4b", "e2b"}) {
    SCOPED_TRACE(name);
    const ModelConfig full = resolve_dummy_config(name);
    for (int n : {2, 4, 8}) {
      const ModelConfig s = shard_config(full, n);
      EXPECT_EQ(s.num_q_heads * n, full.num_q_heads);
      EXPECT_EQ(s.vocab_size, full.vocab_size);
      for (int i = 0; i < full.num_layers; ++i) {
        const int nkv = full.layers[size_t(i)].num_kv_heads;
        EXPECT_EQ(s.layers[size_t(i)].num_kv_heads, nkv >= n ? nkv / n : 1);
        EXPECT_EQ(s.num_q_heads % s.layers[size_t(i)].num_kv_heads, 0);
        // Every rank's q heads read the KV head it holds.
        for (int r = 0; r < n; ++r) {
          const int first = first_kv_head(full, i, {r, n}), per_kv = full.num_q_heads / nkv;
          const int q0 = r * s.num_q_heads, q1 = q0 + s.num_q_heads - 1;
          EXPECT_GE(q0 / per_kv, first);
          EXPECT_LT(q1 / per_kv, first + s.layers[size_t(i)].num_kv_heads);
        }
      }
    }
  }
}

TEST(TensorShard, RejectsSizesThatDoNotDivideTheHeads) {
  const ModelConfig e2b = resolve_dummy_config("e2b");
  EXPECT_THROW(shard_config(e2b, 3), Error);
  try {
    check_tensor_parallel(e2b, 16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_attention_heads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gs
