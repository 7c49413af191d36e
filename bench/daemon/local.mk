# bench/daemon/local.mk -- the daemon's benchmarks (issue 3's targets),
# built by `make bench-daemon` (not by `make all`); see bench/daemon/README.md.
EXTRA_PROGRAMS += bench/daemon/ptydbench
bench_daemon_ptydbench_SOURCES = bench/daemon/ptydbench.c bench/benchutil.c \
	bench/benchutil.h
# libptyd's headers (the reaper is timed in-process); -iquote so that
# ptyd/spawn.h does not shadow the system <spawn.h>.
bench_daemon_ptydbench_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(srcdir)/ptyd \
	-iquote $(srcdir)/bench \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"'
bench_daemon_ptydbench_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) -lutil
bench-daemon: bench/daemon/ptydbench$(EXEEXT) ptyd/ptyd$(EXEEXT)
CLEANFILES += bench/daemon/ptydbench
EXTRA_DIST += bench/daemon/README.md
.PHONY: bench-daemon
