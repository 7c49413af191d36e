# man/local.mk -- the manual pages, written from their .in with this
# configure's directories (FILES sections name the installed paths, and
# ptyd.fcgi(8) the installed docs/deploy.md).
man1_MANS = man/ptydctl.1
man5_MANS = man/ptyd.conf.5
man8_MANS = man/ptyd.8 man/ptyd.fcgi.8 man/ptyd-pool.8
MAN_GEN = $(man1_MANS) $(man5_MANS) $(man8_MANS)
EXTRA_DIST += man/ptydctl.1.in man/ptyd.conf.5.in man/ptyd.8.in \
	man/ptyd.fcgi.8.in man/ptyd-pool.8.in
CLEANFILES += $(MAN_GEN)
$(MAN_GEN): Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) -e 's|@docdir[@]|$(docdir)|g' $(srcdir)/$@.in \
	    > $@.tmp && mv $@.tmp $@
man/ptydctl.1: $(srcdir)/man/ptydctl.1.in
man/ptyd.conf.5: $(srcdir)/man/ptyd.conf.5.in
man/ptyd.8: $(srcdir)/man/ptyd.8.in
man/ptyd.fcgi.8: $(srcdir)/man/ptyd.fcgi.8.in
man/ptyd-pool.8: $(srcdir)/man/ptyd-pool.8.in
