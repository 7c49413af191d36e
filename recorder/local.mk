# recorder/local.mk -- ptyd-recorder (DESIGN 4), built beside ptyd where
# ptyd looks for it (in the build tree as installed, like the keeper).  It
# links the live stream's UTF-8 sanitiser and JSON escaper (fcgi/utf8.c,
# fcgi/json.c), so a recording's text is the stream's, and nettle's
# SHA-256; no SQLite, no emulator.
pkglibexec_PROGRAMS += ptyd/ptyd-recorder
ptyd_ptyd_recorder_SOURCES = recorder/recorder.c recorder/cast.c \
	recorder/cast.h recorder/recwire.h \
	fcgi/utf8.c fcgi/buf.c fcgi/json.c
ptyd_ptyd_recorder_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(NETTLE_CFLAGS)
ptyd_ptyd_recorder_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(srcdir)/recorder \
	-iquote $(srcdir)/fcgi
ptyd_ptyd_recorder_LDADD = libwire.a $(JANSSON_LIBS) $(NETTLE_LIBS) -lm
