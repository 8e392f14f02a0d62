/* Device enumeration and device profiles: what each device reports it guarantees, and from that, how
 * reprocl keeps every kernel family bit-exact on it (natively, by exact emulation, or not at all). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/profile.h"

/* Reads a string property; an unreadable one becomes "" (a profile is still useful without it). */
static void info_str(char *dst, size_t cap, cl_int (*get)(void *, cl_uint, size_t, void *, size_t *), void *obj,
                     cl_uint param) {
  size_t len = 0;
  dst[0] = '\0';
  if (get(obj, param, cap - 1, dst, &len) != CL_SUCCESS) {
    /* CL_INVALID_VALUE when longer than cap: read the whole value and cut it. */
    if (get(obj, param, 0, NULL, &len) == CL_SUCCESS && len > 0) {
      char *tmp = malloc(len);
      if (tmp && get(obj, param, len, tmp, NULL) == CL_SUCCESS) {
        memcpy(dst, tmp, cap - 1);
        dst[cap - 1] = '\0';
      }
      free(tmp);
    }
    return;
  }
  dst[len < cap ? len : cap - 1] = '\0';
  /* Trim the trailing blanks some drivers add. */
  for (size_t n = strlen(dst); n > 0 && isspace((unsigned char)dst[n - 1]); n--) dst[n - 1] = '\0';
}

static cl_int get_platform(void *o, cl_uint p, size_t s, void *v, size_t *r) {
  return clGetPlatformInfo((cl_platform_id)o, p, s, v, r);
}
static cl_int get_device(void *o, cl_uint p, size_t s, void *v, size_t *r) {
  return clGetDeviceInfo((cl_device_id)o, p, s, v, r);
}

int rcl_devices(rcl_device_info **out, size_t *count) {
  if (!out || !count) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_devices: NULL argument");
  *out = NULL;
  *count = 0;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: no ICD installed */ || np == 0) return 0;
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetPlatformIDs");
  cl_platform_id *plats = rcl__calloc(np, sizeof *plats);
  if (!plats) return RCL_ERR_OUT_OF_MEMORY;
  err = clGetPlatformIDs(np, plats, NULL);
  if (err != CL_SUCCESS) {
    rcl__free(plats);
    return rcl__fail_cl(err, "clGetPlatformIDs");
  }
  rcl_device_info *list = NULL;
  size_t n = 0;
  int rc = 0;
  for (cl_uint p = 0; p < np && rc == 0; p++) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue; /* e.g. Rusticl without RUSTICL_ENABLE */
    if (err != CL_SUCCESS) continue;                     /* a broken platform must not hide the working ones */
    cl_device_id *devs = rcl__calloc(nd, sizeof *devs);
    rcl_device_info *grown = devs ? rcl__realloc(list, (n + nd) * sizeof *list) : NULL;
    if (!devs || !grown) {
      rcl__free(devs);
      rc = RCL_ERR_OUT_OF_MEMORY;
      break;
    }
    list = grown;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL) == CL_SUCCESS) {
      for (cl_uint d = 0; d < nd; d++) {
        rcl_device_info *di = &list[n];
        memset(di, 0, sizeof *di);
        di->index = n;
        di->platform = plats[p];
        di->device = devs[d];
        info_str(di->platform_name, sizeof di->platform_name, get_platform, plats[p], CL_PLATFORM_NAME);
        info_str(di->device_name, sizeof di->device_name, get_device, devs[d], CL_DEVICE_NAME);
        n++;
      }
    }
    rcl__free(devs);
  }
  rcl__free(plats);
  if (rc) {
    rcl__free(list);
    return rc;
  }
  *out = list;
  *count = n;
  return 0;
}

void rcl_devices_free(rcl_device_info *devices) { rcl__free(devices); }

static int contains_ci(const char *hay, const char *needle);

