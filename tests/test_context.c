/* Contexts and devices: selection by index, name and REPROCL_DEVICE; wrapping the caller's OpenCL
 * objects without creating new ones; profiles (including the loop-limit quirk, verified by a probe);
 * REPROCL_KERNEL_DIR; thread-local errors. */
#include <pthread.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>

#include "testlib.h"

START_TEST(device_selection) {
  rcl_device_info *list, d;
  size_t n;
  rt_ok(rcl_devices(&list, &n));
  ck_assert_uint_eq(n, rt_ndevices());
  for (size_t i = 0; i < n; i++) {
    char spec[300];
    snprintf(spec, sizeof spec, "%zu", i);
    rt_ok(rcl_device_find(&d, spec));
    ck_assert_ptr_eq(d.device, list[i].device);
    /* "platform:device" substrings, case-insensitive, find the first match. */
    snprintf(spec, sizeof spec, "%.6s:%.8s", list[i].platform_name, list[i].device_name);
    for (char *p = spec; *p; p++) *p = (char)(i % 2 ? toupper((unsigned char)*p) : *p);
    rt_ok(rcl_device_find(&d, spec));
    ck_assert_str_eq(d.platform_name, list[i].platform_name);
    setenv("REPROCL_DEVICE", list[i].device_name, 1);
    rt_ok(rcl_device_find(&d, NULL));
    ck_assert_str_eq(d.device_name, list[i].device_name);
  }
  setenv("REPROCL_DEVICE", "no-such-device-xyz", 1);
  rt_fails(rcl_device_find(&d, NULL), RCL_ERR_NOT_FOUND, "no-such-device-xyz\" (from REPROCL_DEVICE)");
  unsetenv("REPROCL_DEVICE");
  rt_fails(rcl_device_find(&d, "99"), RCL_ERR_NOT_FOUND, "\"99\"");
  /* The alias "pocl" names PoCL's platform, whose official name does not contain it. */
  for (size_t i = 0; i < n; i++)
    if (strstr(list[i].platform_name, "Portable Computing Language")) {
      rt_ok(rcl_device_find(&d, "pocl"));
      ck_assert_str_eq(d.platform_name, "Portable Computing Language");
      rt_ok(rcl_device_find(&d, "POCL:"));
      break;
    }
  rt_fails(rcl_device_find(&d, "nope:"), RCL_ERR_NOT_FOUND, "nope:");
  /* "spec#k": the k-th match (0-based) — ":" matches every device, "PLATFORM:" its platform's in list order. */
  for (size_t i = 0; i < n; i++) {
    char spec[300];
    size_t k = 0;
    for (size_t j = 0; j < i; j++) k += !strcmp(list[j].platform_name, list[i].platform_name);
    snprintf(spec, sizeof spec, ":#%zu", i);
    rt_ok(rcl_device_find(&d, spec));
    ck_assert_ptr_eq(d.device, list[i].device);
    snprintf(spec, sizeof spec, "%s:#%zu", list[i].platform_name, k);
    rt_ok(rcl_device_find(&d, spec));
    ck_assert_ptr_eq(d.device, list[i].device);
  }
  char past[32];
  snprintf(past, sizeof past, ":#%zu", n);
  rt_fails(rcl_device_find(&d, past), RCL_ERR_NOT_FOUND, past);
  /* A '#' without digits to the end is part of a name (no device is named so here). */
  rt_fails(rcl_device_find(&d, "pocl:#"), RCL_ERR_NOT_FOUND, "\"pocl:#\"");
  rt_fails(rcl_device_find(&d, "pocl:#1x"), RCL_ERR_NOT_FOUND, "\"pocl:#1x\"");
  rt_fails(rcl_device_find(NULL, "0"), RCL_ERR_INVALID_ARG, "NULL");
  rcl_devices_free(list);
}
END_TEST

START_TEST(profile_is_complete) {
  const rcl_device_profile *p = rcl_context_profile(rt_ctx(_i));
  ck_assert_uint_eq(p->version, RCL_DEVICE_PROFILE_VERSION);
  ck_assert_str_ne(p->platform_name, "");
  ck_assert_str_ne(p->device_name, "");
  ck_assert_str_ne(p->driver_version, "");
  ck_assert_uint_eq(strlen(p->fingerprint), 64);
  ck_assert_uint_ge(p->compute_units, 1);
  ck_assert_uint_ge(p->max_work_group_size, 1);
  /* Emulation follows exactly from what the device reports. */
  ck_assert_int_eq(p->fp32_emulate_subnormals, !p->fp32_denormals);
  ck_assert_int_eq(p->fp32_emulate_div_sqrt, !p->fp32_correctly_rounded_div_sqrt);
  const char *why;
  rcl_support s = rcl_device_profile_support(p, RCL_FAMILY_REDUCE, RCL_F64, &why);
  ck_assert_int_eq(s == RCL_SUPPORT_NONE, !p->fp64 || !p->fp64_denormals);
  if (s == RCL_SUPPORT_NONE) ck_assert_ptr_nonnull(strstr(why, "fp64"));
  s = rcl_device_profile_support(p, RCL_FAMILY_REDUCE, RCL_F32, &why);
  ck_assert_int_eq(s, (p->fp32_emulate_subnormals || p->fp32_emulate_div_sqrt) ? RCL_SUPPORT_EMULATED
                                                                               : RCL_SUPPORT_NATIVE);
  /* The fingerprint is a function of the identity: querying again gives the same one. */
  rcl_device_profile again;
  rt_ok(rcl_device_profile_query(&again, rcl_context_cl_device(rt_ctx(_i))));
  ck_assert_str_eq(again.fingerprint, p->fingerprint);
}
END_TEST

