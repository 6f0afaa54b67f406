// The tern subcommands. Each returns the process exit code; errors print one line on stderr.
#pragma once

namespace tern::cli {

int Translate(int argc, char** argv);
int Convert(int argc, char** argv);
int Inspect(int argc, char** argv);
int Bench(int argc, char** argv);
int Generate(int argc, char** argv);

}  // namespace tern::cli
