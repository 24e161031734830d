/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The recorder's side of a VM's control page. The page's mode (0600, its
** process's user's) already keeps out whoever may not command the process;
** we check besides that the page is the process's own (mapped by it, of
** its user), so that a file left behind or planted is never taken for it.
*/
#define _GNU_SOURCE
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc.h"

#define WORD(p) ((_Atomic uint32_t *)(void *)(p))
#define SWORD(p) ((_Atomic int32_t *)(void *)(p))

static void page_path(char *out, size_t size, pid_t pid, int vmno) {
  snprintf(out, size, LJP_CTL_DIR "/" LJP_CTL_PREFIX "%d-%d", (int)pid, vmno);
}

int control_find(pid_t pid, int *vmnos, int max) {
  char pattern[96];
  glob_t g;
  int n = 0;
  snprintf(pattern, sizeof pattern, LJP_CTL_DIR "/" LJP_CTL_PREFIX "%d-*",
           (int)pid);
  if (glob(pattern, 0, NULL, &g) != 0) return 0;
  for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
    const char *num = strrchr(g.gl_pathv[i], '-') + 1;
    char *end;
    long vmno = strtol(num, &end, 10);
    if (*end == '\0' && vmno > 0 && proc_maps_file(pid, g.gl_pathv[i], 0))
      vmnos[n++] = (int)vmno;
  }
  globfree(&g);
  return n;
}

int control_hold(struct control *c, pid_t pid, int vmno, char *why,
                 size_t size) {
  char path[96];
  struct stat st;
  struct proc_info p;
  page_path(path, sizeof path, pid, vmno);
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, size, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < (off_t)sizeof(LJPControl) ||
      !proc_info(pid, &p) || st.st_uid != p.uid ||
      !proc_maps_file(pid, path, st.st_ino)) {
    close(fd);
    snprintf(why, size, "%s is not the process's own control page", path);
    return -1;
  }
  LJPControl *page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, 0);
  close(fd);
  if (page == MAP_FAILED) {
    snprintf(why, size, "%s: %s", path, strerror(errno));
    return -1;
  }
  uint32_t magic = atomic_load(WORD(&page->magic));
  if (magic != LJP_CTL_MAGIC || page->version != LJP_CTL_VERSION) {
    munmap(page, sizeof *page);
    if (magic == 0) return CONTROL_NOT_READY; /* the VM is making it */
    snprintf(why, size, "%s: a control page of another version of ljprof",
             path);
    return -1;
  }
  /* A recorder that died holding it lets it go; a live one keeps it. */
  int32_t me = (int32_t)getpid(), holder = atomic_load(SWORD(&page->holder));
  while (holder != me && (holder == 0 || !proc_alive(holder))) {
    if (atomic_compare_exchange_strong(SWORD(&page->holder), &holder, me))
      holder = me;
  }
  if (holder != me) {
    munmap(page, sizeof *page);
    snprintf(why, size, "being recorded by ljprof (pid %d) already",
             (int)holder);
    return -1;
  }
  c->page = page;
  c->pid = pid;
  c->vmno = vmno;
  c->sent = atomic_load(WORD(&page->done));
  return 0;
}

void control_release(struct control *c) {
  if (!c->page) return;
  int32_t me = (int32_t)getpid();
  atomic_compare_exchange_strong(SWORD(&c->page->holder), &me, 0);
  munmap(c->page, sizeof *c->page);
  c->page = NULL;
}

void control_send(struct control *c, int cmd, const char *arg) {
  LJPControl *page = c->page;
  page->cmd = cmd;
  snprintf(page->arg, sizeof page->arg, "%s", arg ? arg : "");
  c->sent = atomic_load(WORD(&page->request)) + 1;
  atomic_store(WORD(&page->request), c->sent);
  syscall(SYS_futex, &page->request, FUTEX_WAKE, 1, NULL, NULL, 0);
}

int control_answered(const struct control *c, int *status) {
  if (atomic_load(WORD(&c->page->done)) != c->sent) return 0;
  *status = c->page->status;
  return 1;
}

const char *control_reply(const struct control *c) { return c->page->reply; }