/* Short names people use for platforms whose official names are longer. */
static const struct {
  const char *alias, *platform;
} platform_aliases[] = {{"pocl", "Portable Computing Language"},
                        {"amd", "AMD Accelerated Parallel Processing"},
                        {"intel", "Intel(R) OpenCL"},
                        {"cuda", "NVIDIA CUDA"}};

/* Whether a platform name matches a spec part: a substring, or an alias of the platform. */
int rcl__platform_matches(const char *platform, const char *part) {
  if (contains_ci(platform, part)) return 1;
  for (size_t i = 0; i < sizeof platform_aliases / sizeof platform_aliases[0]; i++)
    if (!strcasecmp(part, platform_aliases[i].alias) && contains_ci(platform, platform_aliases[i].platform)) return 1;
  return 0;
}

static int contains_ci(const char *hay, const char *needle) {
  size_t nl = strlen(needle);
  if (nl == 0) return 1;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < nl && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
    if (i == nl) return 1;
  }
  return 0;
}

/* The k-th device (0-based) that a name spec (no "#k" part) matches: "plat:dev" or "text". A device named
 * exactly (case aside) wins over substring matches: "Intel(R) Xeon(R) Processor" is Intel's CPU device and
 * also part of PoCL's name for the same processor. -1: none. */
static int name_lookup(const rcl_device_info *list, size_t n, const char *spec, unsigned long k) {
  const char *colon = strchr(spec, ':');
  char plat[128] = "";
  const char *dev = spec;
  if (colon) {
    size_t pl = (size_t)(colon - spec);
    if (pl >= sizeof plat) pl = sizeof plat - 1;
    memcpy(plat, spec, pl);
    plat[pl] = '\0';
    dev = colon + 1;
  }
  for (int exact = 1; exact >= 0; exact--) {
    unsigned long seen = 0;
    int last = -1;
    for (size_t i = 0; i < n; i++) {
      int dev_ok = exact ? !strcasecmp(list[i].device_name, dev) : contains_ci(list[i].device_name, dev);
      int match = colon ? rcl__platform_matches(list[i].platform_name, plat) && dev_ok
                        : dev_ok || (!exact && rcl__platform_matches(list[i].platform_name, spec));
      if (match && seen++ == k) return (int)i;
      if (match) last = (int)i;
    }
    if (last >= 0) return -1; /* the exact matches are the candidates: fewer than k + 1 of them */
  }
  return -1;
}

/* The index spec names — "3", a name spec, or a name spec + "#k" (its k-th match, 0-based: the second of two
 * identical GPUs is "nvidia:#1") — or -1 if none. A '#' not followed by digits to the end is part of a name. */
static int spec_lookup(const rcl_device_info *list, size_t n, const char *spec) {
  char *end;
  if (isdigit((unsigned char)spec[0])) {
    unsigned long idx = strtoul(spec, &end, 10);
    if (*end == '\0') return idx < n ? (int)idx : -1;
  }
  const char *hash = strrchr(spec, '#');
  char body[256];
  if (hash && isdigit((unsigned char)hash[1]) && (size_t)(hash - spec) < sizeof body) {
    unsigned long k = strtoul(hash + 1, &end, 10);
    if (*end == '\0') {
      memcpy(body, spec, (size_t)(hash - spec));
      body[hash - spec] = '\0';
      return name_lookup(list, n, body, k);
    }
  }
  return name_lookup(list, n, spec, 0);
}

