// The pinned prompts of `gemmaserve eval` and how answers are read back. Pinned means: changing
// any byte here changes every accuracy number, so these are part of the tool's contract (and of
// docs/perf/serving.md, which shows them).
//
// generate mode (chat completions, one user message):
//
//   {question}
//
//   A. {choice 0}
//   B. {choice 1}
//   ...
//
//   Answer with the letter of the correct choice only, in the form "Answer: X".
//
// The reply's letter is found by, in order (case-insensitive for "answer", letters must be
// capitals among the choices offered):
//   1. the last  `answer\s*(?:is)?\s*(?::|：)?\s*\(?([A-Z])\)?(?![A-Za-z])`   ("Answer: C", "the answer is (B)")
//   2. the first `^\s*\(?([A-Z])\)?(?:[.):,]|\s|$)` at the start of the reply  ("B", "B.", "(C) because")
//   3. the reply as a whole being a choice's text exactly (after trimming)
// Anything else counts as no answer (wrong).
//
// loglikelihood mode (/v1/completions with echo): context = "Question: {question}\nAnswer:",
// continuation = " {choice text}"; each choice is scored by the summed logprobs of its
// continuation tokens (see eval_runner.h for how they are found).
#pragma once
#include <optional>
#include <string>

#include "bench/eval/mc_dataset.h"

namespace gs::bench {

std::string generate_prompt(const McItem& item);
// The index of the chosen answer, or nothing when the reply names none of the choices.
std::optional<int> extract_answer(const std::string& reply, const McItem& item);

std::string loglikelihood_context(const McItem& item);
std::string loglikelihood_continuation(const McItem& item, int choice);

}  // namespace gs::bench
