# etc/local.mk -- what an operator installs around the programs: systemd
# units, the logrotate snippet and the sample ptyd.conf.  The units and the
# snippet name installed paths, so make writes them from their .in with
# the directories of this configure (and of any `make prefix=...`).
# ptyd.service is the handle (ptydctl service); ptyd-keeper.service runs
# the keeper, which holds the shells (ptyd(8), SHELLS AND THE DAEMON).
systemdsystemunit_DATA = etc/systemd/ptyd.service etc/systemd/ptyd@.service \
	etc/systemd/ptyd-keeper.service etc/systemd/ptyd-keeper@.service \
	etc/systemd/ptyd-fcgi.socket etc/systemd/ptyd-fcgi.service \
	etc/systemd/ptyd-fcgi@.socket etc/systemd/ptyd-fcgi@.service \
	etc/systemd/ptyd-pool.service
systemduserunit_DATA = etc/systemd/user/ptyd.service \
	etc/systemd/user/ptyd-keeper.service
logrotatedir = $(sysconfdir)/logrotate.d
logrotate_DATA = etc/logrotate.d/ptyd
sysconf_DATA = etc/ptyd.conf.sample

ETC_IN = etc/systemd/ptyd.service.in etc/systemd/ptyd@.service.in \
	etc/systemd/ptyd-keeper.service.in etc/systemd/ptyd-keeper@.service.in \
	etc/systemd/ptyd-fcgi.socket.in etc/systemd/ptyd-fcgi.service.in \
	etc/systemd/ptyd-fcgi@.socket.in etc/systemd/ptyd-fcgi@.service.in \
	etc/systemd/ptyd-pool.service.in etc/systemd/user/ptyd.service.in \
	etc/systemd/user/ptyd-keeper.service.in etc/logrotate.d/ptyd.in
EXTRA_DIST += $(ETC_IN) etc/ptyd.conf.sample
CLEANFILES += $(ETC_GEN)

# One substitution for every generated file that names a directory.
do_subst = $(SED) -e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' \
	-e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	-e 's|@sbindir[@]|$(sbindir)|g' \
	-e 's|@pkgdatadir[@]|$(pkgdatadir)|g' \
	-e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g'

ETC_GEN = $(systemdsystemunit_DATA) $(systemduserunit_DATA) \
	$(logrotate_DATA)
$(ETC_GEN): Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) $(srcdir)/$@.in > $@.tmp && mv $@.tmp $@
etc/systemd/ptyd.service: $(srcdir)/etc/systemd/ptyd.service.in
etc/systemd/ptyd@.service: $(srcdir)/etc/systemd/ptyd@.service.in
etc/systemd/ptyd-keeper.service: $(srcdir)/etc/systemd/ptyd-keeper.service.in
etc/systemd/ptyd-keeper@.service: \
	$(srcdir)/etc/systemd/ptyd-keeper@.service.in
etc/systemd/ptyd-fcgi.socket: $(srcdir)/etc/systemd/ptyd-fcgi.socket.in
etc/systemd/ptyd-fcgi.service: $(srcdir)/etc/systemd/ptyd-fcgi.service.in
etc/systemd/ptyd-fcgi@.socket: $(srcdir)/etc/systemd/ptyd-fcgi@.socket.in
etc/systemd/ptyd-fcgi@.service: $(srcdir)/etc/systemd/ptyd-fcgi@.service.in
etc/systemd/ptyd-pool.service: $(srcdir)/etc/systemd/ptyd-pool.service.in
etc/systemd/user/ptyd.service: $(srcdir)/etc/systemd/user/ptyd.service.in
etc/systemd/user/ptyd-keeper.service: \
	$(srcdir)/etc/systemd/user/ptyd-keeper.service.in
etc/logrotate.d/ptyd: $(srcdir)/etc/logrotate.d/ptyd.in
