# spawn-fcgi/local.mk -- the run script of a runit or daemontools service
# that starts ptyd.fcgi through spawn-fcgi, installed in
# $(pkgdatadir)/spawn-fcgi.
spawnfcgidir = $(pkgdatadir)/spawn-fcgi
spawnfcgi_SCRIPTS = spawn-fcgi/run
EXTRA_DIST += spawn-fcgi/run.in
CLEANFILES += spawn-fcgi/run
spawn-fcgi/run: $(srcdir)/spawn-fcgi/run.in Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) $(srcdir)/spawn-fcgi/run.in > $@.tmp && \
	  chmod +x $@.tmp && mv $@.tmp $@