/* The profile's loop limit is the driver's real behaviour: a loop of 100000 iterations completes
 * where the profile says there is no limit and stops exactly at the limit where it says there is. */
START_TEST(loop_limit_matches_driver) {
  rcl_context *c = rt_ctx(_i);
  const char *src = "__kernel void count(__global uint *o, uint n) {\n"
                    "  uint k = 0;\n"
                    "  for (uint i = 0; i < n; i++) k += 1u + (o[1] & 0u);\n"
                    "  o[0] = k;\n"
                    "}\n";
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rcl_program *p;
  rt_ok(rcl_program_build(&p, c, src, 0, &po));
  cl_kernel k;
  rt_ok(rcl_program_create_kernel(&k, p, "count"));
  cl_int err;
  cl_uint zero[2] = {0, 0}, got[2], n = 100000;
  cl_mem m = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_COPY_HOST_PTR, sizeof zero, zero, &err);
  clSetKernelArg(k, 0, sizeof m, &m);
  clSetKernelArg(k, 1, sizeof n, &n);
  size_t one = 1;
  ck_assert_int_eq(clEnqueueNDRangeKernel(rcl_context_cl_queue(c), k, 1, NULL, &one, &one, 0, NULL, NULL), CL_SUCCESS);
  clEnqueueReadBuffer(rcl_context_cl_queue(c), m, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL);
  cl_ulong lim = rcl_context_profile(c)->loop_iteration_limit;
  rt_note("%s: a 100000-iteration loop ran %u iterations (profile limit %llu)", rt_device_name(_i), got[0],
          (unsigned long long)lim);
  if (lim == 0)
    ck_assert_uint_eq(got[0], n);
  else
    ck_assert_uint_le(got[0], lim);
  clReleaseMemObject(m);
  clReleaseKernel(k);
  rcl_program_free(p);
}
END_TEST

/* Wrapping the caller's objects creates no second context or queue: the wrapped context hands back the
 * caller's very objects and works with them, with or without a queue. */
