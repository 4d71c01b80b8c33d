#include <cstdio>
int run_rope_emu();
int run_alibi_emu();
int main() {
  int f = run_rope_emu();
  f += run_alibi_emu();
  std::printf("failures: %d\n", f);
  return f != 0;
}
