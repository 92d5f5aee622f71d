// Datasets read from files: ShareGPT JSON and prompt-per-line JSONL.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <sstream>

#include "bench/dataset.h"
#include "core/error.h"
#include "core/read_file.h"

namespace gs::bench {
namespace {


int token_count(const BenchTokenizer& tok, const std::string& text) { return static_cast<int>(tok.encode(text).size()); }

}  // namespace

std::vector<BenchRequest> sharegpt_dataset(const std::string& path, const BenchTokenizer& tok, int num_prompts,
                                           int fixed_output_len, uint64_t seed) {
  GS_CHECK(num_prompts >= 1, "sharegpt dataset: --num-prompts must be at least 1 (got {})", num_prompts);
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("{}: invalid JSON: {}", path, e.what());
  }
  GS_CHECK(data.is_array(), "{}: a ShareGPT file is a JSON list of {{\"conversations\": [...]}} entries", path);

  // The turns of the usable entries (two or more turns with string values), then shuffled.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < data.size(); ++i) {
    const auto& e = data[i];
    GS_CHECK(e.is_object(), "{}: entry {} is not an object", path, i);
    auto c = e.find("conversations");
    GS_CHECK(c != e.end() && c->is_array(), "{}: entry {} has no \"conversations\" list", path, i);
    if (c->size() < 2) continue;
    const auto& a = (*c)[0];
    const auto& b = (*c)[1];
    GS_CHECK(a.is_object() && a.contains("value") && a["value"].is_string() && b.is_object() &&
                 b.contains("value") && b["value"].is_string(),
             "{}: entry {}: conversation turns need a string \"value\"", path, i);
    pairs.emplace_back(a["value"].get<std::string>(), b["value"].get<std::string>());
  }
  std::mt19937_64 rng(seed);
  std::shuffle(pairs.begin(), pairs.end(), rng);

  std::vector<BenchRequest> out;
  for (const auto& [prompt, answer] : pairs) {
    if (static_cast<int>(out.size()) == num_prompts) break;
    const int prompt_len = token_count(tok, prompt);
    const int output_len = fixed_output_len > 0 ? fixed_output_len : token_count(tok, answer);
    if (fixed_output_len <= 0) {
      // vLLM's is_valid_sequence with its defaults (min 4 tokens, prompt <= 1024, total <= 2048).
      if (prompt_len < 4 || output_len < 4) continue;
      if (prompt_len > 1024 || prompt_len + output_len > 2048) continue;
    }
    out.push_back({prompt, prompt_len, output_len, {}});
  }
  GS_CHECK(!out.empty(), "{}: no conversation passed the length filter", path);
  GS_CHECK(static_cast<int>(out.size()) == num_prompts,
           "{}: only {} conversations pass the length filter, fewer than --num-prompts {}", path, out.size(),
           num_prompts);
  return out;
}

std::vector<BenchRequest> jsonl_dataset(const std::string& path, const BenchTokenizer* tok, int num_prompts,
                                        int default_output_len) {
  std::istringstream lines(read_file(path));
  std::vector<BenchRequest> out;
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (num_prompts > 0 && static_cast<int>(out.size()) == num_prompts) break;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error("{}:{}: invalid JSON: {}", path, line_no, e.what());
    }
    GS_CHECK(j.is_object(), "{}:{}: expected an object {{\"prompt\": ..., \"output_len\": ...}}", path, line_no);
    auto p = j.find("prompt");
    GS_CHECK(p != j.end() && p->is_string(), "{}:{}: \"prompt\" must be a string", path, line_no);
    BenchRequest r;
    r.prompt = p->get<std::string>();
    r.output_len = default_output_len;
    if (auto o = j.find("output_len"); o != j.end()) {
      GS_CHECK(o->is_number_integer() && o->get<long long>() >= 1 && o->get<long long>() <= (1 << 30),
               "{}:{}: \"output_len\" must be a positive integer (got {})", path, line_no, o->dump());
      r.output_len = o->get<int>();
    }
    if (tok) r.prompt_len = token_count(*tok, r.prompt);
    out.push_back(std::move(r));
  }
  GS_CHECK(!out.empty(), "{}: no prompts in the file", path);
  GS_CHECK(num_prompts <= 0 || static_cast<int>(out.size()) == num_prompts,
           "{}: holds {} prompts, fewer than --num-prompts {}", path, out.size(), num_prompts);
  return out;
}

}  // namespace gs::bench
