# apache/local.mk -- the Apache 2.4 configs an operator includes (mod_fcgid,
# with or without suexec; mod_cgid; mod_proxy_fcgi; the page, which names
# its folder) and the wrapper mod_fcgid and suexec run, installed in
# $(pkgdatadir)/apache.
apachedir = $(pkgdatadir)/apache
dist_apache_DATA = apache/ptyd-fcgid.conf apache/ptyd-cgid.conf \
	apache/ptyd-proxy-fcgi.conf
apache_SCRIPTS = apache/ptyd-fcgid-wrapper
apache_DATA = apache/ptyd-page.conf
EXTRA_DIST += apache/ptyd-fcgid-wrapper.in apache/ptyd-page.conf.in
CLEANFILES += apache/ptyd-fcgid-wrapper apache/ptyd-page.conf
apache/ptyd-fcgid-wrapper: $(srcdir)/apache/ptyd-fcgid-wrapper.in Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) $(srcdir)/apache/ptyd-fcgid-wrapper.in > $@.tmp && \
	  chmod +x $@.tmp && mv $@.tmp $@
apache/ptyd-page.conf: $(srcdir)/apache/ptyd-page.conf.in Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) $(srcdir)/apache/ptyd-page.conf.in > $@.tmp && mv $@.tmp $@
