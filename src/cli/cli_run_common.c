/* Shared pieces of the commands that run a computation on the devices (see cli_run_common.h). */
#include "cli_run_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A CLI_VAL parser for a library name parser rcl_<x>_parse(type *, const char *). */
#define NAME_PARSER(fn, type, parse)                                                                                   \
  int fn(void *target, const char *opt, const char *value) {                                                           \
    return parse((type *)target, value) ? cli_error("%s: %s", opt, rcl_error_last()) : 0;                              \
  }
NAME_PARSER(cli_opt_reduce_op, rcl_reduce_op, rcl_reduce_op_parse)
NAME_PARSER(cli_opt_reduce_mode, rcl_reduce_mode, rcl_reduce_mode_parse)
NAME_PARSER(cli_opt_reduce_variant, rcl_reduce_variant, rcl_reduce_variant_parse)
NAME_PARSER(cli_opt_gen_kind, rcl_gen_kind, rcl_gen_kind_parse)
NAME_PARSER(cli_opt_spmv_contract, rcl_spmv_contract, rcl_spmv_contract_parse)
NAME_PARSER(cli_opt_spmv_variant, rcl_spmv_variant, rcl_spmv_variant_parse)
NAME_PARSER(cli_opt_boundary, rcl_boundary, rcl_boundary_parse)
NAME_PARSER(cli_opt_stencil_variant, rcl_stencil_variant, rcl_stencil_variant_parse)
NAME_PARSER(cli_opt_md_mixing, rcl_md_mixing, rcl_md_mixing_parse)
NAME_PARSER(cli_opt_md_path, rcl_md_path, rcl_md_path_parse)

int cli_opt_dims(void *target, const char *opt, const char *value) {
  size_t *d = target;
  return cli_parse_dims(&d[0], &d[1], opt, value);
}

int cli_fail_on(const char *what, const char *device) { return cli_fail("%s on %s", what, device); }

void cli_tally_init(cli_tally *t) {
  memset(t, 0, sizeof *t);
  t->all_same = 1;
}

int cli_tally_add(cli_tally *t, const char *key, int matches) {
  t->ran++;
  t->agree += matches != 0;
  if (t->ran == 1) {
    snprintf(t->first, sizeof t->first, "%s", key);
    return 1;
  }
  if (strcmp(t->first, key)) t->all_same = 0;
  return 0;
}

int cli_tally_ok(const cli_tally *t) { return t->ran > 0 && t->agree == t->ran && t->all_same; }

int cli_tally_status(const cli_tally *t) {
  return cli_tally_ok(t) ? CLI_EXIT_OK : t->ran == 0 ? CLI_EXIT_FAILED : CLI_EXIT_FINDING;
}

int cli_tally_write(const cli_tally *t, const char *path, const void *data, size_t bytes) {
  if (!path) return 0;
  if (!t->ran) return cli_error("--out: no device ran, nothing to write");
  return cli_write_file(path, data, bytes);
}

void cli_tally_print(const cli_tally *t, size_t devices) {
  printf("%s: %zu of %zu device(s) ran, %zu agree with the reference%s\n", cli_tally_ok(t) ? "AGREE" : "DISAGREE",
         t->ran, devices, t->agree, t->unsupported ? " (the others cannot run this dtype bit-exactly)" : "");
}

void cli_run_init(cli_run *r) {
  memset(r, 0, sizeof *r);
  r->jdevs = json_array();
  cli_tally_init(&r->tally);
}

int cli_run_open(cli_run *r, const char *spec, int native) {
  int rc = cli_devices_open(&r->devs, spec, RCL_MODE_REPRODUCIBLE);
  if (!rc && native) rc = cli_devices_clone(&r->ndevs, &r->devs, RCL_MODE_NATIVE);
  return rc;
}

int cli_run_each(cli_run *r, rcl_family family, rcl_dtype dt, int json, int width, cli_run_fn fn, void *job) {
  int rc = 0;
  for (size_t i = 0; i < r->devs.count && !rc; i++) {
    json_t *jd;
    if (!cli_device_entry(&jd, r->jdevs, &r->devs, i, family, dt, json, width))
      r->tally.unsupported++;
    else
      rc = fn(job, r, jd, i);
  }
  return rc;
}

void cli_run_close(cli_run *r) {
  json_decref(r->jdevs);
  cli_devices_close(&r->ndevs);
  cli_devices_close(&r->devs);
  memset(r, 0, sizeof *r);
}

/* ---- MD's options --------------------------------------------------------------------------------------- */

int cli_md_args_check(cli_md_args *a, int rc) {
  if (!rc && a->cells_s) rc = cli_parse_size(&a->cells, "--cells", a->cells_s);
  if (!rc && a->density_s) rc = cli_parse_double(&a->density, "--density", a->density_s);
  if (!rc && a->temp_s) rc = cli_parse_double(&a->temp, "--temp", a->temp_s);
  if (!rc && a->mixing_s) rc = cli_opt_md_mixing(&a->mixing, "--mixing", a->mixing_s);
  if (rc) return rc;
  if (!a->input == !a->lattice) return cli_error("give either --input FILE or --lattice fcc|bcc|sc (see --help)");
  if (a->lattice && (!a->cells_s || !a->density_s || !a->temp_s))
    return cli_error("--lattice needs --cells N, --density R and --temp T");
  if (a->input && (a->cells_s || a->density_s || a->temp_s))
    return cli_error("--cells, --density and --temp describe a --lattice, not an --input file");
  if (!(a->dtime > 0) || !isfinite(a->dtime)) return cli_error("--dt %g is not a positive time step", a->dtime);
  return 0;
}

int cli_md_system(rcl_md_system **sys, rcl_md_lj *lj, char *what, size_t what_size, const cli_md_args *a) {
  int rc;
  if (a->input) {
    if ((rc = rcl_md_read(sys, lj, a->input)) != 0) return rc;
    snprintf(what, what_size, "%s", a->input);
  } else {
    if ((rc = rcl_md_lattice(sys, a->lattice, a->cells, a->density, a->temp, a->seed)) != 0) return rc;
    snprintf(what, what_size, "lattice %s %zu^3, density %g, temperature %g, seed %llu", a->lattice, a->cells,
             a->density, a->temp, (unsigned long long)a->seed);
  }
  lj->cutoff = a->cutoff;
  lj->shift = a->shift;
  if (a->mixing_s) lj->mixing = a->mixing;
  return 0;
}

const char cli_md_thermo_head[] = "        Step            PE/N            KE/N          Etot/N            Temp"
                                  "           Press\n";

void cli_md_thermo_line(FILE *f, const rcl_md_thermo *t) {
  double n = (double)t->natoms;
  fprintf(f, "  %10zu %15.8f %15.8f %15.8f %15.8f %15.8f\n", t->step, t->pe / n, t->ke / n, t->etotal / n,
          t->temperature, t->pressure);
}
