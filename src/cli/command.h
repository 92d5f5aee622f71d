// Subcommands of the `gemmaserve` binary. Each lives in its own cmd_*.cpp and registers itself,
// so adding one touches no other file.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace gs::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds the subcommand's options to `app`; returns the function that runs it (exit code).
  std::function<std::function<int()>(CLI::App& app)> setup;
};

bool register_command(Command c);

#define GS_REGISTER_COMMAND(ident, ...) \
  static const bool gs_cmd_registered_##ident = ::gs::cli::register_command(::gs::cli::Command{__VA_ARGS__})

}  // namespace gs::cli
