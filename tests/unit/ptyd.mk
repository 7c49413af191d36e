# tests/unit/ptyd.mk -- Criterion suites for ptyd (owned with ptyd), and
# the daemon-level tests in tests/daemon/ (real ptyd, real shells).
PTYD_UNIT_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) -lutil \
	$(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test_ring
tests_unit_test_ring_SOURCES = tests/unit/test_ring.c
tests_unit_test_ring_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ring_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_reap
tests_unit_test_reap_SOURCES = tests/unit/test_reap.c
tests_unit_test_reap_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_reap_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_term
tests_unit_test_term_SOURCES = tests/unit/test_term.c
tests_unit_test_term_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_term_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_share
tests_unit_test_share_SOURCES = tests/unit/test_share.c
tests_unit_test_share_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_share_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_ptyd_ev
tests_unit_test_ptyd_ev_SOURCES = tests/unit/test_ptyd_ev.c
tests_unit_test_ptyd_ev_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ptyd_ev_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_lock
tests_unit_test_lock_SOURCES = tests/unit/test_lock.c
tests_unit_test_lock_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_lock_LDADD = $(PTYD_UNIT_LDADD)

# The daemon itself: built binaries, found through these paths.
check_PROGRAMS += tests/daemon/test_daemon
tests_daemon_test_daemon_SOURCES = tests/daemon/test_daemon.c \
	tests/daemon/harness.c tests/daemon/harness.h
tests_daemon_test_daemon_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS) \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"' \
	-DPTYDCTL_BIN='"$(abs_top_builddir)/ptydctl/ptydctl"'
tests_daemon_test_daemon_LDADD = libwire.a $(SQLITE_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/daemon/README

check_PROGRAMS += tests/unit/test_termstate
tests_unit_test_termstate_SOURCES = tests/unit/test_termstate.c
# It reads sql/schema.sql and sql/audit.sql.
tests_unit_test_termstate_CFLAGS = $(UNIT_CFLAGS) \
	-DPTYD_SRCDIR='"$(abs_srcdir)"'
tests_unit_test_termstate_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_conn
tests_unit_test_conn_SOURCES = tests/unit/test_conn.c
tests_unit_test_conn_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_conn_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_screen
tests_unit_test_screen_SOURCES = tests/unit/test_screen.c
# The memory test reads ptyd's sources as realistic output.
tests_unit_test_screen_CFLAGS = $(UNIT_CFLAGS) $(VTERM_CFLAGS) \
	-DPTYD_SRCDIR='"$(abs_srcdir)"'
tests_unit_test_screen_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_mirror
tests_unit_test_mirror_SOURCES = tests/unit/test_mirror.c tests/unit/unit.c tests/unit/unit.h
tests_unit_test_mirror_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_mirror_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_spawn
tests_unit_test_spawn_SOURCES = tests/unit/test_spawn.c
tests_unit_test_spawn_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_spawn_LDADD = $(PTYD_UNIT_LDADD)

check_PROGRAMS += tests/unit/test_termmem
tests_unit_test_termmem_SOURCES = tests/unit/test_termmem.c
tests_unit_test_termmem_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_termmem_LDADD = $(PTYD_UNIT_LDADD) -lutil

# ptyd/recretain.c's retention choice (pure).
check_PROGRAMS += tests/unit/test_record
tests_unit_test_record_SOURCES = tests/unit/test_record.c
tests_unit_test_record_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_record_LDADD = $(PTYD_UNIT_LDADD)
