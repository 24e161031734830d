# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# ljprof's modules, compiled into the VM beside upstream's.
# Included by the patched src/Makefile; LuaJIT's own rules build them.
LJPROF_O= lj_metrics.o lj_wbuf.o lj_symtab.o lj_prof.o lj_proftrace.o \
	  lj_profunwind.o lj_profwalk.o lj_memprof.o lj_memstack.o lj_sysprof.o \
	  lj_proffile.o lj_profenv.o lj_profctl.o lj_profhost.o lj_perfmap.o \
	  lj_heapsnap.o lj_label.o lj_proflabel.o lib_misc.o
LJCORE_O+= $(LJPROF_O)
# Symbol tables read ELF objects with libelf (MiniDebugInfo with liblzma);
# the file writer and the sampler have threads.
TARGET_XLIBS+= -lelf -llzma -lpthread

# Coarse but safe: our few objects rebuild when any header changes, and
# LuaJIT's when lj_proftrace.h or lj_profmem.h does (lj_iropt.h and lj_gc.h
# include them; Makefile.dep does not know), and lj_label.h (lj_state.c).
$(LJPROF_O): $(wildcard *.h)
# ... and after the headers LuaJIT generates (luajit.h in rolling trees),
# which a parallel make has not made yet when it starts on ours.
$(LJPROF_O): lj_bcdef.h lj_ffdef.h lj_libdef.h lj_recdef.h lj_folddef.h \
	     $(if $(wildcard luajit_rolling.h),luajit.h)
$(LJCORE_O): lj_proftrace.h lj_profmem.h lj_label.h
# The rules above must not become src/Makefile's default goal.
.DEFAULT_GOAL :=
