// BenchTokenizer over the server's own tokenizer: POST /tokenize and /detokenize, the routes vLLM
// serves and gemmaserve serves alike. No route lists the vocabulary, so the ids random prompts are
// drawn from are found by probing: the vocabulary size is where /detokenize starts refusing ids,
// and a candidate id is kept when it decodes (special tokens skipped) to text that encodes back to
// that id alone, which leaves out special tokens and byte-fallback pieces as the local pool does.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>

#include "bench/bench_tokenizer.h"
#include "bench/http_client.h"
#include "core/error.h"
#include "core/log.h"

namespace gs::bench {
namespace {

using nlohmann::json;

// Candidate ids checked for the prompt pool: every id of a vocabulary this small, else a seeded
// sample of this many (a pool of thousands of ids makes prompts as unrelated as the full one).
constexpr int kMaxProbes = 4096;
constexpr int kProbeThreads = 8;
constexpr int kMaxVocab = 1 << 24;

class ServerTokenizer : public BenchTokenizer {
 public:
  ServerTokenizer(std::string base_url, std::string api_key, std::string model, double timeout_s)
      : base_url_(std::move(base_url)),
        api_key_(std::move(api_key)),
        model_(std::move(model)),
        timeout_s_(timeout_s),
        client_(base_url_, api_key_, timeout_s_) {}

  std::vector<int> encode(const std::string& text) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return tokenize(client_, text);
  }

  std::string decode(const std::vector<int>& ids) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return detokenize(client_, ids, false);
  }

  std::vector<int> prompt_token_pool(uint64_t seed) const override {
    int vocab = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      vocab = vocab_size(client_);
    }
    const std::vector<int> candidates = probe_candidates(vocab, seed);
    std::vector<char> keep(candidates.size(), 0);
    std::atomic<size_t> next{0};
    std::mutex error_mu;
    std::string first_error;
    auto worker = [&] {
      try {
        HttpClient c(base_url_, api_key_, timeout_s_);
        for (size_t i = next++; i < candidates.size(); i = next++) {
          const std::string text = detokenize(c, {candidates[i]}, true);
          keep[i] = !text.empty() && tokenize(c, text) == std::vector<int>{candidates[i]};
        }
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (first_error.empty()) first_error = e.what();
        next = candidates.size();
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kProbeThreads; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    if (!first_error.empty()) throw Error("{}", first_error);

    std::vector<int> pool;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (keep[i]) pool.push_back(candidates[i]);
    log::info("server tokenizer: a vocabulary of {} ids; {} of {} probed ids are ordinary tokens to draw prompts from",
              vocab, pool.size(), candidates.size());
    return pool;
  }

  std::string description() const override { return base_url_ + "/tokenize"; }

  // POST path with `body` (plus the model, when known); the JSON answer of a 200, else gs::Error.
  json post(HttpClient& c, const char* path, json body) const {
    if (!model_.empty()) body["model"] = model_;
    const HttpReply r = c.post_json(path, body);
    GS_CHECK(r.error.empty(), "POST {}{}: {}", c.url(), path, r.error);
    GS_CHECK(r.status == 200, "POST {}{}: HTTP {}: {}", c.url(), path, r.status, r.body.substr(0, 300));
    try {
      return json::parse(r.body);
    } catch (const json::parse_error& e) {
      throw Error("POST {}{}: the answer is not JSON: {}", c.url(), path, e.what());
    }
  }

  std::vector<int> tokenize(HttpClient& c, const std::string& text) const {
    const json j = post(c, "/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
    auto t = j.find("tokens");
    GS_CHECK(t != j.end() && t->is_array() && std::all_of(t->begin(), t->end(), [](const json& v) {
               return v.is_number_integer();
             }),
             "POST {}/tokenize: the answer has no \"tokens\" list of ids", c.url());
    return t->get<std::vector<int>>();
  }

 private:
  std::string detokenize(HttpClient& c, const std::vector<int>& ids, bool skip_special) const {
    json body = {{"tokens", ids}};
    if (skip_special) body["skip_special_tokens"] = true;
    const json j = post(c, "/detokenize", body);
    auto p = j.find("prompt");
    GS_CHECK(p != j.end() && p->is_string(), "POST {}/detokenize: the answer has no \"prompt\" text", c.url());
    return p->get<std::string>();
  }

  // Whether /detokenize takes `id`: 200 yes, 400 no (outside the vocabulary), anything else an error.
  bool has_id(HttpClient& c, int id) const {
    json body = {{"tokens", {id}}};
    if (!model_.empty()) body["model"] = model_;
    const HttpReply r = c.post_json("/detokenize", body);
    GS_CHECK(r.error.empty(), "POST {}/detokenize: {}", c.url(), r.error);
    GS_CHECK(r.status == 200 || r.status == 400, "POST {}/detokenize: HTTP {}: {}", c.url(), r.status,
             r.body.substr(0, 300));
    return r.status == 200;
  }

  // The first id /detokenize refuses: doubling to pass it, then halving the gap.
  int vocab_size(HttpClient& c) const {
    GS_CHECK(has_id(c, 0), "POST {}/detokenize refuses token id 0", c.url());
    int lo = 0, hi = 1;
    while (has_id(c, hi)) {
      lo = hi;
      hi *= 2;
      GS_CHECK(hi <= kMaxVocab, "POST {}/detokenize accepts token id {}: cannot tell the vocabulary size", c.url(), lo);
    }
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      (has_id(c, mid) ? lo : hi) = mid;
    }
    return hi;
  }

  static std::vector<int> probe_candidates(int vocab, uint64_t seed) {
    std::vector<int> ids;
    if (vocab <= kMaxProbes) {
      for (int id = 0; id < vocab; ++id) ids.push_back(id);
      return ids;
    }
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, vocab - 1);
    std::unordered_set<int> seen;
    while (static_cast<int>(ids.size()) < kMaxProbes) {
      const int id = pick(rng);
      if (seen.insert(id).second) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  std::string base_url_, api_key_, model_;
  double timeout_s_;
  mutable std::mutex mu_;  // client_ serves one request at a time
  mutable HttpClient client_;
};

}  // namespace

std::unique_ptr<BenchTokenizer> server_bench_tokenizer(const std::string& base_url, const std::string& api_key,
                                                       const std::string& model, double timeout_s) {
  auto tok = std::make_unique<ServerTokenizer>(base_url, api_key, model, timeout_s);
  HttpClient probe(base_url, api_key, timeout_s);
  try {
    GS_CHECK(!tok->tokenize(probe, "Hello world").empty(), "POST {}/tokenize: no tokens for \"Hello world\"", base_url);
  } catch (const Error& e) {
    throw Error("the server does not tokenize: {}", e.what());
  }
  return tok;
}

}  // namespace gs::bench
