/* reprocl devices: every platform and device, with the profile reprocl derives from what it reports. */
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static const char *yn(int v) { return v ? "yes" : "no"; }

static const rcl_dtype verdict_dts[] = {RCL_F32, RCL_F64};

/* The first-use self-test verdicts of ctx (running the self-tests not cached yet), as text lines.
 * Returns 0, or the status of the first verdict that could not be had (shown as "error"; the lines stop
 * there and rcl_error_last() keeps its message). */
int cli_verdicts_print(rcl_context *ctx) {
  int first = 0;
  /* Stops at the first error, whose message the caller reports. */
  for (int f = 0; f < RCL_FAMILY_COUNT && !first; f++) {
    printf("    self-test %-8s", rcl_family_name((rcl_family)f));
    char why[2][700] = {"", ""};
    for (int d = 0; d < 2 && !first; d++) {
      rcl_verdict v = RCL_VERDICT_NOT_TESTED;
      const char *reason = "";
      int rc = rcl_context_verdict(&v, &reason, ctx, (rcl_family)f, verdict_dts[d]);
      if (rc && !first) first = rc;
      printf(" %s: %-*s", rcl_dtype_name(verdict_dts[d]), d ? 0 : 30, rc ? "error" : rcl_verdict_name(v));
      if (rc || v == RCL_VERDICT_CONSERVATIVE || v == RCL_VERDICT_UNSUPPORTED)
        snprintf(why[d], sizeof why[d], "%s", rc ? rcl_error_last() : reason);
    }
    printf("\n");
    for (int d = 0; d < 2; d++)
      if (*why[d]) printf("      %s %s: %s\n", rcl_family_name((rcl_family)f), rcl_dtype_name(verdict_dts[d]), why[d]);
  }
  return first;
}

/* The same as JSON: {"reduce": {"f32": {"verdict": "...", "reason": "..."}, ...}, ...} in *out. */
int cli_verdicts_json(json_t **out, rcl_context *ctx) {
  json_t *o = json_object();
  int first = 0;
  for (int f = 0; f < RCL_FAMILY_COUNT && !first; f++) {
    json_t *fam = json_object();
    for (int d = 0; d < 2 && !first; d++) {
      rcl_verdict v = RCL_VERDICT_NOT_TESTED;
      const char *why = "";
      int rc = rcl_context_verdict(&v, &why, ctx, (rcl_family)f, verdict_dts[d]);
      if (rc && !first) first = rc;
      json_object_set_new(
          fam, rcl_dtype_name(verdict_dts[d]),
          json_pack("{s:s,s:s}", "verdict", rc ? "error" : rcl_verdict_name(v), "reason", rc ? rcl_error_last() : why));
    }
    json_object_set_new(o, rcl_family_name((rcl_family)f), fam);
  }
  *out = o;
  return first;
}

/* A reproducible-mode context on device i for its verdicts. */
static int verdict_ctx(rcl_context **ctx, size_t i) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  char spec[32];
  snprintf(spec, sizeof spec, "%zu", i);
  o.device = spec;
  o.profiling = 0;
  *ctx = NULL;
  return rcl_context_create(ctx, &o);
}

/* Device i's profile p (and its self-test verdicts) as a JSON object appended to arr. */
static int device_json(json_t *arr, const rcl_device_profile *p, size_t i, int selftest) {
  int rc = 0;
  json_t *o = cli_profile_json(p);
  json_object_set_new(o, "index", json_integer((json_int_t)i));
  json_array_append_new(arr, o);
  rcl_context *ctx = NULL;
  json_t *st = NULL;
  if (selftest && (verdict_ctx(&ctx, i) || cli_verdicts_json(&st, ctx)))
    rc = cli_fail("device %zu: the self-test verdicts", i);
  if (st) json_object_set_new(o, "selftest", st);
  rcl_context_free(ctx);
  return rc;
}