int rcl_device_find(rcl_device_info *out, const char *spec) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_device_find: NULL output");
  const char *from_env = "";
  if (!spec || !*spec) {
    spec = getenv("REPROCL_DEVICE");
    from_env = " (from REPROCL_DEVICE)";
    if (!spec || !*spec) {
      spec = "0";
      from_env = "";
    }
  }
  rcl_device_info *list;
  size_t n;
  int rc = rcl_devices(&list, &n);
  if (rc) return rc;
  if (n == 0) {
    rcl_devices_free(list);
    return rcl__fail(RCL_ERR_NOT_FOUND,
                     "no OpenCL device found (is an ICD such as pocl-opencl-icd installed? Rusticl also needs "
                     "RUSTICL_ENABLE=llvmpipe)");
  }
  int found = spec_lookup(list, n, spec);
  if (found < 0) {
    rc = rcl__fail(RCL_ERR_NOT_FOUND, "no OpenCL device matches \"%s\"%s; %zu device%s present (see `reprocl devices`)",
                   spec, from_env, n, n == 1 ? "" : "s");
    rcl_devices_free(list);
    return rc;
  }
  *out = list[found];
  rcl_devices_free(list);
  return 0;
}

static int has_ext(const char *exts, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = exts; (p = strstr(p, name)) != NULL; p += nl)
    if ((p == exts || p[-1] == ' ') && (p[nl] == ' ' || p[nl] == '\0')) return 1;
  return 0;
}

int rcl_device_profile_query(rcl_device_profile *out, cl_device_id device) {
  if (!out || !device) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_device_profile_query: NULL argument");
  rcl_device_profile *p = out;
  memset(p, 0, sizeof *p);
  p->version = RCL_DEVICE_PROFILE_VERSION;
  cl_platform_id plat;
  cl_int err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
  info_str(p->platform_name, sizeof p->platform_name, get_platform, plat, CL_PLATFORM_NAME);
  info_str(p->platform_vendor, sizeof p->platform_vendor, get_platform, plat, CL_PLATFORM_VENDOR);
  info_str(p->platform_version, sizeof p->platform_version, get_platform, plat, CL_PLATFORM_VERSION);
  info_str(p->device_name, sizeof p->device_name, get_device, device, CL_DEVICE_NAME);
  info_str(p->device_vendor, sizeof p->device_vendor, get_device, device, CL_DEVICE_VENDOR);
  info_str(p->device_version, sizeof p->device_version, get_device, device, CL_DEVICE_VERSION);
  info_str(p->driver_version, sizeof p->driver_version, get_device, device, CL_DRIVER_VERSION);
  info_str(p->opencl_c_version, sizeof p->opencl_c_version, get_device, device, CL_DEVICE_OPENCL_C_VERSION);

  cl_device_fp_config sp = 0, dp = 0;
  cl_bool little = CL_TRUE;
  struct {
    cl_device_info param;
    void *dst;
    size_t size;
  } q[] = {
      {CL_DEVICE_TYPE, &p->type, sizeof p->type},
      {CL_DEVICE_VENDOR_ID, &p->vendor_id, sizeof p->vendor_id},
      {CL_DEVICE_MAX_COMPUTE_UNITS, &p->compute_units, sizeof p->compute_units},
      {CL_DEVICE_ADDRESS_BITS, &p->address_bits, sizeof p->address_bits},
      {CL_DEVICE_MAX_WORK_GROUP_SIZE, &p->max_work_group_size, sizeof p->max_work_group_size},
      {CL_DEVICE_MAX_WORK_ITEM_SIZES, p->max_work_item_sizes, sizeof p->max_work_item_sizes},
      {CL_DEVICE_LOCAL_MEM_SIZE, &p->local_mem_size, sizeof p->local_mem_size},
      {CL_DEVICE_GLOBAL_MEM_SIZE, &p->global_mem_size, sizeof p->global_mem_size},
      {CL_DEVICE_MAX_MEM_ALLOC_SIZE, &p->max_mem_alloc_size, sizeof p->max_mem_alloc_size},
      {CL_DEVICE_SINGLE_FP_CONFIG, &sp, sizeof sp},
      {CL_DEVICE_ENDIAN_LITTLE, &little, sizeof little},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    err = clGetDeviceInfo(device, q[i].param, q[i].size, q[i].dst, NULL);
    if (err != CL_SUCCESS)
      return rcl__fail_cl(err, "clGetDeviceInfo(0x%x) on %s", (unsigned)q[i].param, p->device_name);
  }
  /* CL_DEVICE_DOUBLE_FP_CONFIG is 0 or an error on devices without fp64. */
  if (clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dp, &dp, NULL) != CL_SUCCESS) dp = 0;
  size_t elen = 0;
  char *exts = NULL;
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &elen) == CL_SUCCESS && elen > 0) {
    exts = rcl__malloc(elen + 1);
    if (!exts) return RCL_ERR_OUT_OF_MEMORY;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, elen, exts, NULL) != CL_SUCCESS) exts[0] = '\0';
    exts[elen] = '\0';
  }
  const char *e = exts ? exts : "";
  p->fp32_denormals = (sp & CL_FP_DENORM) != 0;
  p->fp32_inf_nan = (sp & CL_FP_INF_NAN) != 0;
  p->fp32_round_to_nearest = (sp & CL_FP_ROUND_TO_NEAREST) != 0;
  p->fp32_fma = (sp & CL_FP_FMA) != 0;
  p->fp32_correctly_rounded_div_sqrt = (sp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  p->fp64 = dp != 0 && has_ext(e, "cl_khr_fp64");
  p->fp64_denormals = (dp & CL_FP_DENORM) != 0;
  p->fp64_fma = (dp & CL_FP_FMA) != 0;
  p->int64_atomics = has_ext(e, "cl_khr_int64_base_atomics");
  p->little_endian = little == CL_TRUE;
  rcl__free(exts);
  /* Mesa's gallivm (llvmpipe) shares one loop limiter across all loops of a shader invocation. */
  if (strstr(p->device_name, "llvmpipe")) p->loop_iteration_limit = 65535;
  p->fp32_emulate_subnormals = !p->fp32_denormals;
  p->fp32_emulate_div_sqrt = !p->fp32_correctly_rounded_div_sqrt;

  rcl__profile_fingerprint(p);
  return 0;
}

