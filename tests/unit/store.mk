# tests/unit/store.mk -- Criterion suites for store (owned with store), and
# the store's benchmark.

check_PROGRAMS += tests/unit/test_store
tests_unit_test_store_SOURCES = tests/unit/test_store.c tests/unit/unit.c \
	tests/unit/unit.h
tests_unit_test_store_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_store_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	-lutil $(CRITERION_LIBS)

# The store's benchmark (bench/store/README.md): small, so it is built with
# everything and never rots.
noinst_PROGRAMS += bench/store/bench_store
bench_store_bench_store_SOURCES = bench/store/bench_store.c
bench_store_bench_store_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) \
	-iquote $(srcdir)/ptyd
bench_store_bench_store_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS)
EXTRA_DIST += bench/store/README.md

# The audit log's hash chain, its anchors and the verifier (issue 29).
check_PROGRAMS += tests/unit/test_chain
tests_unit_test_chain_SOURCES = tests/unit/test_chain.c tests/unit/unit.c \
	tests/unit/unit.h
tests_unit_test_chain_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS) $(NETTLE_CFLAGS)
tests_unit_test_chain_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	-lutil $(CRITERION_LIBS)

# The audit log's lines for a fleet (issue 34): their text, the journal's
# datagram, the store's hook.
check_PROGRAMS += tests/unit/test_auditlog
tests_unit_test_auditlog_SOURCES = tests/unit/test_auditlog.c \
	tests/unit/unit.c tests/unit/unit.h
tests_unit_test_auditlog_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_auditlog_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	-lutil $(CRITERION_LIBS)