/* Device i's profile p as text: identity, limits, guarantees, and how each family runs on it. */
static void device_profile_print(const rcl_device_profile *p, size_t i) {
  printf("[%zu] %s: %s\n", i, p->platform_name, p->device_name);
  printf("    platform %s; device %s; driver %s; %s\n", p->platform_version, p->device_version, p->driver_version,
         p->opencl_c_version);
  printf("    %u compute units, work-group <= %zu, local %llu KiB, global %llu MiB, max alloc %llu MiB\n",
         p->compute_units, p->max_work_group_size, (unsigned long long)p->local_mem_size / 1024,
         (unsigned long long)p->global_mem_size >> 20, (unsigned long long)p->max_mem_alloc_size >> 20);
  printf("    fp32: denormals %s, correctly rounded div/sqrt %s, fma %s | fp64: %s%s | int64 atomics %s\n",
         yn(p->fp32_denormals), yn(p->fp32_correctly_rounded_div_sqrt), yn(p->fp32_fma), yn(p->fp64),
         p->fp64 ? (p->fp64_denormals ? " (denormals)" : " (no denormals)") : "", yn(p->int64_atomics));
  if (p->loop_iteration_limit)
    printf("    driver ends loops after %llu iterations per work-item: grids are sized to stay below\n",
           (unsigned long long)p->loop_iteration_limit);
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  for (int f = 0; f < RCL_FAMILY_COUNT; f++) {
    printf("    %-8s", rcl_family_name((rcl_family)f));
    for (int d = 0; d < 2; d++) {
      const char *why;
      rcl_support s = rcl_device_profile_support(p, (rcl_family)f, dts[d], &why);
      printf(" %s: %-11s", rcl_dtype_name(dts[d]), rcl_support_name(s));
      if (*why && d == 1)
        printf(" (%s)", why);
      else if (*why)
        printf(" (%s)\n%*s", why, 12, "");
    }
    printf("\n");
  }
}

/* Device i as text: its profile p, then its self-test verdicts. */
static int device_text(const rcl_device_profile *p, size_t i, int selftest) {
  int rc = 0;
  device_profile_print(p, i);
  rcl_context *ctx = NULL;
  if (selftest && (verdict_ctx(&ctx, i) || cli_verdicts_print(ctx)))
    rc = cli_fail("device %zu: the self-test verdicts", i);
  rcl_context_free(ctx);
  return rc;
}

int cmd_devices(int argc, char **argv) {
  int json = 0, no_selftest = 0;
  const char *device = "all";
  const cli_opt opts[] = {CLI_OPT_DEVICE(&device, "all"),
                          CLI_FLAG_S('j', "json", &json, "print the list as JSON on stdout"),
                          CLI_FLAG_S('n', "no-selftest", &no_selftest, "leave the self-test verdicts out"), CLI_END};
  const cli_cmd_spec spec = {
      "devices",
      "[--device D|all] [--json] [--no-selftest]",
      "Lists every OpenCL platform and device (or the one --device names) with what it guarantees (fp32/fp64\n"
      "denormals, correctly rounded div/sqrt, FMA, int64 atomics, OpenCL C version, driver) and therefore how each\n"
      "kernel family runs on it bit-exactly: native, emulated (exact integer fallbacks), or unsupported.\n"
      "Then each family's first-use self-test verdict per dtype (docs/selftest.md): verified, verified\n"
      "(conservative build), unsupported with the inputs that differed, or not tested; self-tests not in\n"
      "the cache run now. --no-selftest leaves them out.",
      opts,
      NULL,
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  int selftest = !no_selftest;
  size_t only = SIZE_MAX; /* all devices */
  if (strcmp(device, "all")) {
    rcl_device_info info;
    if (rcl_device_find(&info, device)) return cli_fail("--device %s", device);
    only = info.index;
  }
  rcl_device_info *list;
  size_t n;
  if (rcl_devices(&list, &n)) return cli_fail("cannot list OpenCL devices");
  json_t *arr = json_array();
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (only != SIZE_MAX && i != only) continue;
    rcl_device_profile p;
    if (rcl_device_profile_query(&p, list[i].device))
      rc = cli_fail("cannot read the profile of device %zu", i);
    else
      rc = json ? device_json(arr, &p, i, selftest) : device_text(&p, i, selftest);
  }
  if (!rc && json) {
    json_t *top = json_pack("{s:s,s:I,s:o}", "reprocl", REPROCL_VERSION_STRING, "count",
                            (json_int_t)json_array_size(arr), "devices", arr);
    cli_json_print(top);
    arr = NULL;
  }
  if (!rc && !json && n == 0)
    printf("no OpenCL device found (install pocl-opencl-icd; Rusticl needs RUSTICL_ENABLE=llvmpipe)\n");
  json_decref(arr);
  rcl_devices_free(list);
  return rc;
}