void rcl__profile_fingerprint(rcl_device_profile *p) {
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  const char *ids[] = {p->platform_name, p->platform_version, p->device_vendor,
                       p->device_name,   p->driver_version,   p->device_version};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) rcl_sha256_update(&h, ids[i], strlen(ids[i]) + 1);
  char cu[32];
  int cul = snprintf(cu, sizeof cu, "cu=%u", (unsigned)p->compute_units);
  rcl_sha256_update(&h, cu, (size_t)cul);
  rcl_sha256_final_hex(&h, p->fingerprint);
}

/* ---- the code-generation environment ------------------------------------------------------------- */
/* Environment variables that change what a driver's compiler generates (docs/tuning.md, "Caches and the
 * driver environment"). An entry ending in '_' is a prefix, any other an exact name. Variables that only
 * pick devices, place caches or print debugging output are left out (a change of them rebuilds nothing). */
static const char *const codegen_env[] = {
    "CL_CONFIG_",             /* Intel's OpenCL CPU runtime: vectorizer, target ISA, ... */
    "POCL_VECTORIZER_",       /* PoCL: the work-group vectorizer's settings */
    "POCL_WORK_GROUP_METHOD", /* PoCL: how work-items become loops */
    "POCL_EXTRA_BUILD_FLAGS", /* PoCL: options appended to every build */
    "RUSTICL_",               /* Rusticl: features and debug switches (RUSTICL_ENABLE excluded below) */
    "LP_",                    /* llvmpipe: LP_NATIVE_VECTOR_WIDTH, LP_DEBUG, LP_PERF */
    "GALLIVM_",               /* llvmpipe's LLVM back end: GALLIVM_PERF, GALLIVM_DEBUG */
    "AMD_OCL_BUILD_OPTIONS",  /* AMD: options replacing or appended to every build */
    "AMD_OCL_BUILD_OPTIONS_APPEND",
    "CUDA_FORCE_PTX_JIT", /* NVIDIA: JIT from PTX instead of the embedded binary */
};
/* Matching names that change only which devices appear. */
static const char *const codegen_env_excluded[] = {"RUSTICL_ENABLE", "RUSTICL_DEVICE_TYPE"};

