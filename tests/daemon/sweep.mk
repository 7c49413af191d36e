# tests/daemon/sweep.mk -- the real ptyd ending what exited shells leave
# behind, and nothing else (ptyd/proc.c); included from Makefile.am.
check_PROGRAMS += tests/daemon/test_sweep
tests_daemon_test_sweep_SOURCES = tests/daemon/test_sweep.c \
	tests/daemon/harness.c tests/daemon/harness.h
tests_daemon_test_sweep_CFLAGS = $(UNIT_CFLAGS) \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"'
tests_daemon_test_sweep_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	-lutil $(CRITERION_LIBS)
