# ptydctl/local.mk -- ptydctl, the operator's and the tests' client of
# ptyd.  People run it: it goes in $(bindir).
bin_PROGRAMS += ptydctl/ptydctl

# It speaks the wire (libwire.a).  The audit chain's files (chain.c,
# chaindb.c, anchor.c) come from ptyd/libptyd.a: the same objects ptyd
# writes the chain with; nothing else of the daemon is linked in.  play
# parses a recording's lines with jansson.
ptydctl_ptydctl_SOURCES = ptydctl/ptydctl.c ptydctl/ptydctl.h \
	ptydctl/ptydctl_prune.c ptydctl/ptydctl_audit.c ptydctl/ptydctl_keeper.c \
	ptydctl/ptydctl_pools.c ptydctl/ptydctl_rec.c
ptydctl_ptydctl_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(srcdir)/ptyd
ptydctl_ptydctl_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(NETTLE_CFLAGS) \
	$(JANSSON_CFLAGS)
ptydctl_ptydctl_LDADD = ptyd/libptyd.a libwire.a $(SQLITE_LIBS) $(NETTLE_LIBS) \
	$(JANSSON_LIBS)
