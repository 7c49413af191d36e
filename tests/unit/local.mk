# tests/unit/local.mk -- Criterion suites, one per module, run by make check.
UNIT_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS) -iquote $(srcdir)/ptyd \
	-iquote $(srcdir)/fcgi

check_PROGRAMS += tests/unit/test_kwire
tests_unit_test_kwire_SOURCES = tests/unit/test_kwire.c
tests_unit_test_kwire_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_kwire_LDADD = libwire.a $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test_frame
tests_unit_test_frame_SOURCES = tests/unit/test_frame.c
tests_unit_test_frame_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_frame_LDADD = libwire.a $(CRITERION_LIBS)

TESTS += $(check_PROGRAMS)
EXTRA_DIST += tests/unit/tap-wrap

check_PROGRAMS += tests/unit/test_client
tests_unit_test_client_SOURCES = tests/unit/test_client.c
tests_unit_test_client_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_client_LDADD = libwire.a $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test_safetext
tests_unit_test_safetext_SOURCES = tests/unit/test_safetext.c
tests_unit_test_safetext_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_safetext_LDADD = libwire.a $(CRITERION_LIBS)
check_PROGRAMS += tests/unit/test_harden
tests_unit_test_harden_SOURCES = tests/unit/test_harden.c
tests_unit_test_harden_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_harden_LDADD = libwire.a $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test_account
tests_unit_test_account_SOURCES = tests/unit/test_account.c
tests_unit_test_account_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_account_LDADD = libwire.a $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test_contract
tests_unit_test_contract_SOURCES = tests/unit/test_contract.c
# It reads docs/DESIGN.md's table of errors.
tests_unit_test_contract_CFLAGS = $(UNIT_CFLAGS) -DPTYD_SRCDIR='"$(abs_srcdir)"'
tests_unit_test_contract_LDADD = libwire.a $(CRITERION_LIBS)

# The settings (lib/config.c); linked with ptyd's objects to check that the
# table's defaults are ptyd's own.
check_PROGRAMS += tests/unit/test_config
tests_unit_test_config_SOURCES = tests/unit/test_config.c
tests_unit_test_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_config_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	-lutil $(CRITERION_LIBS)
