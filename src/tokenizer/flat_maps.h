// Two open-addressing hash maps for the BPE model's hot lookups. Loading Gemma's vocabulary
// (262k tokens, 515k merges) into node-based std::unordered_maps costs a large share of the load
// time; these keep everything in a few flat arrays.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gs {

// token string -> id, over strings owned by the caller's id -> token vector.
class TokenIndex {
 public:
  // `tokens` must outlive the index and not change; empty strings are skipped. The first id of a
  // repeated string wins.
  explicit TokenIndex(const std::vector<std::string>* tokens = nullptr);
  int find(std::string_view s) const;  // -1 when absent

 private:
  static size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<int32_t> slots_;  // token id or -1
  size_t mask_ = 0;
};

// (left id, right id) -> (rank, merged id).
class MergeMap {
 public:
  struct Value {
    int32_t rank;
    int32_t new_id;
  };
  void reserve(size_t n);
  void insert_or_assign(int a, int b, Value v);
  const Value* find(int a, int b) const;
  size_t size() const { return size_; }

 private:
  static uint64_t key(int a, int b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t slot_of(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }
  void grow();

  static constexpr uint64_t kEmpty = ~0ull;
  std::vector<uint64_t> keys_;
  std::vector<Value> values_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace gs
