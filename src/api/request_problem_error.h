// How a problem found by the engine's request validation (engine/request_validation.h) reads to an
// OpenAI client: a 400 whose `param` and message name the field as the client's endpoint names it
// (chat sends the prompt as `messages` and the logprob count as `top_logprobs`, a client may send
// max_tokens as `max_completion_tokens`).
#pragma once
#include <string>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "engine/request_validation.h"

namespace gs::api {

// The request field of `req`'s endpoint that a validation param ("prompt", "logprobs", ...) stands for.
std::string client_param(const std::string& param, const OpenAIRequest& req);

// The 400 for `problem` found in the choice of prompt `prompt_index` (of req.prompts, for the
// message's "prompt[i]" when a completion has several).
ApiError request_problem_error(const RequestProblem& problem, const OpenAIRequest& req, int prompt_index = 0);

}  // namespace gs::api
