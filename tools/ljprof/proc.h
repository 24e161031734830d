/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** What /proc says of other processes: their files, users, names, children
** and open files.
*/
#ifndef LJPROF_PROC_H
#define LJPROF_PROC_H

#include <stddef.h>
#include <sys/types.h>

struct proc_info {
  pid_t pid;
  uid_t uid; /* effective */
  gid_t gid;
};

/* The process's effective user and group: 0 when it is gone. */
int proc_info(pid_t pid, struct proc_info *p);

/* Its command line's first word, as the process shows it (nginx: "nginx:
** worker process"), into name; "" if unknown. */
void proc_name(pid_t pid, char *name, size_t size);

/* The processes roots and all their descendants, each once: how many, in
** *procs (to free). */
int proc_tree(const pid_t *roots, int nroots, struct proc_info **procs);

/* Whether the process exists (ours to signal or not). */
int proc_alive(pid_t pid);

/* Whether the process holds path open. */
int proc_holds(pid_t pid, const char *path);

/* Whether the process maps the file path (of inode ino; 0: any). */
int proc_maps_file(pid_t pid, const char *path, ino_t ino);

#endif
