# tests/fuzz/local.mk -- fuzz targets for the frame decoder and for
# ptyd.fcgi's request parsing and UTF-8 sanitiser.
#
# make check runs each target over its corpus plus fixed mutations
# (fuzz_main.c).  `make fuzz` builds the same targets with clang and
# libFuzzer for coverage-guided runs:
#	make fuzz && tests/fuzz/fuzz_frame-libfuzzer -max_total_time=60 \
#	    $(srcdir)/tests/fuzz/corpus/frame
#	mkdir -p /tmp/fuzz-req && tests/fuzz/fuzz_request-libfuzzer \
#	    -max_total_time=120 /tmp/fuzz-req $(srcdir)/tests/fuzz/corpus/request
#	mkdir -p /tmp/fuzz-fcgi && tests/fuzz/fuzz_fcgi-libfuzzer \
#	    -max_total_time=120 /tmp/fuzz-fcgi $(srcdir)/tests/fuzz/corpus/fcgi
noinst_PROGRAMS += tests/fuzz/fuzz_frame
tests_fuzz_fuzz_frame_SOURCES = tests/fuzz/fuzz_frame.c tests/fuzz/fuzz_main.c
tests_fuzz_fuzz_frame_LDADD = libwire.a
TESTS += tests/fuzz/fuzz_frame.sh
EXTRA_DIST += tests/fuzz/fuzz_frame.sh tests/fuzz/corpus

noinst_PROGRAMS += tests/fuzz/fuzz_request
tests_fuzz_fuzz_request_SOURCES = tests/fuzz/fuzz_request.c \
	tests/fuzz/fuzz_main.c
tests_fuzz_fuzz_request_CFLAGS = $(AM_CFLAGS) -I$(srcdir)/fcgi \
	$(FCGI_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_request_LDADD = fcgi/libfront.a libwire.a $(FCGI_LIBS) \
	$(JANSSON_LIBS) -lm
TESTS += tests/fuzz/fuzz_request.sh
EXTRA_DIST += tests/fuzz/fuzz_request.sh

# ptyd.fcgi's FastCGI records: the guard, then libfcgi for what it accepts.
noinst_PROGRAMS += tests/fuzz/fuzz_fcgi
tests_fuzz_fuzz_fcgi_SOURCES = tests/fuzz/fuzz_fcgi.c tests/fuzz/fuzz_main.c
tests_fuzz_fuzz_fcgi_CFLAGS = $(AM_CFLAGS) -I$(srcdir)/fcgi $(FCGI_CFLAGS)
tests_fuzz_fuzz_fcgi_LDADD = fcgi/libfront.a libwire.a $(FCGI_LIBS) -lpthread
TESTS += tests/fuzz/fuzz_fcgi.sh
EXTRA_DIST += tests/fuzz/fuzz_fcgi.sh tests/fuzz/make-corpus-fcgi.py

# ptyd's screen: hostile output never crashes it nor puts a query in a redraw.
noinst_PROGRAMS += tests/fuzz/fuzz_screen
tests_fuzz_fuzz_screen_SOURCES = tests/fuzz/fuzz_screen.c tests/fuzz/fuzz_main.c
tests_fuzz_fuzz_screen_CFLAGS = $(AM_CFLAGS) -I$(srcdir)/ptyd $(VTERM_CFLAGS)
tests_fuzz_fuzz_screen_LDADD = ptyd/libptyd.a libwire.a $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS)
TESTS += tests/fuzz/fuzz_screen.sh
EXTRA_DIST += tests/fuzz/fuzz_screen.sh

FUZZ_CC = clang
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -D_GNU_SOURCE -I$(srcdir)/lib
fuzz: tests/fuzz/fuzz_frame-libfuzzer tests/fuzz/fuzz_request-libfuzzer \
    tests/fuzz/fuzz_fcgi-libfuzzer tests/fuzz/fuzz_screen-libfuzzer \
    tests/fuzz/fuzz_screen_cost-libfuzzer
tests/fuzz/fuzz_frame-libfuzzer: $(srcdir)/tests/fuzz/fuzz_frame.c \
    $(srcdir)/lib/frame.c $(srcdir)/lib/frame.h $(srcdir)/lib/proto.h
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) -o $@ \
	    $(srcdir)/tests/fuzz/fuzz_frame.c $(srcdir)/lib/frame.c
FUZZ_REQUEST_SRCS = $(srcdir)/tests/fuzz/fuzz_request.c \
	$(srcdir)/fcgi/buf.c $(srcdir)/fcgi/flog.c $(srcdir)/fcgi/gate.c \
	$(srcdir)/fcgi/handlers.c $(srcdir)/fcgi/http.c $(srcdir)/fcgi/json.c \
	$(srcdir)/fcgi/peer.c $(srcdir)/fcgi/ptyd_client.c $(srcdir)/fcgi/sse.c \
	$(srcdir)/fcgi/stream.c $(srcdir)/fcgi/streamloop.c \
	$(srcdir)/fcgi/utf8.c $(srcdir)/lib/client.c $(srcdir)/lib/frame.c $(srcdir)/lib/harden.c \
	$(srcdir)/lib/contract.c $(srcdir)/lib/util.c \
	$(srcdir)/fcgi/metrics.c $(srcdir)/lib/logtime.c
