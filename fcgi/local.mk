# fcgi/local.mk -- ptyd.fcgi, the stateless FastCGI front.
bin_PROGRAMS += fcgi/ptyd.fcgi

# Everything but main.c goes into a library so the unit tests link it.
noinst_LIBRARIES += fcgi/libfront.a
fcgi_libfront_a_SOURCES = \
	fcgi/front.h \
	fcgi/buf.c fcgi/buf.h \
	fcgi/flog.c fcgi/flog.h \
	fcgi/http.c fcgi/http.h \
	fcgi/gate.c fcgi/gate.h \
	fcgi/peer.c fcgi/peer.h \
	fcgi/fcgi_guard.c fcgi/fcgi_guard.h \
	fcgi/json.c fcgi/json.h \
	fcgi/utf8.c fcgi/utf8.h \
	fcgi/sse.c fcgi/sse.h \
	fcgi/ptyd_client.c fcgi/ptyd_client.h \
	fcgi/handlers.c fcgi/handlers.h \
	fcgi/metrics.c fcgi/metrics.h \
	fcgi/stream.c fcgi/stream.h fcgi/stream_int.h \
	fcgi/streamloop.c fcgi/streamloop.h \
	fcgi/server.c fcgi/server.h \
	fcgi/pool.c fcgi/poolpark.c fcgi/pool_int.h
fcgi_libfront_a_CFLAGS = $(AM_CFLAGS) $(FCGI_CFLAGS) $(JANSSON_CFLAGS)

fcgi_ptyd_fcgi_SOURCES = fcgi/main.c
fcgi_ptyd_fcgi_CFLAGS = $(AM_CFLAGS) $(FCGI_CFLAGS) $(JANSSON_CFLAGS)
# -lm: json.c's floor(), and libfcgi.so.0 calls frexp() without naming
# libm among its own needs (it is underlinked): dpkg-shlibdeps's warning
# that ptyd.fcgi uses none of libm's symbols counts only ours.
fcgi_ptyd_fcgi_LDADD = fcgi/libfront.a libwire.a $(FCGI_LIBS) \
	$(JANSSON_LIBS) -lm
