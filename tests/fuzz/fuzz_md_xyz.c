/* libFuzzer target: the extended XYZ reader (md_io.c), as rcl_md_read runs it. The first byte is a mode:
 * bit 7 clear: the file's first line is the atom count (bits 0-5) + 1 and the rest of the input follows,
 * so that most inputs take the XYZ path with a count that matches a few lines (the LAMMPS path is
 * fuzz_md_lammps); bit 7 set: the rest of the input is the whole file, count line included (absurd,
 * negative or malformed counts). */
#include "fuzz_md_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 0x80) {
    fuzz_md_read("fuzz.xyz", data + 1, size - 1);
    return 0;
  }
  char head[8];
  int hl = snprintf(head, sizeof head, "%u\n", (unsigned)(data[0] & 63) + 1);
  uint8_t *in = malloc(size - 1 + (size_t)hl);
  if (!in) abort();
  memcpy(in, head, (size_t)hl);
  memcpy(in + hl, data + 1, size - 1);
  fuzz_md_read("fuzz.xyz", in, size - 1 + (size_t)hl);
  free(in);
  return 0;
}
