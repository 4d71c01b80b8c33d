// baracuda-bench: times baracuda plans against the copy and GEMM ceilings (see bench.hpp).
#include "bench.hpp"

int main(int argc, char** argv) { return baracuda::bench::run_bench(argc, argv); }