FUZZ_REQUEST_HDRS = $(srcdir)/fcgi/buf.h $(srcdir)/fcgi/front.h \
	$(srcdir)/fcgi/gate.h $(srcdir)/fcgi/handlers.h $(srcdir)/fcgi/http.h \
	$(srcdir)/fcgi/peer.h $(srcdir)/lib/harden.h \
	$(srcdir)/fcgi/json.h $(srcdir)/fcgi/ptyd_client.h \
	$(srcdir)/fcgi/sse.h $(srcdir)/fcgi/utf8.h $(srcdir)/lib/proto.h \
	$(srcdir)/fcgi/stream_int.h $(srcdir)/fcgi/streamloop.h
tests/fuzz/fuzz_request-libfuzzer: $(FUZZ_REQUEST_SRCS) $(FUZZ_REQUEST_HDRS)
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) \
	    -I$(srcdir)/fcgi $(FCGI_CFLAGS) $(JANSSON_CFLAGS) -o $@ \
	    $(FUZZ_REQUEST_SRCS) $(FCGI_LIBS) $(JANSSON_LIBS) -lm
FUZZ_FCGI_SRCS = $(srcdir)/tests/fuzz/fuzz_fcgi.c $(srcdir)/fcgi/fcgi_guard.c \
	$(srcdir)/fcgi/flog.c $(srcdir)/lib/logtime.c
tests/fuzz/fuzz_fcgi-libfuzzer: $(FUZZ_FCGI_SRCS) $(srcdir)/fcgi/fcgi_guard.h \
    $(srcdir)/fcgi/flog.h $(srcdir)/fcgi/front.h
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) \
	    -I$(srcdir)/fcgi $(FCGI_CFLAGS) -o $@ $(FUZZ_FCGI_SRCS) \
	    $(FCGI_LIBS) -lpthread
FUZZ_SCREEN_SRCS = $(srcdir)/tests/fuzz/fuzz_screen.c $(FUZZ_SCREEN_LIB)
FUZZ_SCREEN_LIB = $(srcdir)/ptyd/screen.c $(srcdir)/ptyd/screenscan.c \
	$(srcdir)/ptyd/screenredraw.c \
	$(srcdir)/ptyd/grid.c $(srcdir)/ptyd/scrollback.c $(srcdir)/ptyd/vtfeed.c \
	$(srcdir)/ptyd/ring.c \
	$(srcdir)/ptyd/xmalloc.c \
	$(srcdir)/ptyd/log.c $(srcdir)/lib/logtime.c $(srcdir)/lib/frame.c
tests/fuzz/fuzz_screen-libfuzzer: $(FUZZ_SCREEN_SRCS) $(srcdir)/ptyd/screen.h \
    $(srcdir)/ptyd/screen_int.h \
    $(srcdir)/ptyd/vtfeed.h \
    $(srcdir)/ptyd/grid.h $(srcdir)/ptyd/scrollback.h
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) \
	    -I$(srcdir)/ptyd $(VTERM_CFLAGS) -o $@ $(FUZZ_SCREEN_SRCS) \
	    $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS)
# What a step costs in time (fuzz_screen_cost.c): no sanitizers, -O2.
FUZZ_SCREEN_COST_SRCS = $(srcdir)/tests/fuzz/fuzz_screen_cost.c \
	$(FUZZ_SCREEN_LIB)
tests/fuzz/fuzz_screen_cost-libfuzzer: $(FUZZ_SCREEN_COST_SRCS) \
    $(srcdir)/ptyd/screen.h $(srcdir)/ptyd/screen_int.h \
    $(srcdir)/ptyd/vtfeed.h $(srcdir)/ptyd/grid.h \
    $(srcdir)/ptyd/scrollback.h
	$(AM_V_CCLD)mkdir -p tests/fuzz && $(FUZZ_CC) -g -O2 -fsanitize=fuzzer \
	    -D_GNU_SOURCE -I$(srcdir)/lib -I$(srcdir)/ptyd $(VTERM_CFLAGS) \
	    -o $@ $(FUZZ_SCREEN_COST_SRCS) $(VTERM_LIBS) $(ZLIB_LIBS) \
	    $(NETTLE_LIBS)
EXTRA_DIST += tests/fuzz/fuzz_screen_cost.c
CLEANFILES += tests/fuzz/fuzz_frame-libfuzzer tests/fuzz/fuzz_request-libfuzzer \
	tests/fuzz/fuzz_fcgi-libfuzzer tests/fuzz/fuzz_screen-libfuzzer \
	tests/fuzz/fuzz_screen_cost-libfuzzer
.PHONY: fuzz
