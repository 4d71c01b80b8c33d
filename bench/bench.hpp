// baracuda-bench as a library: one entry point shared by the `baracuda-bench` binary and the
// `baracuda bench` subcommand of the command-line tool.
//
//   baracuda-bench [--suite NAME] [--op OP] [--dtype DT] [--shape 16384x8192] [--reps N]
//                  [--warmup N] [--graph] [--device N] [--json FILE] [--list] [--help]
//
// Each case selects a plan once (timed as select_us), fills its inputs with random finite
// values, rotates through enough buffer sets to exceed 3x L2, warms up, and reports the median
// and minimum of N timed runs (CUDA events around each run, or CUDA-graph replays with
// --graph) with GB/s, TFLOP/s and the percentage of the copy and GEMM ceilings measured first
// in the same process.
#pragma once

namespace baracuda::bench {

// argv[0] is the program (or subcommand) name; options start at argv[1].
// Returns 0 on success, 1 on a usage error or when any case fails to select or run,
// 2 when no CUDA device is visible.
int run_bench(int argc, char** argv);

}  // namespace baracuda::bench
