// gemmaserve: one binary, many subcommands (serve, run, logits, tokenize, ...).
#include <cstdio>
#include <map>
#include <memory>

#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"

namespace gs::cli {
static std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}
bool register_command(Command c) {
  registry().emplace(c.name, std::move(c));
  return true;
}
}  // namespace gs::cli

int main(int argc, char** argv) {
  gs::log::init_from_env();
  CLI::App app{"gemmaserve: a fast, exact inference engine and OpenAI-compatible server for Gemma-4"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gemmaserve 0.1.0");
  std::map<std::string, std::function<int()>> runners;
  for (auto& [name, cmd] : gs::cli::registry()) {
    CLI::App* sub = app.add_subcommand(name, cmd.help);
    runners[name] = cmd.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto* sub : app.get_subcommands()) {
    try {
      return runners.at(sub->get_name())();
    } catch (const gs::Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "internal error: %s\n", e.what());
      return 2;
    }
  }
  return 0;
}
