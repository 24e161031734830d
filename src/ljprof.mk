# ljprof's modules, compiled into the VM beside upstream's.
# Included by the patched src/Makefile; LuaJIT's own rules build them.
LJPROF_O= lj_metrics.o lib_misc.o
LJCORE_O+= $(LJPROF_O)

# Coarse but safe: our few objects rebuild when any header changes.
$(LJPROF_O): $(wildcard *.h)
# The rule above must not become src/Makefile's default goal.
.DEFAULT_GOAL :=
