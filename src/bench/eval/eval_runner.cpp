#include "bench/eval/eval_runner.h"

#include <atomic>
#include <cmath>
#include <thread>

#include "bench/eval/mc_prompt.h"
#include "bench/http_client.h"
#include "bench/progress_bar.h"
#include "core/error.h"

namespace gs::bench {

EvalMode parse_eval_mode(const std::string& s) {
  if (s == "generate") return EvalMode::Generate;
  if (s == "loglikelihood") return EvalMode::Loglikelihood;
  throw Error("--mode '{}' is not generate or loglikelihood", s);
}

Accuracy accuracy(const std::vector<bool>& correct) {
  Accuracy a;
  a.n = static_cast<int>(correct.size());
  for (bool c : correct) a.correct += c ? 1 : 0;
  if (a.n == 0) return a;
  a.acc = static_cast<double>(a.correct) / a.n;
  if (a.n > 1) a.stderr_ = std::sqrt(a.acc * (1 - a.acc) / (a.n - 1));
  return a;
}

double continuation_logprob(const nlohmann::json& response, const std::string& continuation) {
  auto choices = response.find("choices");
  GS_CHECK(choices != response.end() && choices->is_array() && !choices->empty(), "the response has no choices");
  const auto& lp = (*choices)[0].value("logprobs", nlohmann::json());
  GS_CHECK(lp.is_object() && lp.contains("tokens") && lp.contains("token_logprobs") && lp["tokens"].is_array() &&
               lp["token_logprobs"].is_array() && lp["tokens"].size() == lp["token_logprobs"].size(),
           "the response has no logprobs.tokens / token_logprobs (does the server support echo with logprobs?)");
  const auto& tokens = lp["tokens"];
  const auto& values = lp["token_logprobs"];
  // The prompt's tokens come first; the one generated token (max_tokens=1) follows them.
  size_t prompt_tokens = tokens.size() > 0 ? tokens.size() - 1 : 0;
  if (auto u = response.find("usage"); u != response.end() && u->is_object() && u->contains("prompt_tokens")) {
    prompt_tokens = (*u)["prompt_tokens"].get<size_t>();
  }
  GS_CHECK(prompt_tokens <= tokens.size(), "usage.prompt_tokens {} exceeds the {} echoed tokens", prompt_tokens,
           tokens.size());
  double sum = 0;
  size_t covered = 0;
  size_t i = prompt_tokens;
  while (covered < continuation.size()) {
    GS_CHECK(i > 0, "the echoed prompt tokens do not cover the continuation '{}'", continuation);
    --i;
    GS_CHECK(tokens[i].is_string(), "logprobs.tokens[{}] is not a string", i);
    GS_CHECK(values[i].is_number(), "logprobs.token_logprobs[{}] is {} (the continuation's tokens need logprobs)", i,
             values[i].dump());
    covered += tokens[i].get_ref<const std::string&>().size();
    sum += values[i].get<double>();
  }
  return sum;
}

namespace {

void run_generate(HttpClient& client, const EvalOptions& o, size_t index, ItemResult& r) {
  nlohmann::json body = {{"model", o.model},
                         {"messages", nlohmann::json::array({{{"role", "user"}, {"content", generate_prompt(r.item)}}})},
                         {"max_tokens", o.max_tokens},
                         {"temperature", o.temperature},
                         {"seed", o.seed + index}};
  const HttpReply reply = client.post_json("/v1/chat/completions", body);
  GS_CHECK(reply.error.empty(), "connection failed: {}", reply.error);
  GS_CHECK(reply.status == 200, "HTTP {}: {}", reply.status, reply.body.substr(0, 500));
  const nlohmann::json j = nlohmann::json::parse(reply.body);
  const auto& content = j.at("choices").at(0).at("message").value("content", nlohmann::json());
  r.reply = content.is_string() ? content.get<std::string>() : "";
  r.predicted = extract_answer(r.reply, r.item);
}

void run_loglikelihood(HttpClient& client, const EvalOptions& o, ItemResult& r) {
  const std::string context = loglikelihood_context(r.item);
  std::vector<double> norm;
  for (size_t c = 0; c < r.item.choices.size(); ++c) {
    const std::string cont = loglikelihood_continuation(r.item, static_cast<int>(c));
    nlohmann::json body = {{"model", o.model}, {"prompt", context + cont}, {"max_tokens", 1},
                           {"temperature", 0},  {"echo", true},            {"logprobs", 1}};
    const HttpReply reply = client.post_json("/v1/completions", body);
    GS_CHECK(reply.error.empty(), "connection failed: {}", reply.error);
    GS_CHECK(reply.status == 200, "HTTP {}: {}", reply.status, reply.body.substr(0, 500));
    const double lp = continuation_logprob(nlohmann::json::parse(reply.body), cont);
    r.scores.push_back(lp);
    norm.push_back(lp / static_cast<double>(cont.size()));
  }
  auto argmax = [](const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) if (v[i] > v[best]) best = i;
    return static_cast<int>(best);
  };
  r.predicted = argmax(r.scores);
  r.predicted_norm = argmax(norm);
}

}  // namespace

std::vector<ItemResult> run_eval(const EvalOptions& o, const std::vector<McItem>& items) {
  GS_CHECK(o.concurrency >= 1, "--concurrency {} must be at least 1", o.concurrency);
  std::vector<ItemResult> results(items.size());
  for (size_t i = 0; i < items.size(); ++i) results[i].item = items[i];
  std::atomic<size_t> next{0};
  ProgressBar bar("items", static_cast<int>(items.size()), o.progress);
  std::vector<std::thread> workers;
  const size_t n = std::min(items.size(), static_cast<size_t>(o.concurrency));
  for (size_t w = 0; w < n; ++w) {
    workers.emplace_back([&] {
      HttpClient client(o.base_url, o.api_key, o.timeout_s);
      for (size_t i = next++; i < items.size(); i = next++) {
        ItemResult& r = results[i];
        try {
          if (o.mode == EvalMode::Generate) run_generate(client, o, i, r);
          else run_loglikelihood(client, o, r);
          r.ok = true;
        } catch (const std::exception& e) {  // gs::Error and nlohmann's json errors alike
          r.error = e.what();
        }
        bar.advance();
      }
    });
  }
  for (auto& t : workers) t.join();
  bar.finish();
  return results;
}

nlohmann::json item_result_json(const ItemResult& r, EvalMode mode) {
  auto letter = [](const std::optional<int>& i) {
    return i ? nlohmann::json(std::string(1, choice_letter(*i))) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"id", r.item.id},
                      {"answer", std::string(1, choice_letter(r.item.answer))},
                      {"predicted", letter(r.predicted)},
                      {"correct", r.correct()},
                      {"error", r.ok ? nlohmann::json(nullptr) : nlohmann::json(r.error)}};
  if (mode == EvalMode::Generate) {
    j["reply"] = r.reply;
  } else {
    j["scores"] = r.scores;
    j["predicted_norm"] = letter(r.predicted_norm);
    j["correct_norm"] = r.predicted_norm && *r.predicted_norm == r.item.answer;
  }
  return j;
}

}  // namespace gs::bench
