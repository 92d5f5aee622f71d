#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "tokenizer/json_fields.h"

namespace gs {

namespace {

PreTokenizer::Behavior parse_behavior(const std::string& b, const std::string& where) {
  using B = PreTokenizer::Behavior;
  if (b == "Removed") return B::kRemoved;
  if (b == "Isolated") return B::kIsolated;
  if (b == "MergedWithPrevious") return B::kMergedWithPrevious;
  if (b == "MergedWithNext") return B::kMergedWithNext;
  if (b == "Contiguous") return B::kContiguous;
  throw Error("{}: unknown Split behavior '{}'", where, b);
}

void parse_into(const nlohmann::json& j, const std::string& where, std::vector<PreTokenizer::Split>& out) {
  const std::string type = json_string(j, "type", where);
  if (type == "Sequence") {
    const auto& list = json_array(j, "pretokenizers", where);
    for (size_t i = 0; i < list.size(); ++i) parse_into(list[i], fmt::format("{}.pretokenizers[{}]", where, i), out);
  } else if (type == "Split") {
    PreTokenizer::Split s;
    s.pattern = json_string_pattern(j, where);
    s.behavior = parse_behavior(json_string(j, "behavior", where), where);
    s.invert = json_bool(j, "invert", false, where);
    out.push_back(std::move(s));
  } else {
    throw Error("{}: type '{}' is not supported (gemmaserve supports Split, Sequence)", where, type);
  }
}

// Delimiter matches of `split` inside `range`, as alternating (range, is_match) segments that
// cover the range (what the reference's pattern search produces).
std::vector<std::pair<PreTokenizer::Range, bool>> segments(const PreTokenizer::Split& split, std::string_view text,
                                                            PreTokenizer::Range range) {
  std::vector<std::pair<PreTokenizer::Range, bool>> segs;
  size_t prev = range.first;
  auto add_match = [&](size_t b, size_t e) {
    if (prev != b) segs.push_back({{prev, b}, false});
    segs.push_back({{b, e}, true});
    prev = e;
  };
  if (split.pattern_kind == PreTokenizer::Split::Pattern::kNewlineRuns) {
    for (size_t i = range.first; i < range.second;) {
      if (text[i] != '\n') {
        ++i;
        continue;
      }
      size_t e = i;
      while (e < range.second && text[e] == '\n') ++e;
      add_match(i, e);
      i = e;
    }
  } else if (!split.pattern.empty()) {
    const std::string_view p = split.pattern;
    for (size_t i = range.first; i + p.size() <= range.second;) {
      if (text.compare(i, p.size(), p) == 0) {
        add_match(i, i + p.size());
        i += p.size();
      } else {
        ++i;
      }
    }
  }
  if (prev != range.second) segs.push_back({{prev, range.second}, false});
  if (split.invert) {
    for (auto& s : segs) s.second = !s.second;
  }
  return segs;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& j, const std::string& source) {
  std::vector<Split> splits;
  if (!j.is_null()) parse_into(j, source + ": pre_tokenizer", splits);
  return PreTokenizer(std::move(splits));
}

std::vector<PreTokenizer::Range> PreTokenizer::apply(const Split& split, std::string_view text, Range range) {
  const auto segs = segments(split, text, range);
  std::vector<Range> out;
  bool prev_match = false;
  switch (split.behavior) {
    case Behavior::kRemoved:
      for (const auto& [r, m] : segs)
        if (!m) out.push_back(r);
      break;
    case Behavior::kIsolated:
      for (const auto& [r, m] : segs) out.push_back(r);
      break;
    case Behavior::kMergedWithPrevious:
      for (const auto& [r, m] : segs) {
        if (m && !prev_match && !out.empty()) out.back().second = r.second;
        else out.push_back(r);
        prev_match = m;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->second && !prev_match && !out.empty()) out.back().first = it->first.first;
        else out.push_back(it->first);
        prev_match = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
    case Behavior::kContiguous:
      for (size_t i = 0; i < segs.size(); ++i) {
        if (i > 0 && segs[i].second == prev_match) out.back().second = segs[i].first.second;
        else out.push_back(segs[i].first);
        prev_match = segs[i].second;
      }
      break;
  }
  return out;
}

std::vector<PreTokenizer::Range> PreTokenizer::words(std::string_view text) const {
  std::vector<Range> cur;
  if (!text.empty()) cur.push_back({0, text.size()});
  for (const Split& split : splits_) {
    std::vector<Range> next;
    for (const Range& r : cur) {
      for (const Range& w : apply(split, text, r)) {
        if (w.first != w.second) next.push_back(w);
      }
    }
    cur = std::move(next);
  }
  return cur;
}

}  // namespace gs
