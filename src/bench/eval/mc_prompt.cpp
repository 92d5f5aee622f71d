#include "bench/eval/mc_prompt.h"

#include <regex>

namespace gs::bench {

std::string generate_prompt(const McItem& item) {
  std::string p = item.question + "\n\n";
  for (size_t i = 0; i < item.choices.size(); ++i) {
    p += choice_letter(static_cast<int>(i));
    p += ". " + item.choices[i] + "\n";
  }
  p += "\nAnswer with the letter of the correct choice only, in the form \"Answer: X\".";
  return p;
}

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::optional<int> letter_index(char l, const McItem& item) {
  const int i = l - 'A';
  if (i >= 0 && i < static_cast<int>(item.choices.size())) return i;
  return std::nullopt;
}

}  // namespace

std::optional<int> extract_answer(const std::string& reply, const McItem& item) {
  // 1. "Answer: X" anywhere; the last one wins (a model that reasons first concludes last).
  // Not std::regex::icase: that would let [A-Z] match lower-case words ("answer is a ...").
  static const std::regex answer_re(R"([Aa][Nn][Ss][Ww][Ee][Rr]\s*(?:[Ii][Ss])?\s*(?::|：)?\s*\(?([A-Z])\)?(?![A-Za-z]))");
  std::optional<int> found;
  for (auto it = std::sregex_iterator(reply.begin(), reply.end(), answer_re); it != std::sregex_iterator(); ++it) {
    if (auto i = letter_index((*it)[1].str()[0], item)) found = i;
  }
  if (found) return found;
  // 2. A bare letter opening the reply.
  static const std::regex first_re(R"(^\s*\(?([A-Z])\)?(?:[.):,]|\s|$))");
  std::smatch m;
  if (std::regex_search(reply, m, first_re)) {
    if (auto i = letter_index(m[1].str()[0], item)) return i;
  }
  // 3. The text of a choice, exactly.
  const std::string t = trim(reply);
  for (size_t i = 0; i < item.choices.size(); ++i) {
    if (t == trim(item.choices[i])) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::string loglikelihood_context(const McItem& item) { return "Question: " + item.question + "\nAnswer:"; }

std::string loglikelihood_continuation(const McItem& item, int choice) {
  return " " + item.choices[static_cast<size_t>(choice)];
}

}  // namespace gs::bench
