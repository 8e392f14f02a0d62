/* LLVM bitcode for the audit: found in PoCL's program container and turned into IR text by llvm-dis.
 *
 * PoCL's CL_PROGRAM_BINARIES is a "poclbin" container of named entries; the program's LLVM bitcode (the
 * IR from which PoCL generates machine code for each launch geometry) is the entry "/program.bc".
 * Reading bitcode needs an llvm-dis at least as new as the LLVM that wrote it, so several versions are
 * tried, newest first. The same runner hands machine code to objdump (audit_elf.c). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit_internal.h"
#include "build/cache_dir.h"

extern char **environ;

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int rcl__audit_pocl_bitcode(const unsigned char **bc, size_t *bc_size, const unsigned char *bin, size_t size) {
  static const char entry[] = "/program.bc";
  const size_t el = sizeof entry - 1;
  for (size_t i = 4; i + el + 4 <= size; i++) {
    if (bin[i] != '/' || memcmp(bin + i, entry, el) || le32(bin + i - 4) != el) continue;
    size_t at = i + el + 4;
    uint32_t n = le32(bin + i + el);
    if (n > size - at)
      return rcl__fail(RCL_ERR_PARSE,
                       "PoCL binary: the /program.bc entry (%u bytes at offset %zu) runs past the "
                       "end of the %zu-byte binary",
                       (unsigned)n, at, size);
    if (n < 4 || (memcmp(bin + at, "BC\xc0\xde", 4) && le32(bin + at) != 0x0B17C0DEu))
      return rcl__fail(RCL_ERR_PARSE, "PoCL binary: the /program.bc entry at offset %zu is not LLVM bitcode", at);
    *bc = bin + at;
    *bc_size = n;
    return 0;
  }
  return rcl__fail(RCL_ERR_NOT_FOUND, "PoCL binary: no /program.bc entry");
}

/* Whether cmd can be run: a path that is executable, or a name found in $PATH. */
static int runnable(const char *cmd) {
  if (strchr(cmd, '/')) return access(cmd, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    const char *c = strchr(path, ':');
    size_t l = c ? (size_t)(c - path) : strlen(path);
    char full[4096];
    if (l && (size_t)snprintf(full, sizeof full, "%.*s/%s", (int)l, path, cmd) < sizeof full && access(full, X_OK) == 0)
      return 1;
    path += l + (c != NULL);
  }
  return 0;
}

/* Runs tool args... in with stdout to out and stderr to err; the exit status, or -1 when it could not be
 * started. */
static int run_tool(const char *tool, const char *const *args, const char *in, const char *out, const char *err) {
  char *argv[16];
  size_t n = 0;
  argv[n++] = (char *)tool;
  for (; args && *args && n < 14; args++) argv[n++] = (char *)*args;
  argv[n++] = (char *)in;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa)) return -1;
  int ok = !posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) &&
           !posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600) &&
           !posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  int st = -1;
  if (ok && posix_spawnp(&pid, tool, &fa, NULL, argv, environ) == 0) {
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
  posix_spawn_file_actions_destroy(&fa);
  return st;
}

/* Appends "tool: first line of its error output" to the explanation of why nothing could read it. */
static void explain(char *why, size_t size, const char *tool, int status, const char *errpath) {
  char *e = NULL;
  size_t el = 0;
  if (rcl__cache_read_file(&e, &el, errpath)) rcl_error_clear();
  /* the first line that says "error" (llvm-dis warns about debug info first), else the first line */
  const char *line = e ? strstr(e, "error") : NULL;
  if (line)
    while (line > e && line[-1] != '\n') line--;
  if (!line) line = e ? e : "";
  size_t ll = strcspn(line, "\n");
  size_t at = strlen(why);
  snprintf(why + at, size - at, "%s%s exited with status %d%s%.*s", at ? "; " : "", tool, status, ll ? ": " : "",
           (int)(ll < 160 ? ll : 160), line);
  rcl__free(e);
}

int rcl__audit_tool_output(char **text, size_t *len, char **used, char **why, const rcl__audit_tool *t,
                           const char *tool, const unsigned char *in, size_t size) {
  *text = *used = *why = NULL;
  *len = 0;
  const char *env = getenv(t->env);
  const char *one = tool && *tool ? tool : env && *env ? env : NULL;
  const char *const *cands = one ? &one : t->names;
  size_t ncands = one ? 1 : t->nnames;

  const char *tmp = getenv("TMPDIR");
  char dir[512], inp[600], out[600], err[600];
  if (!tmp || !*tmp) tmp = "/tmp";
  if ((size_t)snprintf(dir, sizeof dir, "%s/reprocl-audit-XXXXXX", tmp) >= sizeof dir)
    return rcl__fail(RCL_ERR_IO, "TMPDIR is too long for a temporary directory");
  if (!mkdtemp(dir))
    return rcl__fail(RCL_ERR_IO, "cannot create a temporary directory in %s: %s", tmp, strerror(errno));
  snprintf(inp, sizeof inp, "%s/%s", dir, t->file);
  snprintf(out, sizeof out, "%s/stdout.txt", dir);
  snprintf(err, sizeof err, "%s/stderr.txt", dir);

  char reasons[1024] = "";
  int rc = 0, tried = 0;
  int fd = open(inp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, in, size) != (ssize_t)size)
    rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s", inp, strerror(errno));
  if (fd >= 0 && close(fd) != 0 && !rc) rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s", inp, strerror(errno));
  for (size_t c = 0; !rc && c < ncands && !*text; c++) {
    if (!runnable(cands[c])) {
      if (one) snprintf(reasons, sizeof reasons, "%s cannot be run (not found or not executable)", one);
      continue;
    }
    tried++;
    int st = run_tool(cands[c], t->args, inp, out, err);
    char *o = NULL;
    size_t ol = 0;
    int rr = st == 0 ? rcl__cache_read_file(&o, &ol, out) : RCL_ERR_IO;
    if (rr == RCL_ERR_OUT_OF_MEMORY) {
      rc = rr;
    } else if (!rr && ol > 0) {
      *text = o;
      *len = ol;
      *used = rcl__strdup(cands[c]);
      if (!*used) {
        rcl__free(o);
        *text = NULL;
        rc = RCL_ERR_OUT_OF_MEMORY;
      }
    } else {
      rcl__free(o);
      rcl_error_clear();
      explain(reasons, sizeof reasons, cands[c], st, err);
    }
    unlink(out);
  }
  unlink(inp);
  unlink(err);
  rmdir(dir);
  if (!rc && !*text) {
    if (!tried && !one) snprintf(reasons, sizeof reasons, "%s", t->none);
    *why = rcl__strdup(reasons);
    if (!*why) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  return rc;
}

int rcl__audit_llvm_dis(char **text, size_t *len, char **used, char **why, const unsigned char *bc, size_t size,
                        const char *tool) {
  static const char *const versions[] = {"llvm-dis-20", "llvm-dis-19", "llvm-dis-18", "llvm-dis-17",
                                         "llvm-dis-16", "llvm-dis-15", "llvm-dis-14", "llvm-dis"};
  static const char *const args[] = {"-o", "-", NULL};
  static const rcl__audit_tool t = {
      "REPROCL_LLVM_DIS",
      versions,
      sizeof versions / sizeof versions[0],
      args,
      "program.bc",
      "no llvm-dis found on PATH (llvm-dis-20 ... llvm-dis-14, llvm-dis): install the llvm-N package of the "
      "driver's LLVM (llvm-15 for PoCL 3.1) or set REPROCL_LLVM_DIS"};
  return rcl__audit_tool_output(text, len, used, why, &t, tool, bc, size);
}