extern char **environ;

/* Whether "NAME=VALUE" is a code-generation variable. */
static int codegen_var(const char *e) {
  const char *eq = strchr(e, '=');
  size_t nl = eq ? (size_t)(eq - e) : strlen(e);
  for (size_t i = 0; i < sizeof codegen_env_excluded / sizeof codegen_env_excluded[0]; i++)
    if (strlen(codegen_env_excluded[i]) == nl && !strncmp(e, codegen_env_excluded[i], nl)) return 0;
  for (size_t i = 0; i < sizeof codegen_env / sizeof codegen_env[0]; i++) {
    size_t pl = strlen(codegen_env[i]);
    int prefix = codegen_env[i][pl - 1] == '_';
    if (prefix ? (nl > pl && !strncmp(e, codegen_env[i], pl)) : (nl == pl && !strncmp(e, codegen_env[i], pl))) return 1;
  }
  return 0;
}

/* The variables are hashed in strcmp order without sorting a copy (nothing to allocate, nothing to
 * fail): each round takes the smallest entry above the previous one. The environment holds a few dozen
 * entries and this runs once per program build. */
void rcl__codegen_env(char hex[65]) {
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  const char *prev = NULL;
  size_t count = 0;
  for (;;) {
    const char *next = NULL;
    for (char **e = environ; e && *e; e++)
      if (codegen_var(*e) && (!prev || strcmp(*e, prev) > 0) && (!next || strcmp(*e, next) < 0)) next = *e;
    if (!next) break;
    rcl_sha256_update(&h, next, strlen(next) + 1);
    prev = next;
    count++;
  }
  if (count == 0)
    hex[0] = '\0';
  else
    rcl_sha256_final_hex(&h, hex);
}

rcl_support rcl_device_profile_support(const rcl_device_profile *p, rcl_family family, rcl_dtype dtype,
                                       const char **reason) {
  const char *why = "";
  rcl_support s = RCL_SUPPORT_NATIVE;
  if (!p || (unsigned)family >= RCL_FAMILY_COUNT || rcl_dtype_size(dtype) == 0) {
    why = "invalid profile, family or dtype";
    s = RCL_SUPPORT_NONE;
  } else if (!p->little_endian) {
    why = "big-endian device: digests and host references assume little-endian data";
    s = RCL_SUPPORT_NONE;
  } else if (dtype == RCL_F64 && !p->fp64) {
    why = "no fp64 (cl_khr_fp64) on this device";
    s = RCL_SUPPORT_NONE;
  } else if (dtype == RCL_F64 && (!p->fp64_denormals)) {
    why = "fp64 without denormals is not IEEE 754 binary64";
    s = RCL_SUPPORT_NONE;
  } else if (dtype == RCL_F32 && (!p->fp32_inf_nan || !p->fp32_round_to_nearest)) {
    why = "fp32 without round-to-nearest or inf/NaN";
    s = RCL_SUPPORT_NONE;
  } else if (dtype == RCL_F32 && (p->fp32_emulate_subnormals || p->fp32_emulate_div_sqrt)) {
    why = p->fp32_emulate_subnormals && p->fp32_emulate_div_sqrt
              ? "fp32 subnormals and correctly rounded div/sqrt are not guaranteed: emulated exactly"
          : p->fp32_emulate_subnormals ? "fp32 subnormals are not guaranteed: emulated exactly"
                                       : "fp32 div/sqrt are not correctly rounded: emulated exactly";
    s = RCL_SUPPORT_EMULATED;
  }
  /* MD's symmetric force path needs 64-bit atomics; the gather path does not, so the family runs. */
  if (reason) *reason = why;
  return s;
}