START_TEST(wrap_uses_callers_objects) {
  rcl_device_info d;
  char spec[16];
  snprintf(spec, sizeof spec, "%d", _i);
  rt_ok(rcl_device_find(&d, spec));
  cl_int err;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d.platform, 0};
  cl_context mine = clCreateContext(props, 1, &d.device, NULL, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_command_queue q = clCreateCommandQueue(mine, d.device, 0, &err);
  /* No assertion on CL_CONTEXT_REFERENCE_COUNT: the spec calls it immediately stale, and Rusticl keeps
   * internal references that it drops later. Leaks are checked under valgrind and LeakSanitizer. */
  rcl_context *c;
  rt_ok(rcl_context_wrap(&c, mine, d.device, q, NULL));
  ck_assert_ptr_eq(rcl_context_cl_context(c), mine);
  ck_assert_ptr_eq(rcl_context_cl_queue(c), q);
  float x[3] = {1, 2, 4}, r = 0;
  rt_ok(rcl_sum_f32(&r, c, x, 3, NULL));
  ck_assert_float_eq(r, 7.0f);
  rcl_context *native;
  rt_ok(rcl_context_clone(&native, c, RCL_MODE_NATIVE));
  ck_assert_int_eq(rcl_context_mode(native), RCL_MODE_NATIVE);
  ck_assert_ptr_eq(rcl_context_cl_context(native), mine);
  rcl_context_free(native);
  rcl_context_free(c);
  /* Without a queue: host-array calls refuse, enqueue calls need one. */
  rt_ok(rcl_context_wrap(&c, mine, d.device, NULL, NULL));
  rt_fails(rcl_sum_f32(&r, c, x, 3, NULL), RCL_ERR_INVALID_ARG, "no queue");
  cl_mem bx = clCreateBuffer(mine, CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
  cl_mem br = clCreateBuffer(mine, 0, 4, NULL, &err);
  rt_fails(rcl_reduce_enqueue(br, 0, c, RCL_OP_SUM, RCL_F32, 3, bx, 0, NULL, 0, NULL, NULL), RCL_ERR_INVALID_ARG,
           "no command queue");
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  rt_ok(rcl_reduce_enqueue(br, 0, c, RCL_OP_SUM, RCL_F32, 3, bx, 0, NULL, 0, NULL, &qa));
  clEnqueueReadBuffer(q, br, CL_TRUE, 0, 4, &r, 0, NULL, NULL);
  ck_assert_float_eq(r, 7.0f);
  rcl_context_free(c);
  /* A queue of another context is refused. */
  cl_context other = clCreateContext(props, 1, &d.device, NULL, NULL, &err);
  cl_command_queue oq = clCreateCommandQueue(other, d.device, 0, &err);
  rt_fails(rcl_context_wrap(&c, mine, d.device, oq, NULL), RCL_ERR_INVALID_ARG, "another context");
  rt_fails(rcl_context_wrap(&c, NULL, d.device, NULL, NULL), RCL_ERR_INVALID_ARG, "required");
  clReleaseCommandQueue(oq);
  clReleaseContext(other);
  clReleaseMemObject(bx);
  clReleaseMemObject(br);
  clReleaseCommandQueue(q);
  clReleaseContext(mine);
}
END_TEST

START_TEST(bad_context_options) {
  rcl_context *c;
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.version = 42;
  rt_fails(rcl_context_create(&c, &o), RCL_ERR_INVALID_ARG, "version");
  o = (rcl_context_options)RCL_CONTEXT_OPTIONS_INIT;
  o.mode = (rcl_mode)9;
  rt_fails(rcl_context_create(&c, &o), RCL_ERR_INVALID_ARG, "mode");
  o = (rcl_context_options)RCL_CONTEXT_OPTIONS_INIT;
  o.device = "definitely-not-a-device";
  rt_fails(rcl_context_create(&c, &o), RCL_ERR_NOT_FOUND, "definitely-not-a-device");
  setenv("REPROCL_TUNING", "sometimes", 1);
  rt_fails(rcl_context_create(&c, NULL), RCL_ERR_INVALID_ARG, "REPROCL_TUNING");
  unsetenv("REPROCL_TUNING");
  rt_fails(rcl_context_create(NULL, NULL), RCL_ERR_INVALID_ARG, "NULL");
}
END_TEST

/* REPROCL_KERNEL_DIR loads kernels from disk: the source tree gives the same bits, a wrong directory a
 * clear error naming the file. */
START_TEST(kernel_dir_override) {
  char spec[16];
  snprintf(spec, sizeof spec, "%d", _i);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = spec;
  float x[5000], a, b;
  rt_fill(x, RCL_F32, 5000, "wide", 9);
  rt_ok(rcl_sum_f32(&a, rt_ctx(_i), x, 5000, NULL));
  rcl_context *c;
  setenv("REPROCL_KERNEL_DIR", REPROCL_SOURCE_DIR "/cl", 1);
  rt_ok(rcl_context_create(&c, &o));
  rt_ok(rcl_sum_f32(&b, c, x, 5000, NULL));
  ck_assert_mem_eq(&a, &b, 4);
  rcl_context_free(c);
  setenv("REPROCL_KERNEL_DIR", "/nonexistent/reprocl-kernels", 1);
  rt_ok(rcl_context_create(&c, &o));
  rt_fails(rcl_sum_f32(&b, c, x, 5000, NULL), RCL_ERR_IO, "/nonexistent/reprocl-kernels/");
  rcl_context_free(c);
  unsetenv("REPROCL_KERNEL_DIR");
}
END_TEST

static void *fail_in_thread(void *arg) {
  (void)arg;
  rcl_device_info d;
  int rc = rcl_device_find(&d, "thread-local-check");
  return (void *)(intptr_t)(rc == RCL_ERR_NOT_FOUND && strstr(rcl_error_last(), "thread-local-check") != NULL);
}

START_TEST(errors_are_thread_local) {
  rcl_error_clear();
  ck_assert_str_eq(rcl_error_last(), "");
  ck_assert_int_eq(rcl_error_last_status(), RCL_OK);
  pthread_t t;
  void *ok;
  pthread_create(&t, NULL, fail_in_thread, NULL);
  pthread_join(t, &ok);
  ck_assert_msg(ok != NULL, "the other thread did not see its own error");
  ck_assert_str_eq(rcl_error_last(), "");
  ck_assert_str_eq(rcl_status_name(RCL_ERR_BUILD), "RCL_ERR_BUILD");
  ck_assert_str_eq(rcl_cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
}
END_TEST

int main(void) {
  Suite *s = suite_create("context");
  TCase *host = tcase_create("host");
  tcase_add_test(host, errors_are_thread_local);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  TCase *tc = tcase_create("devices");
  tcase_add_test(tc, device_selection);
  tcase_add_test(tc, bad_context_options);
  rt_add_device_loop(tc, profile_is_complete);
  rt_add_device_loop(tc, loop_limit_matches_driver);
  rt_add_device_loop(tc, wrap_uses_callers_objects);
  rt_add_device_loop(tc, kernel_dir_override);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
