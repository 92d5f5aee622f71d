#include "bench/eval/mc_dataset.h"

#include <nlohmann/json.hpp>

#include <fstream>

#include "core/error.h"

namespace gs::bench {

char choice_letter(int index) { return static_cast<char>('A' + index); }

std::vector<McItem> load_mc_dataset(const std::string& path, int limit) {
  std::ifstream f(path, std::ios::binary);
  GS_CHECK(f.good(), "{}: cannot open the dataset file", path);
  std::vector<McItem> items;
  std::string line;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (limit > 0 && static_cast<int>(items.size()) == limit) break;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error("{}:{}: invalid JSON: {}", path, line_no, e.what());
    }
    GS_CHECK(j.is_object(), "{}:{}: expected an object with question, choices and answer", path, line_no);
    McItem it;
    auto q = j.find("question");
    GS_CHECK(q != j.end() && q->is_string() && !q->get_ref<const std::string&>().empty(),
             "{}:{}: \"question\" must be a non-empty string", path, line_no);
    it.question = q->get<std::string>();
    auto c = j.find("choices");
    GS_CHECK(c != j.end() && c->is_array() && c->size() >= 2 && c->size() <= 26,
             "{}:{}: \"choices\" must be a list of 2 to 26 strings", path, line_no);
    for (const auto& ch : *c) {
      GS_CHECK(ch.is_string(), "{}:{}: \"choices\" holds {}, which is not a string", path, line_no, ch.dump());
      it.choices.push_back(ch.get<std::string>());
    }
    const int n = static_cast<int>(it.choices.size());
    auto a = j.find("answer");
    GS_CHECK(a != j.end(), "{}:{}: \"answer\" is missing", path, line_no);
    if (a->is_number_integer()) {
      const long long v = a->get<long long>();
      GS_CHECK(v >= 0 && v < n, "{}:{}: \"answer\" {} is not a choice index (0..{})", path, line_no, v, n - 1);
      it.answer = static_cast<int>(v);
    } else if (a->is_string() && a->get_ref<const std::string&>().size() == 1) {
      const char l = static_cast<char>(std::toupper(static_cast<unsigned char>(a->get_ref<const std::string&>()[0])));
      GS_CHECK(l >= 'A' && l < 'A' + n, "{}:{}: \"answer\" \"{}\" is not one of the letters A..{}", path, line_no,
               a->get<std::string>(), choice_letter(n - 1));
      it.answer = l - 'A';
    } else {
      throw Error("{}:{}: \"answer\" must be a choice index or a letter (got {})", path, line_no, a->dump());
    }
    if (auto id = j.find("id"); id != j.end()) {
      it.id = id->is_string() ? id->get<std::string>() : id->dump();
    } else {
      it.id = std::to_string(items.size());
    }
    items.push_back(std::move(it));
  }
  GS_CHECK(!items.empty(), "{}: no items in the file", path);
  return items;
}

}  // namespace gs::bench
