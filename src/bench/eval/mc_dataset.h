// Multiple-choice datasets for `gemmaserve eval`: one JSON object per line,
//   {"question": "...", "choices": ["...", "..."], "answer": 2}     (or "answer": "C")
// with 2 to 26 choices; blank lines are skipped. Any other "id" field is kept for the results.
#pragma once
#include <string>
#include <vector>

namespace gs::bench {

struct McItem {
  std::string id;  // the line's "id" when present, else its 0-based item number
  std::string question;
  std::vector<std::string> choices;
  int answer = 0;  // index into choices
};

// limit > 0: only the first `limit` items. Errors name file:line and the field.
std::vector<McItem> load_mc_dataset(const std::string& path, int limit = 0);

char choice_letter(int index);  // 0 -> 'A'

}  // namespace gs::bench
