/* The prelude's integer-exact binary32 operations (cl/rcl_softfloat.cl, compiled for the host) against
 * the host's IEEE 754 hardware (x86-64 SSE: round to nearest even, gradual underflow): random bit
 * patterns over the whole range, subnormal-heavy and tie-heavy cases, and every special value. */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
static float flt(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* The hardware result with NaN canonicalised, as the prelude promises. */
static uint32_t canon(float x) { return isnan(x) ? 0x7fc00000u : bits(x); }

typedef enum { ADD, MUL, DIV, SQRT } op_t;
static const char *op_name[] = {"add", "mul", "div", "sqrt"};

static void check(op_t op, uint32_t a, uint32_t b, size_t *bad) {
  volatile float x = flt(a), y = flt(b);
  float hw, sw;
  switch (op) {
  case ADD: hw = x + y; sw = rcl_ref_add_f32(x, y); break;
  case MUL: hw = x * y; sw = rcl_ref_mul_f32(x, y); break;
  case DIV: hw = x / y; sw = rcl_ref_div_f32(x, y); break;
  default: hw = sqrtf(x); sw = rcl_ref_sqrt_f32(x); break;
  }
  if (canon(hw) != bits(sw)) {
    if (*bad < 5)
      fprintf(stderr, "  %s(0x%08x, 0x%08x): hardware 0x%08x, softfloat 0x%08x\n", op_name[op], a, b, canon(hw), bits(sw));
    (*bad)++;
  }
}

/* Random operands drawn from several shapes: any bits; subnormal or tiny; near each other (cancellation
 * and ties); and products/quotients straddling the underflow and overflow thresholds. */
static uint32_t operand(rt_rng *r, int shape) {
  uint32_t u = (uint32_t)rt_next(r);
  switch (shape) {
  case 0: return u;
  case 1: return u & 0x80ffffffu; /* exponent field 0 or 1: subnormals and the smallest normals */
  case 2: return (u & 0x807fffffu) | ((uint32_t)(rt_next(r) % 40u) << 23); /* below 2^-88 */
  case 3: return (u & 0x807fffffu) | ((uint32_t)(30u + rt_next(r) % 40u) << 23);
  case 4: return (u & 0x807fffffu) | ((uint32_t)(200u + rt_next(r) % 55u) << 23); /* near overflow */
  default: return (u & 0x807f0000u) | 0x3f800000u; /* few mantissa bits: exact results and ties */
  }
}

START_TEST(random_operands_match_hardware) {
  ck_assert_int_eq(fegetround(), FE_TONEAREST);
  rt_rng r = {2026};
  for (int op = 0; op < 4; op++) {
    size_t bad = 0;
    for (int i = 0; i < 3000000; i++) {
      int sa = (int)(rt_next(&r) % 6u), sb = (int)(rt_next(&r) % 6u);
      uint32_t a = operand(&r, sa), b = operand(&r, sb);
      if (op == ADD && (i & 1)) b = (a ^ 0x80000000u) + (uint32_t)(rt_next(&r) % 64u) - 32u; /* cancellation */
      check((op_t)op, a, b, &bad);
    }
    ck_assert_msg(bad == 0, "%s: %zu of 3000000 results differ from IEEE hardware", op_name[op], bad);
  }
}
END_TEST

START_TEST(special_values_match_hardware) {
  static const uint32_t sp[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u,
                                0x00800001u, 0x3f800000u, 0xbf800000u, 0x3f800001u, 0x3fffffffu, 0x4b000000u,
                                0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                0x7fa00000u, 0x33800000u, 0x34000000u, 0x0c000000u, 0x1f800000u, 0x5f800000u};
  size_t n = sizeof sp / sizeof sp[0], bad = 0;
  for (int op = 0; op < 4; op++)
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) check((op_t)op, sp[i], sp[j], &bad);
  ck_assert_msg(bad == 0, "%zu special-value results differ from IEEE hardware", bad);
}
END_TEST

/* Square root of every float with exponent fields 0 (all subnormals), 1, 126, 127 and 254: exhaustive
 * over those binades (2^23 values each), where rounding and normalisation are hardest. */
START_TEST(sqrt_exhaustive_binades) {
  static const uint32_t fields[] = {0, 1, 126, 127, 254};
  size_t bad = 0;
  for (size_t f = 0; f < 5; f++)
    for (uint32_t m = 0; m < (1u << 23); m++) check(SQRT, (fields[f] << 23) | m, 0, &bad);
  ck_assert_msg(bad == 0, "%zu square roots differ", bad);
}
END_TEST

int main(void) {
  Suite *s = suite_create("softfloat");
  TCase *tc = tcase_create("host");
  tcase_add_test(tc, random_operands_match_hardware);
  tcase_add_test(tc, special_values_match_hardware);
  tcase_add_test(tc, sqrt_exhaustive_binades);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
