/* The OpenMM peer of `reprocl bench --family md`: scripts/peer_openmm.py run as a subprocess (no shell)
 * with $REPROCL_PYTHON or python3 from PATH; its stdout is the JSON document the script describes. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers.h"

extern char **environ;

static char openmm_error[4608];

const char *peer_openmm_error(void) { return openmm_error; }

static int fail(const char *fmt, const char *a, const char *b) {
  snprintf(openmm_error, sizeof openmm_error, fmt, a, b);
  return -1;
}

const char *peer_openmm_python(void) {
  const char *py = getenv("REPROCL_PYTHON");
  return py && *py ? py : "python3";
}

/* $REPROCL_OPENMM_PEER, else scripts/peer_openmm.py of the source tree the tool was built in (a build
 * folder inside the source tree), else share/reprocl/peer_openmm.py beside the tool's bin/. */
int peer_openmm_script(char *path, size_t cap) {
  const char *env = getenv("REPROCL_OPENMM_PEER");
  if (env && *env) {
    snprintf(path, cap, "%s", env);
    return access(path, R_OK) ? fail("REPROCL_OPENMM_PEER=%s: %s", env, strerror(errno)) : 0;
  }
  char exe[PATH_MAX];
  ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (l <= 0) return fail("peer_openmm.py not found (%s%s; set REPROCL_OPENMM_PEER)", "no /proc/self/exe", "");
  exe[l] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  static const char *const rel[] = {"/../scripts/peer_openmm.py", "/../../scripts/peer_openmm.py",
                                    "/../share/reprocl/peer_openmm.py"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    snprintf(path, cap, "%s%s", exe, rel[i]);
    if (!access(path, R_OK)) return 0;
  }
  return fail("peer_openmm.py not found beside %s%s (set REPROCL_OPENMM_PEER to scripts/peer_openmm.py)", exe, "");
}

/* Reads fd to its end into a NUL-terminated malloc'd buffer. */
static char *read_all(int fd) {
  size_t n = 0, cap = 4096;
  char *buf = malloc(cap);
  for (ssize_t r; buf; n += (size_t)r) {
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) break;
      buf = nb;
    }
    r = read(fd, buf + n, cap - n - 1);
    if (r < 0 && errno == EINTR)
      r = 0;
    else if (r <= 0) {
      buf[n] = 0;
      return buf;
    }
  }
  free(buf);
  return NULL;
}

int peer_openmm_run(char **out, char *const argv[]) {
  *out = NULL;
  int fds[2];
  if (pipe(fds)) return fail("pipe: %s%s", strerror(errno), "");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    return fail("cannot run %s: %s", argv[0], strerror(err));
  }
  char *text = read_all(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    free(text);
    char st[64];
    snprintf(st, sizeof st, WIFEXITED(status) ? "exit status %d" : "signal %d",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return fail("%s peer_openmm.py failed (%s; its messages are above)", argv[0], st);
  }
  if (!text) return fail("out of memory reading %s's output%s", argv[0], "");
  *out = text;
  return 0;
}

int peer_openmm_opencl_index(cl_device_id dev, int *platform_index, int *device_index) {
  cl_platform_id plats[64], want;
  cl_device_id devs[256];
  cl_uint np = 0, nd = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof want, &want, NULL) != CL_SUCCESS ||
      clGetPlatformIDs(64, plats, &np) != CL_SUCCESS)
    return -1;
  for (cl_uint p = 0; p < np && p < 64; p++) {
    if (plats[p] != want || clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 256, devs, &nd) != CL_SUCCESS) continue;
    for (cl_uint d = 0; d < nd && d < 256; d++)
      if (devs[d] == dev) {
        *platform_index = (int)p;
        *device_index = (int)d;
        return 0;
      }
  }
  return -1;
}

const char *peer_openmm_platforms(cl_device_id dev) {
  cl_device_type type = 0;
  char vendor[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
  if (type & CL_DEVICE_TYPE_CPU) return "Reference,CPU,OpenCL";
  if (strstr(vendor, "NVIDIA")) return "OpenCL,CUDA";
  if (strstr(vendor, "Advanced Micro Devices") || strstr(vendor, "AMD")) return "OpenCL,HIP";
  return "OpenCL";
}
