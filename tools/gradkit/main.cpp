// gradkit: the command-line tool. `info` prints the machine facts, `verify` checks every operator suite
// against the fp64 goldens, `bench` times the bench cases against the machine's roofline.
#include <CLI/CLI.hpp>

#include "commands/commands.h"
#include "gradkit/gradkit.h"
#include "harness/pinning.h"

int main(int argc, char** argv) {
  CLI::App app{"gradkit: CANN training backward operators on the CPU"};
  app.set_version_flag("--version", std::string(gradkitVersion()));
  app.require_subcommand(1);

  gradkit::cli::InfoOptions info;
  CLI::App* infoCommand = app.add_subcommand("info", "ISA, threads, SoC profile and the measured machine limits");
  infoCommand->add_option("--json", info.jsonPath, "also write the facts to this JSON file");

  gradkit::cli::VerifyOptions verify;
  CLI::App* verifyCommand = app.add_subcommand("verify", "run the case suites and compare with the fp64 goldens");
  verifyCommand->add_option("--op", verify.op, "operator name or prefix (default: all)");
  verifyCommand->add_option("--json", verify.jsonPath, "write the rows to this JSON file");
  verifyCommand->add_option("--dump", verify.dumpDir, "write inputs, golden and our outputs as .npy under this dir");
  verifyCommand->add_option("--cases", verify.casesDir, "directory of case files (default: the repository's cases/)");
  verifyCommand->add_flag("--digest-only", verify.digestOnly,
                          "run the cases and record their output digests without goldens or precision gates (a row "
                          "passes when the call ran, wrote only its outputs and kept its inputs)");

  gradkit::cli::BenchOptions bench;
  CLI::App* benchCommand = app.add_subcommand("bench", "time the bench cases; roofline ratio and PyTorch peer");
  benchCommand->add_option("--op", bench.op, "operator name or prefix (default: all)");
  benchCommand->add_option("--json", bench.jsonPath, "write the rows to this JSON file");
  benchCommand->add_option("--cases", bench.casesDir, "directory of case files (default: the repository's cases/)");
  benchCommand->add_option("--repeat", bench.repeat, "timed runs per case after one warm-up (min is kept)")
      ->check(CLI::Range(1, 100000));
  bool noPeer = false;
  benchCommand->add_flag("--no-peer", noPeer, "do not time PyTorch");

  CLI11_PARSE(app, argc, argv);

  if (*infoCommand) return gradkit::cli::runInfo(info);
  if (*verifyCommand) return gradkit::cli::runVerify(verify);
  gradkit::cli::ensureThreadPinning(argv);
  bench.peer = !noPeer;
  return gradkit::cli::runBench(bench);
}
