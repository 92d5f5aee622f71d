#include "parallel/local_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace gs {
namespace {

// State shared by the ranks of one group: the tensors each rank published for the current
// collective and a reusable barrier that an abort breaks.
class LocalGroup {
 public:
  explicit LocalGroup(int size) : size_(size), slots_(size_t(size)) {}
  int size() const { return size_; }

  void publish(int rank, const Tensor& t) { slots_[size_t(rank)] = t; }
  const Tensor& slot(int rank) const { return slots_[size_t(rank)]; }

  void wait_all(int rank) {
    std::unique_lock<std::mutex> lk(mu_);
    if (aborted_) throw Error("rank {}: the tensor-parallel group was aborted (another rank failed)", rank);
    const uint64_t gen = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lk, [&] { return generation_ != gen || aborted_; });
    if (generation_ == gen) throw Error("rank {}: the tensor-parallel group was aborted (another rank failed)", rank);
  }

  void abort() {
    std::lock_guard<std::mutex> lk(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  int size_;
  std::vector<Tensor> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalGroup> g, int rank) : g_(std::move(g)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }
  std::string name() const override { return "local"; }

  void all_reduce_sum(const Tensor& x) override {
    GS_CHECK(x.device == Device::CPU && x.dtype == DType::F32, "local all_reduce_sum: {} (expected f32 on the host)",
             x.str());
    g_->publish(rank_, x);
    g_->wait_all(rank_);
    // Every rank reads all inputs before any rank writes its result: sum into scratch first.
    const int64_t n = x.numel();
    scratch_.assign(size_t(n), 0.f);
    for (int r = 0; r < size(); ++r) {
      const Tensor& t = g_->slot(r);
      GS_CHECK(t.numel() == n, "local all_reduce_sum: rank {} has {} elements, rank {} {}", r, t.numel(), rank_, n);
      const float* p = t.ptr<const float>();
      for (int64_t i = 0; i < n; ++i) scratch_[size_t(i)] += p[i];
    }
    g_->wait_all(rank_);
    std::memcpy(x.data, scratch_.data(), size_t(n) * sizeof(float));
  }

  void all_gather_cols(const Tensor& shard, const Tensor& out) override {
    const int64_t R = shard.rows(), C = shard.cols();
    const int64_t N = out.cols();
    GS_CHECK(out.rows() == R && N > C * (size() - 1) && N <= C * size() && out.dtype == shard.dtype,
             "all_gather_cols: out {} must be [{}, ({}, {}]] of the shard's dtype ({})", out.str(), R,
             C * (size() - 1), C * size(), shard.str());
    gather(shard, [&](int r, const Tensor& t) {
      const size_t es = dtype_size(t.dtype), row = size_t(C) * es;
      const size_t width = size_t(std::min(C, N - int64_t(r) * C)) * es;  // the last shards' padding dropped
      for (int64_t i = 0; i < R; ++i)
        std::memcpy(out.ptr<char>() + size_t(i) * size_t(N) * es + size_t(r) * row, t.ptr<const char>() + size_t(i) * row,
                    width);
    });
  }

  void all_gather_rows(const Tensor& shard, const Tensor& out) override {
    GS_CHECK(out.numel() == shard.numel() * size() && out.dtype == shard.dtype,
             "all_gather_rows: out {} must hold {} shards {}", out.str(), size(), shard.str());
    gather(shard, [&](int r, const Tensor& t) {
      std::memcpy(out.ptr<char>() + size_t(r) * t.nbytes(), t.data, t.nbytes());
    });
  }

  void broadcast(const Tensor& x, int root) override {
    GS_CHECK(x.device == Device::CPU, "local broadcast: {} is not on the host", x.str());
    GS_CHECK(root >= 0 && root < size(), "local broadcast: root {} of {} ranks", root, size());
    g_->publish(rank_, x);
    g_->wait_all(rank_);
    const Tensor& src = g_->slot(root);
    GS_CHECK(src.shape == x.shape && src.dtype == x.dtype, "local broadcast: rank {} sent {}, rank {} has {}", root,
             src.str(), rank_, x.str());
    if (rank_ != root) std::memcpy(x.data, src.data, x.nbytes());
    g_->wait_all(rank_);  // the root's tensor stays in place until every rank has copied it
  }

  void barrier() override { g_->wait_all(rank_); }
  void abort() override { g_->abort(); }

 private:
  template <typename Copy>
  void gather(const Tensor& shard, Copy copy) {
    GS_CHECK(shard.device == Device::CPU, "local all_gather: {} is not on the host", shard.str());
    g_->publish(rank_, shard);
    g_->wait_all(rank_);
    for (int r = 0; r < size(); ++r) {
      const Tensor& t = g_->slot(r);
      GS_CHECK(t.shape == shard.shape && t.dtype == shard.dtype, "local all_gather: rank {} sent {}, rank {} {}", r,
               t.str(), rank_, shard.str());
      copy(r, t);
    }
    g_->wait_all(rank_);  // shards stay in place until every rank has copied them
  }

  std::shared_ptr<LocalGroup> g_;
  int rank_;
  std::vector<float> scratch_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size) {
  GS_CHECK(size >= 1, "local communicators: group size {}", size);
  auto g = std::make_shared<LocalGroup>(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<LocalCommunicator>(g, r));
  return out;
}

}  // namespace gs
