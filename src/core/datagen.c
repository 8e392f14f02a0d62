/* Deterministic test data (see datagen.h). Only exact operations (integer arithmetic, ldexp, one
 * rounding double -> float), so every machine produces the same bytes. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"

uint64_t rcl_rng_next(rcl_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double rcl_rng_uniform(rcl_rng *r) { return (double)(rcl_rng_next(r) >> 11) * 0x1.0p-53; }

static const char *const kind_names[] = {"uniform", "wide", "cancel", "special"};

const char *rcl_gen_kind_name(rcl_gen_kind k) { return (unsigned)k <= RCL_GEN_SPECIAL ? kind_names[k] : "unknown"; }

int rcl_gen_kind_parse(rcl_gen_kind *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_gen_kind_parse: NULL argument");
  for (int i = 0; i <= RCL_GEN_SPECIAL; i++)
    if (!strcasecmp(name, kind_names[i])) {
      *out = (rcl_gen_kind)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown data kind \"%s\" (expected uniform, wide, cancel or special)", name);
}

static void put(void *x, rcl_dtype dt, size_t i, double v) {
  if (dt == RCL_F32) {
    float f = (float)v;
    memcpy((char *)x + 4 * i, &f, 4);
  } else {
    memcpy((char *)x + 8 * i, &v, 8);
  }
}

static void put_bits(void *x, rcl_dtype dt, size_t i, uint64_t bits) {
  if (dt == RCL_F32) {
    uint32_t b = (uint32_t)bits;
    memcpy((char *)x + 4 * i, &b, 4);
  } else {
    memcpy((char *)x + 8 * i, &bits, 8);
  }
}

static void negate_copy(void *x, rcl_dtype dt, size_t to, size_t from) {
  size_t es = rcl_dtype_size(dt);
  memcpy((char *)x + to * es, (char *)x + from * es, es);
  ((unsigned char *)x)[to * es + es - 1] ^= 0x80; /* flip the sign bit (little-endian) */
}

int rcl_generate(void *x, rcl_dtype dt, size_t n, rcl_gen_kind kind, uint64_t seed) {
  if (rcl_dtype_size(dt) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_generate: unknown dtype %d", (int)dt);
  if (n > 0 && !x) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_generate: NULL output for %zu values", n);
  if ((unsigned)kind > RCL_GEN_SPECIAL) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_generate: unknown kind %d", (int)kind);
  rcl_rng r = {seed};
  switch (kind) {
  case RCL_GEN_UNIFORM:
    for (size_t i = 0; i < n; i++) put(x, dt, i, 2.0 * rcl_rng_uniform(&r) - 1.0);
    break;
  case RCL_GEN_WIDE:
  case RCL_GEN_SPECIAL:
    for (size_t i = 0; i < n; i++) {
      uint64_t u = rcl_rng_next(&r);
      if (dt == RCL_F32) put_bits(x, dt, i, (u & 0x807fffffu) | ((rcl_rng_next(&r) % 255u) << 23));
      else put_bits(x, dt, i, (u & 0x800fffffffffffffu) | ((rcl_rng_next(&r) % 2047u) << 52));
    }
    if (kind == RCL_GEN_SPECIAL) {
      static const uint64_t sp32[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,
                                      0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x7fa00001u};
      static const uint64_t sp64[] = {0x7ff8000000000000u, 0x7ff0000000000000u, 0xfff0000000000000u, 0u,
                                      0x8000000000000000u, 1u, 0x800fffffffffffffu, 0x7fefffffffffffffu,
                                      0x7ff4000000000001u};
      for (size_t i = 0; i < n; i += 1 + rcl_rng_next(&r) % 97u)
        put_bits(x, dt, i, dt == RCL_F32 ? sp32[rcl_rng_next(&r) % 9] : sp64[rcl_rng_next(&r) % 9]);
    }
    break;
  case RCL_GEN_CANCEL:
    for (size_t i = 0; i < n; i++) {
      double big = ldexp(2.0 * rcl_rng_uniform(&r) - 1.0, (int)(rcl_rng_next(&r) % 60u));
      double small = ldexp(2.0 * rcl_rng_uniform(&r) - 1.0, -(int)(rcl_rng_next(&r) % 40u));
      if (i + 1 < n && rcl_rng_next(&r) % 2u) {
        put(x, dt, i, big);
        negate_copy(x, dt, i + 1, i);
        i++;
      } else {
        put(x, dt, i, small);
      }
    }
    break;
  }
  return 0;
}
