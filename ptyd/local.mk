# ptyd/local.mk -- the daemon and its keeper.  ptyd is started by
# ptyd.fcgi or systemd, not by people: it goes in $(libexecdir)/ptyd.
# The operator's client is ptydctl/local.mk's.
pkglibexec_PROGRAMS = ptyd/ptyd ptyd/ptyd-keeper

# Everything but main.c goes into a library so the unit tests link the same
# objects the daemon runs.
noinst_LIBRARIES += ptyd/libptyd.a
ptyd_libptyd_a_SOURCES = \
	ptyd/ptyd.h \
	ptyd/log.c ptyd/log.h \
	ptyd/lock.c ptyd/lock.h \
	ptyd/xmalloc.c ptyd/xmalloc.h \
	ptyd/ev.c ptyd/ev.h \
	ptyd/sig.c ptyd/sig.h \
	ptyd/listen.c ptyd/listen.h \
	ptyd/conn.c ptyd/conn.h ptyd/conn_int.h ptyd/connstream.c \
	ptyd/request.c ptyd/request.h \
	ptyd/term.c ptyd/term.h ptyd/term_int.h \
	ptyd/termio.c ptyd/termlife.c ptyd/termview.c \
	ptyd/termstate.c ptyd/termstate.h \
	ptyd/once.c ptyd/once.h \
	ptyd/mirror.c ptyd/mirror.h \
	ptyd/ring.c ptyd/ring.h \
	ptyd/screen.c ptyd/screen.h ptyd/screen_int.h ptyd/screenscan.c \
	ptyd/screenredraw.c ptyd/vtfeed.c ptyd/vtfeed.h \
	ptyd/grid.c ptyd/grid.h ptyd/scrollback.c ptyd/scrollback.h \
	ptyd/spawn.c ptyd/spawn.h \
	ptyd/proc.c ptyd/proc.h \
	ptyd/reap.c ptyd/reap.h \
	ptyd/stats.c ptyd/stats.h \
	ptyd/store.c ptyd/store.h \
	ptyd/chain.c ptyd/chain.h ptyd/chaindb.c ptyd/chaindb.h \
	ptyd/anchor.c ptyd/anchor.h ptyd/audit.c ptyd/audit.h \
	ptyd/auditlog.c ptyd/auditlog.h \
	ptyd/keeperlink.c ptyd/keeperlink.h ptyd/termmem.c ptyd/termmem.h \
	ptyd/termadopt.c \
	ptyd/share.c ptyd/share.h ptyd/sharetok.c ptyd/sharetok.h \
	ptyd/watch.c ptyd/watch.h \
	ptyd/record.c ptyd/record.h ptyd/record_int.h ptyd/recproc.c \
	ptyd/recretain.c
nodist_ptyd_libptyd_a_SOURCES = ptyd/schema.c
BUILT_SOURCES += ptyd/schema.c
ptyd_libptyd_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(VTERM_CFLAGS) \
	$(NETTLE_CFLAGS)
# ptyd/schema.c is generated in the build tree; it includes "store.h".
# -iquote, not -I: ptyd/spawn.h must not shadow the system <spawn.h>.
ptyd_libptyd_a_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(srcdir)/ptyd \
	-iquote $(srcdir)/recorder

ptyd_ptyd_SOURCES = ptyd/main.c
ptyd_ptyd_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
ptyd_ptyd_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(VTERM_LIBS) $(ZLIB_LIBS) $(NETTLE_LIBS) \
	$(NETTLE_LIBS) -lutil

# The keeper (DESIGN 10) is built beside ptyd, where ptyd looks for it
# (in the build tree as installed).  It links the few objects it shares
# with the daemon (log, xmalloc, once) and the link's codec; no SQLite,
# no emulator.
ptyd_ptyd_keeper_SOURCES = keeper/keeper.c keeper/kterm.c keeper/keeper.h
ptyd_ptyd_keeper_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(srcdir)/ptyd \
	-iquote $(srcdir)/keeper
ptyd_ptyd_keeper_LDADD = ptyd/libptyd.a libwire.a
