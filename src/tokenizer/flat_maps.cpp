#include "tokenizer/flat_maps.h"

namespace gs {

namespace {
size_t capacity_for(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;  // load factor <= 0.5
  return cap;
}
}  // namespace

TokenIndex::TokenIndex(const std::vector<std::string>* tokens) : tokens_(tokens) {
  const size_t n = tokens ? tokens->size() : 0;
  slots_.assign(capacity_for(n), -1);
  mask_ = slots_.size() - 1;
  for (size_t id = 0; id < n; ++id) {
    const std::string& t = (*tokens)[id];
    if (t.empty()) continue;
    size_t s = hash(t) & mask_;
    bool dup = false;
    while (slots_[s] >= 0) {
      if ((*tokens)[static_cast<size_t>(slots_[s])] == t) {
        dup = true;
        break;
      }
      s = (s + 1) & mask_;
    }
    if (!dup) slots_[s] = static_cast<int32_t>(id);
  }
}

int TokenIndex::find(std::string_view str) const {
  if (!tokens_) return -1;
  for (size_t s = hash(str) & mask_;; s = (s + 1) & mask_) {
    const int32_t id = slots_[s];
    if (id < 0) return -1;
    if ((*tokens_)[static_cast<size_t>(id)] == str) return id;
  }
}

void MergeMap::reserve(size_t n) {
  if (capacity_for(n) <= keys_.size()) return;
  std::vector<uint64_t> old_keys = std::move(keys_);
  std::vector<Value> old_values = std::move(values_);
  keys_.assign(capacity_for(n), kEmpty);
  values_.assign(keys_.size(), Value{0, 0});
  mask_ = keys_.size() - 1;
  size_ = 0;
  for (size_t i = 0; i < old_keys.size(); ++i) {
    if (old_keys[i] == kEmpty) continue;
    insert_or_assign(static_cast<int>(old_keys[i] >> 32), static_cast<int>(old_keys[i] & 0xFFFFFFFFu), old_values[i]);
  }
}

void MergeMap::grow() { reserve(keys_.empty() ? 8 : keys_.size()); }

void MergeMap::insert_or_assign(int a, int b, Value v) {
  if ((size_ + 1) * 2 > keys_.size()) grow();
  const uint64_t k = key(a, b);
  size_t s = slot_of(k);
  while (keys_[s] != kEmpty && keys_[s] != k) s = (s + 1) & mask_;
  if (keys_[s] == kEmpty) {
    keys_[s] = k;
    ++size_;
  }
  values_[s] = v;
}

const MergeMap::Value* MergeMap::find(int a, int b) const {
  if (keys_.empty()) return nullptr;
  const uint64_t k = key(a, b);
  for (size_t s = slot_of(k);; s = (s + 1) & mask_) {
    if (keys_[s] == k) return &values_[s];
    if (keys_[s] == kEmpty) return nullptr;
  }
}

}  // namespace gs
