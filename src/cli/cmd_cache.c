/* reprocl cache: where the caches are, what the tuning cache holds (readably), and clearing it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

/* The device="..." part of a record's comment. */
static void device_of(char *buf, size_t size, const char *comment) {
  const char *p = strstr(comment, "device=\"");
  snprintf(buf, size, "?");
  if (!p) return;
  p += 8;
  const char *e = strchr(p, '"');
  size_t l = e ? (size_t)(e - p) : strlen(p);
  if (l >= size) l = size - 1;
  memcpy(buf, p, l);
  buf[l] = '\0';
}

/* The tuning records of dir (of the device with fingerprint fp, when not ""), as JSON or readably. */
static int cache_list(const char *dir, const char *fp, int json) {
  rcl_cache_entry *list = NULL;
  size_t n = 0, skipped = 0;
  if (rcl_cache_list(&list, &n, &skipped, dir, *fp ? fp : NULL)) return cli_fail("reading %s", dir);
  if (json) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
      char dn[160];
      device_of(dn, sizeof dn, list[i].comment);
      json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:I}", "device", dn, "fingerprint",
                                           list[i].fingerprint, "library", list[i].lib, "kernel", list[i].kernel,
                                           "dtype", list[i].dtype, "size_log2", (json_int_t)list[i].size_log2, "params",
                                           list[i].params, "measurements", list[i].comment, "source_hash", list[i].src,
                                           "options_hash", list[i].opts, "contract", (json_int_t)list[i].contract));
    }
    cli_json_print(json_pack("{s:s,s:I,s:I,s:o}", "cache_dir", dir, "records", (json_int_t)n, "skipped",
                             (json_int_t)skipped, "entries", arr));
  } else {
    printf("%s: %zu tuning record%s%s\n", dir, n, n == 1 ? "" : "s", *fp ? " for this device" : "");
    if (skipped) printf("(%zu corrupt, truncated or foreign line%s ignored)\n", skipped, skipped == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
      char dn[160];
      device_of(dn, sizeof dn, list[i].comment);
      const char *m = strstr(list[i].comment, "device=");
      int ml = m ? (int)(m - list[i].comment) : (int)strlen(list[i].comment);
      while (ml > 0 && list[i].comment[ml - 1] == ' ') ml--;
      printf("  %-32.32s %.8s  %-20s %-4s 2^%-3u  %s\n      %.*s\n", dn, list[i].fingerprint, list[i].kernel,
             list[i].dtype, list[i].size_log2, list[i].params, ml, list[i].comment);
    }
  }
  free(list);
  return 0;
}

/* Removes the tuning records of dir (of one device when fp is not "", else every binary too). */
static int cache_clear(const char *dir, const char *fp, const char *devname, int json) {
  size_t removed = 0;
  if (rcl_cache_clear(dir, *fp ? fp : NULL, &removed)) return cli_fail("clearing %s", dir);
  if (json)
    cli_json_print(json_pack("{s:s,s:I}", "cache_dir", dir, "removed", (json_int_t)removed));
  else
    printf("removed %zu %s from %s%s%s\n", removed, *fp ? "tuning records" : "records and binaries", dir,
           *fp ? " for " : "", devname);
  return 0;
}

/* --device: the fingerprint of that device (a driver upgrade gives a new one) and its name; "" for all. */
static int device_fingerprint(char fp[65], char devname[256], const char *device) {
  *fp = *devname = '\0';
  if (!device || !strcmp(device, "all")) return 0;
  cli_devices d;
  int rc = cli_devices_open(&d, device, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  snprintf(fp, 65, "%s", rcl_context_profile(d.ctx[0])->fingerprint);
  snprintf(devname, 256, "%s", d.name[0]);
  cli_devices_close(&d);
  return 0;
}

int cmd_cache(int argc, char **argv) {
  const char *device = NULL, *action = NULL;
  int json = 0;
  const cli_opt opts[] = {CLI_OPT_DEVICE(&device, "all"), CLI_OPT_JSON(&json), CLI_END};
  const cli_cmd_spec spec = {
      "cache",
      "path|list|clear [--device D|all] [--json]",
      "path   the cache directory ($REPROCL_CACHE_DIR, else $XDG_CACHE_HOME/reprocl, else ~/.cache/reprocl)\n"
      "list   the tuning records (for one device with --device), with the measurements behind each\n"
      "clear  removes the tuning records (of one device with --device; without it also every cached\n"
      "       program binary)",
      opts,
      NULL,
      1,
      1};
  CLI_PARSE(&spec, argc, argv, &action, NULL);
  if (strcmp(action, "path") && strcmp(action, "list") && strcmp(action, "clear"))
    return cli_error("unknown action \"%s\" (expected path, list or clear)", action);
  char *dir = NULL, *why = NULL;
  if (rcl_cache_default_dir(&dir, &why)) return cli_fail("cache directory");
  int rc = 0;
  char fp[65], devname[256];
  if (!strcmp(action, "path")) {
    if (json)
      cli_json_print(json_pack("{s:s?,s:s?}", "cache_dir", dir, "warning", why));
    else if (dir)
      printf("%s\n", dir);
    else
      printf("(none: %s)\n", why);
  } else if (!dir)
    rc = cli_error("%s", why ? why : "no cache directory");
  else if (!(rc = device_fingerprint(fp, devname, device)))
    rc = !strcmp(action, "clear") ? cache_clear(dir, fp, devname, json) : cache_list(dir, fp, json);
  free(dir);
  free(why);
  return rc;
}
