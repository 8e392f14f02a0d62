/* reprocl devices: every platform and device, with the profile reprocl derives from what it reports. */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl devices [--json]\n\n"
         "Lists every OpenCL platform and device with what it guarantees (fp32/fp64 denormals, correctly\n"
         "rounded div/sqrt, FMA, int64 atomics, OpenCL C version, driver) and therefore how each kernel\n"
         "family runs on it bit-exactly: native, emulated (exact integer fallbacks), or unsupported.\n");
}

static const char *yn(int v) { return v ? "yes" : "no"; }

int cmd_devices(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int json = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
    if (c == 'j') json = 1;
    else if (c == 'h') {
      help();
      return 0;
    } else return 2;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  rcl_device_info *list;
  size_t n;
  if (rcl_devices(&list, &n)) return cli_fail("cannot list OpenCL devices");
  json_t *arr = json_array();
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    rcl_device_profile p;
    if (rcl_device_profile_query(&p, list[i].device)) {
      rc = cli_fail("cannot read the profile of device %zu", i);
      break;
    }
    if (json) {
      json_t *o = cli_profile_json(&p);
      json_object_set_new(o, "index", json_integer((json_int_t)i));
      json_array_append_new(arr, o);
      continue;
    }
    printf("[%zu] %s: %s\n", i, p.platform_name, p.device_name);
    printf("    platform %s; device %s; driver %s; %s\n", p.platform_version, p.device_version, p.driver_version,
           p.opencl_c_version);
    printf("    %u compute units, work-group <= %zu, local %llu KiB, global %llu MiB, max alloc %llu MiB\n",
           p.compute_units, p.max_work_group_size, (unsigned long long)p.local_mem_size / 1024,
           (unsigned long long)p.global_mem_size >> 20, (unsigned long long)p.max_mem_alloc_size >> 20);
    printf("    fp32: denormals %s, correctly rounded div/sqrt %s, fma %s | fp64: %s%s | int64 atomics %s\n",
           yn(p.fp32_denormals), yn(p.fp32_correctly_rounded_div_sqrt), yn(p.fp32_fma), yn(p.fp64),
           p.fp64 ? (p.fp64_denormals ? " (denormals)" : " (no denormals)") : "", yn(p.int64_atomics));
    if (p.loop_iteration_limit)
      printf("    driver ends loops after %llu iterations per work-item: grids are sized to stay below\n",
             (unsigned long long)p.loop_iteration_limit);
    static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
    for (int f = 0; f < RCL_FAMILY_COUNT; f++) {
      printf("    %-8s", rcl_family_name((rcl_family)f));
      for (int d = 0; d < 2; d++) {
        const char *why;
        rcl_support s = rcl_device_profile_support(&p, (rcl_family)f, dts[d], &why);
        printf(" %s: %-11s", rcl_dtype_name(dts[d]), rcl_support_name(s));
        if (*why && d == 1) printf(" (%s)", why);
        else if (*why) printf(" (%s)\n%*s", why, 12, "");
      }
      printf("\n");
    }
  }
  if (!rc && json) {
    json_t *top = json_pack("{s:s,s:I,s:o}", "reprocl", REPROCL_VERSION_STRING, "count", (json_int_t)n, "devices", arr);
    cli_json_print(top);
    arr = NULL;
  }
  if (!rc && !json && n == 0)
    printf("no OpenCL device found (install pocl-opencl-icd; Rusticl needs RUSTICL_ENABLE=llvmpipe)\n");
  json_decref(arr);
  rcl_devices_free(list);
  return rc;
}
