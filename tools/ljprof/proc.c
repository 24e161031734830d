/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What /proc says of other processes.
*/
#define _GNU_SOURCE /* realpath */
#include "proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole of /proc/PID/FILE, NUL-terminated (len: its length), or NULL. */
static char *proc_read(pid_t pid, const char *file, size_t *len) {
  char name[64];
  snprintf(name, sizeof name, "/proc/%d/%s", (int)pid, file);
  FILE *f = fopen(name, "r");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *more = realloc(buf, 2 * cap + 1);
      if (!more) { free(buf); buf = NULL; break; }
      buf = more;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

int proc_info(pid_t pid, struct proc_info *p) {
  char *status = proc_read(pid, "status", NULL);
  const char *uid = status ? strstr(status, "\nUid:") : NULL;
  const char *gid = status ? strstr(status, "\nGid:") : NULL;
  long u, g;
  int ok = uid && gid && sscanf(uid, "\nUid: %*d %ld", &u) == 1 &&
           sscanf(gid, "\nGid: %*d %ld", &g) == 1;
  free(status);
  if (!ok) return 0;
  p->pid = pid;
  p->uid = (uid_t)u;
  p->gid = (gid_t)g;
  return 1;
}

void proc_name(pid_t pid, char *name, size_t size) {
  size_t len;
  char *cmdline = proc_read(pid, "cmdline", &len);
  snprintf(name, size, "%s", cmdline && len ? cmdline : "");
  name[strcspn(name, "\n")] = '\0';
  free(cmdline);
}

/* Its parent, from /proc/PID/stat (after the name, which may hold any
** byte, in parentheses); 0 if gone. */
static pid_t proc_parent(pid_t pid) {
  char *stat = proc_read(pid, "stat", NULL);
  char *close = stat ? strrchr(stat, ')') : NULL;
  int ppid = 0;
  if (!close || sscanf(close + 1, " %*c %d", &ppid) != 1) ppid = 0;
  free(stat);
  return (pid_t)ppid;
}

int proc_tree(const pid_t *roots, int nroots, struct proc_info **procs) {
  /* Every process and its parent, then the closure from the roots. */
  size_t nall = 0, cap = 256;
  pid_t (*all)[2] = malloc(cap * sizeof *all);
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (all && d && (e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    if (nall == cap) {
      pid_t (*more)[2] = realloc(all, 2 * cap * sizeof *all);
      if (!more) break;
      all = more;
      cap *= 2;
    }
    all[nall][0] = (pid_t)atoi(e->d_name);
    all[nall][1] = proc_parent(all[nall][0]);
    nall++;
  }
  if (d) closedir(d);
  struct proc_info *out = malloc((nall + (size_t)nroots) * sizeof *out);
  int n = 0;
  for (int i = 0; out && i < nroots; i++) {
    int seen = 0;
    for (int j = 0; j < n; j++) seen |= out[j].pid == roots[i];
    if (!seen && proc_info(roots[i], &out[n])) n++;
  }
  for (int from = 0; out && all && from < n; from++)
    for (size_t i = 0; i < nall; i++) {
      if (all[i][1] != out[from].pid) continue;
      int seen = 0;
      for (int j = 0; j < n; j++) seen |= out[j].pid == all[i][0];
      if (!seen && proc_info(all[i][0], &out[n])) n++;
    }
  free(all);
  *procs = out;
  return out ? n : 0;
}

int proc_alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

int proc_holds(pid_t pid, const char *path) {
  char dir[64], real[PATH_MAX];
  if (!realpath(path, real)) return 0;
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int held = 0;
  struct dirent *e;
  while (!held && (e = readdir(d))) {
    char link[PATH_MAX], fd[PATH_MAX + 80];
    snprintf(fd, sizeof fd, "%s/%s", dir, e->d_name);
    ssize_t n = readlink(fd, link, sizeof link - 1);
    if (n < 0) continue;
    link[n] = '\0';
    held = !strcmp(link, real);
  }
  closedir(d);
  return held;
}

int proc_maps_file(pid_t pid, const char *path, ino_t ino) {
  char name[64], line[4096];
  snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(name, "r");
  if (!f) return 0;
  int found = 0;
  size_t n = strlen(path);
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long long inode;
    int at = 0;
    if (sscanf(line, "%*s %*s %*s %*s %llu %n", &inode, &at) < 1 || !at)
      continue;
    char *file = line + at;
    file[strcspn(file, "\n")] = '\0';
    found = !strncmp(file, path, n) && (file[n] == '\0' || file[n] == ' ') &&
            (ino == 0 || inode == (unsigned long long)ino);
  }
  fclose(f);
  return found;
}
