// `gemmaserve eval`: multiple-choice accuracy of a model behind an OpenAI-compatible server.
//
// generate: one chat completion per item with the pinned prompt (mc_prompt.h), temperature 0 by
//   default, the letter read back by extract_answer.
// loglikelihood: one /v1/completions request per choice, prompt = context + continuation,
//   echo=true, logprobs=1, max_tokens=1 (OpenAI-style servers refuse 0). The echoed prompt's
//   token logprobs are in logprobs.token_logprobs; the prompt is the first usage.prompt_tokens of
//   them. The continuation's tokens are the prompt tokens taken from the end until their text
//   covers the continuation's bytes (a token straddling the context/continuation join is
//   counted whole). This needs no tokenizer on our side and does not depend on how a server
//   counts text_offset (bytes or characters, with or without the BOS text). The choice with the
//   highest sum wins ("acc"); "acc_norm" divides each sum by the continuation's byte length, as
//   lm-evaluation-harness's acc_norm does.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "bench/eval/mc_dataset.h"

namespace gs::bench {

enum class EvalMode { Generate, Loglikelihood };
EvalMode parse_eval_mode(const std::string& s);

struct EvalOptions {
  std::string base_url;
  std::string api_key;
  std::string model;
  EvalMode mode = EvalMode::Generate;
  int concurrency = 8;
  uint64_t seed = 0;
  double temperature = 0;
  int max_tokens = 32;  // generate mode
  double timeout_s = 600;
  bool progress = true;
};

struct ItemResult {
  McItem item;
  bool ok = false;            // the server answered (an unparseable reply is still ok, and wrong)
  std::string error;
  std::optional<int> predicted;
  std::optional<int> predicted_norm;  // loglikelihood: by length-normalised score
  std::string reply;                  // generate: the model's text
  std::vector<double> scores;         // loglikelihood: summed logprob per choice
  bool correct() const { return predicted && *predicted == item.answer; }
};

struct Accuracy {
  int n = 0;
  int correct = 0;
  double acc = 0;
  double stderr_ = 0;  // sqrt(acc (1-acc) / (n-1)): the sample standard error of a mean of 0/1 scores
};
Accuracy accuracy(const std::vector<bool>& correct);

// Sum of the continuation's logprobs from an echo response (see the file comment); gs::Error
// when the response lacks what is needed.
double continuation_logprob(const nlohmann::json& response, const std::string& continuation);

std::vector<ItemResult> run_eval(const EvalOptions& o, const std::vector<McItem>& items);

nlohmann::json item_result_json(const ItemResult& r, EvalMode mode);

}  // namespace gs::bench
