#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <queue>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace gs {

namespace {
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 100000;

uint32_t first_code_point(std::string_view s) {
  size_t len = 0;
  return utf8::decode(s, 0, &len);
}

uint32_t last_code_point(std::string_view s) {
  uint32_t cp = 0;
  for (size_t i = 0, len = 0; i < s.size(); i += len) cp = utf8::decode(s, i, &len);
  return cp;
}

uint64_t boundary_key(uint32_t left_last, uint32_t right_first) {
  return (static_cast<uint64_t>(left_last) << 32) | right_first;
}
}  // namespace

BpeModel::BpeModel(std::vector<std::string> id_to_token, Options options, std::string source)
    : id_to_token_(std::move(id_to_token)), options_(std::move(options)), source_(std::move(source)) {
  // The first id wins when a token string repeats (vocabularies should not have duplicates).
  token_to_id_ = TokenIndex(&id_to_token_);
  for (int b = 0; b < 256; ++b) {
    auto id = token_to_id(fmt::format("<0x{:02X}>", b));
    byte_tokens_[b] = id ? *id : -1;
  }
  if (!options_.unk_token.empty()) {
    auto id = token_to_id(options_.unk_token);
    GS_CHECK(id.has_value(), "{}: model.unk_token '{}' is not in the vocabulary", source_, options_.unk_token);
    unk_id_ = *id;
  }
}

std::optional<int> BpeModel::token_to_id(std::string_view token) const {
  const int id = token_to_id_.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

void BpeModel::add_merge(std::string_view left, std::string_view right, size_t index) {
  auto a = token_to_id(left);
  GS_CHECK(a.has_value(), "{}: merges[{}]: token '{}' is not in the vocabulary", source_, index, left);
  auto b = token_to_id(right);
  GS_CHECK(b.has_value(), "{}: merges[{}]: token '{}' is not in the vocabulary", source_, index, right);
  std::string merged;
  merged.reserve(left.size() + right.size());
  merged.append(left).append(right);
  auto m = token_to_id(merged);
  GS_CHECK(m.has_value(), "{}: merges[{}]: merged token '{}' is not in the vocabulary", source_, index, merged);
  // Like the reference, a repeated pair keeps its last rank.
  merges_.insert_or_assign(*a, *b, MergeMap::Value{static_cast<int32_t>(index), *m});
  crossable_.insert(boundary_key(last_code_point(left), first_code_point(right)));
}

BpeModel::CharEdges BpeModel::edges(std::string_view ch) const {
  if (token_to_id_.find(ch) >= 0) {
    const uint32_t cp = first_code_point(ch);
    return {cp, cp, false};
  }
  if (options_.byte_fallback) {
    bool all = true;
    for (char c : ch) all = all && byte_tokens_[static_cast<uint8_t>(c)] >= 0;
    if (all) return {'<', '>', false};  // its symbols are "<0xXX>" tokens
  }
  if (unk_id_ >= 0) {
    const std::string& unk = id_to_token_[static_cast<size_t>(unk_id_)];
    return {first_code_point(unk), last_code_point(unk), true};
  }
  return {0, 0, true};  // dropped: its neighbours meet, so never cut next to it
}

void BpeModel::encode_word(std::string_view word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  // Cut the word where no merge can ever join the two sides (no merge's left token ends with
  // the character before the cut while its right token starts with the one after). The pieces
  // merge exactly as the whole word would, and short pieces repeat often enough to cache.
  size_t piece_start = 0;
  CharEdges prev{};
  bool have_prev = false;
  for (size_t i = 0; i < word.size();) {
    const size_t len = utf8::char_len(word, i);
    const CharEdges cur = edges(word.substr(i, len));
    if (have_prev && !prev.unknown && !cur.unknown && !crossable_.count(boundary_key(prev.last, cur.first))) {
      encode_piece(word.substr(piece_start, i - piece_start), out);
      piece_start = i;
    }
    prev = cur;
    have_prev = true;
    i += len;
  }
  encode_piece(word.substr(piece_start), out);
}

void BpeModel::encode_piece(std::string_view word, std::vector<int>& out) const {

  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::vector<int>(out.begin() + static_cast<long>(first), out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int>& out) const {
  // A doubly linked list of symbols over the word; a merge folds the right symbol into the left.
  struct Symbol {
    int id;
    int prev;
    int next;
    bool alive;
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  auto push = [&](int id) {
    const int n = static_cast<int>(syms.size());
    syms.push_back(Symbol{id, n - 1, -1, true});
    if (n > 0) syms[static_cast<size_t>(n - 1)].next = n;
  };
  bool last_was_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t len = utf8::char_len(word, i);
    const std::string_view ch = word.substr(i, len);
    i += len;
    if (auto id = token_to_id(ch)) {
      push(*id);
      last_was_unk = false;
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : ch) all = all && byte_tokens_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : ch) push(byte_tokens_[static_cast<uint8_t>(c)]);
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no way to represent the character: it is dropped
    if (!(options_.fuse_unk && last_was_unk)) push(unk_id_);
    last_was_unk = true;
  }

  struct Candidate {
    int rank;
    int pos;
    int new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int left) {
    const int right = syms[static_cast<size_t>(left)].next;
    if (right < 0) return;
    if (const auto* m = merges_.find(syms[static_cast<size_t>(left)].id, syms[static_cast<size_t>(right)].id)) {
      queue.push(Candidate{m->rank, left, m->new_id});
    }
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = syms[static_cast<size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = syms[static_cast<size_t>(left.next)];
    // Stale entry: the pair at this position changed since it was queued.
    const auto* m = merges_.find(left.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[static_cast<size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    out.push_back(syms[static_cast<size_t>(i)].id);
  }
}

}  // namespace gs
