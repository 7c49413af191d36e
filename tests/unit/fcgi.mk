# tests/unit/fcgi.mk -- Criterion suites for fcgi (owned with fcgi), and the
# CGI tests (tests/cgi/) that run the built ptyd.fcgi as plain CGI.
FCGI_TEST_CFLAGS = $(UNIT_CFLAGS) $(FCGI_CFLAGS) $(JANSSON_CFLAGS)
FCGI_TEST_LDADD = fcgi/libfront.a libwire.a $(FCGI_LIBS) $(JANSSON_LIBS) \
	$(CRITERION_LIBS) -lm

check_PROGRAMS += tests/unit/test_gate tests/unit/test_utf8 \
	tests/unit/test_json tests/unit/test_sse tests/unit/test_http
tests_unit_test_gate_SOURCES = tests/unit/test_gate.c
tests_unit_test_gate_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_gate_LDADD = $(FCGI_TEST_LDADD)
tests_unit_test_utf8_SOURCES = tests/unit/test_utf8.c
tests_unit_test_utf8_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_utf8_LDADD = $(FCGI_TEST_LDADD)
tests_unit_test_json_SOURCES = tests/unit/test_json.c
tests_unit_test_json_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_json_LDADD = $(FCGI_TEST_LDADD)
tests_unit_test_sse_SOURCES = tests/unit/test_sse.c
tests_unit_test_sse_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_sse_LDADD = $(FCGI_TEST_LDADD)
tests_unit_test_http_SOURCES = tests/unit/test_http.c
tests_unit_test_http_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_http_LDADD = $(FCGI_TEST_LDADD)

check_PROGRAMS += tests/unit/test_ptyd_client
tests_unit_test_ptyd_client_SOURCES = tests/unit/test_ptyd_client.c
tests_unit_test_ptyd_client_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_ptyd_client_LDADD = $(FCGI_TEST_LDADD)

# CGI tests: the real binary under a CGI environment (and a real ptyd in a
# temporary directory when it is built).
check_PROGRAMS += tests/cgi/test_cgi
tests_cgi_test_cgi_SOURCES = tests/cgi/test_cgi.c
tests_cgi_test_cgi_CFLAGS = $(UNIT_CFLAGS) \
	-DFCGI_BIN='"$(abs_top_builddir)/fcgi/ptyd.fcgi"' \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"'
tests_cgi_test_cgi_LDADD = $(CRITERION_LIBS)
EXTRA_tests_cgi_test_cgi_DEPENDENCIES = fcgi/ptyd.fcgi

# ptyd.fcgi as a FastCGI server, driven by a FastCGI client in the test.
check_PROGRAMS += tests/unit/test_fcgi_server
tests_unit_test_fcgi_server_SOURCES = tests/unit/test_fcgi_server.c
tests_unit_test_fcgi_server_CFLAGS = $(UNIT_CFLAGS) \
	-DFCGI_BIN='"$(abs_top_builddir)/fcgi/ptyd.fcgi"' \
	-DPTYD_BIN='"$(abs_top_builddir)/ptyd/ptyd"'
tests_unit_test_fcgi_server_LDADD = libwire.a $(CRITERION_LIBS)
EXTRA_tests_unit_test_fcgi_server_DEPENDENCIES = fcgi/ptyd.fcgi

check_PROGRAMS += tests/unit/test_peer
tests_unit_test_peer_SOURCES = tests/unit/test_peer.c
tests_unit_test_peer_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_peer_LDADD = $(FCGI_TEST_LDADD)

# The FastCGI record guard: malformed records refused before libfcgi.
check_PROGRAMS += tests/unit/test_fcgi_guard
tests_unit_test_fcgi_guard_SOURCES = tests/unit/test_fcgi_guard.c
tests_unit_test_fcgi_guard_CFLAGS = $(FCGI_TEST_CFLAGS)
tests_unit_test_fcgi_guard_LDADD = $(FCGI_TEST_LDADD)

# recorder/cast.c (ptyd-recorder's lines) with the stream's sanitiser and
# escaper it links.
check_PROGRAMS += tests/unit/test_cast
tests_unit_test_cast_SOURCES = tests/unit/test_cast.c recorder/cast.c
tests_unit_test_cast_CFLAGS = $(FCGI_TEST_CFLAGS) -iquote $(srcdir)/recorder
tests_unit_test_cast_LDADD = $(FCGI_TEST_LDADD)
