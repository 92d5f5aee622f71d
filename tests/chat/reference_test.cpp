// The chat templates against the reference: every conversation of tests/chat/conversations is
// rendered by gemmaserve's interpreter and by Python's jinja2 in transformers' environment
// (tools/chat/render_reference.py), with both official Gemma-4 templates (fetched by
// scripts/fetch-test-data.sh) and the demo template. Outputs must be byte-identical; where jinja2
// raises, gemmaserve must raise too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/demo_template.h"
#include "core/error.h"

namespace gs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<fs::path> conversations() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(GS_SOURCE_DIR) / "tests/chat/conversations"))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool python_jinja2_available() { return std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") == 0; }

struct Reference {
  bool ok;
  std::string text;  // output, or jinja2's error
};

// Renders all conversations with one template through the Python reference in one process.
std::map<fs::path, Reference> python_reference(const fs::path& tmpl, const std::vector<fs::path>& convs) {
  fs::path dir = fs::temp_directory_path() / ("gs_chat_ref_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path jobs = dir / "jobs.jsonl", results = dir / "results.jsonl";
  {
    std::ofstream f(jobs);
    for (const auto& c : convs) f << ojson{{"template", tmpl.string()}, {"conversation", c.string()}}.dump() << "\n";
  }
  std::string cmd = "/usr/bin/python3 '" + std::string(GS_SOURCE_DIR) + "/tools/chat/render_reference.py' --batch < '" +
                    jobs.string() + "' > '" + results.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::map<fs::path, Reference> out;
  std::istringstream lines(read_file(results));
  std::string line;
  for (const auto& c : convs) {
    if (!std::getline(lines, line)) break;
    ojson r = ojson::parse(line);
    out[c] = r["ok"].get<bool>() ? Reference{true, r["output"].get<std::string>()}
                                 : Reference{false, r["error"].get<std::string>()};
  }
  fs::remove_all(dir);
  return out;
}

std::string render_cpp(const ChatTemplate& t, const ojson& conv) {
  ojson extra = ojson::object();
  if (conv.contains("enable_thinking")) extra["enable_thinking"] = conv["enable_thinking"];
  return t.render(conv["messages"], conv.contains("tools") ? conv["tools"] : ojson(nullptr),
                  conv.value("add_generation_prompt", false), extra);
}

void check_template(const fs::path& tmpl_path) {
  if (!python_jinja2_available()) GTEST_SKIP() << "/usr/bin/python3 with jinja2 (python3-jinja2) is not installed";
  auto convs = conversations();
  ASSERT_GE(convs.size(), 30u);
  ChatTemplate tmpl(read_file(tmpl_path), "<bos>", "<eos>");
  auto reference = python_reference(tmpl_path, convs);
  ASSERT_EQ(reference.size(), convs.size()) << "the reference script did not answer for every conversation";
  int rendered = 0;
  for (const auto& c : convs) {
    SCOPED_TRACE(c.filename().string());
    ojson conv = ojson::parse(read_file(c));
    const Reference& ref = reference[c];
    try {
      std::string out = render_cpp(tmpl, conv);
      if (ref.ok) {
        EXPECT_EQ(out, ref.text);
        ++rendered;
      } else {
        ADD_FAILURE() << "jinja2 raised (" << ref.text << ") but gemmaserve rendered:\n" << out;
      }
    } catch (const Error& e) {
      EXPECT_FALSE(ref.ok) << "gemmaserve raised: " << e.what();
    }
  }
  EXPECT_GT(rendered, 25);
}

fs::path official(const char* name) {
  fs::path p = fs::path(GS_TESTDATA_DIR) / "gemma4/templates" / name;
  return p;
}

TEST(ChatTemplateReference, Gemma4Official) {
  fs::path p = official("google-gemma-4-31B-it.jinja");
  if (!fs::exists(p)) GTEST_SKIP() << p << " missing: run scripts/fetch-test-data.sh";
  check_template(p);
}

TEST(ChatTemplateReference, Gemma4OfficialInterleaved) {
  fs::path p = official("google-gemma-4-31B-it-interleaved.jinja");
  if (!fs::exists(p)) GTEST_SKIP() << p << " missing: run scripts/fetch-test-data.sh";
  check_template(p);
}

TEST(ChatTemplateReference, DemoTemplate) {
  fs::path p = fs::temp_directory_path() / ("gs_demo_template_" + std::to_string(::getpid()) + ".jinja");
  std::ofstream(p, std::ios::binary) << demo_chat_template();
  check_template(p);
  fs::remove(p);
}

}  // namespace
}  // namespace gs
