#include "api/request_problem_error.h"

#include <fmt/format.h>

namespace gs::api {

std::string client_param(const std::string& param, const OpenAIRequest& req) {
  const bool chat = req.endpoint == Endpoint::ChatCompletions;
  // An image's soft tokens would come with the prompt: the field that carries it is the one to fix.
  if (param == "prompt" || param == "mm_block") return chat ? "messages" : "prompt";
  if (param == "logprobs") return chat ? "top_logprobs" : "logprobs";
  if (param == "max_tokens") return req.max_tokens_param;
  return param;
}

ApiError request_problem_error(const RequestProblem& problem, const OpenAIRequest& req, int prompt_index) {
  const std::string param = client_param(problem.param, req);
  std::string name = param;
  if (param == "prompt" && req.prompts.size() > 1) name = fmt::format("prompt[{}]", prompt_index);
  std::string detail = problem.detail;
  // min_tokens over max_tokens, when the client never set max_tokens: say where that number came from.
  if (problem.param == "min_tokens" && req.min_tokens >= 0 && !req.max_tokens)
    detail += "; max_tokens was not given, so it is what the model length leaves after the prompt";
  return invalid_request(fmt::format("{}: {}", name, detail), param);
}

}  // namespace gs::api
