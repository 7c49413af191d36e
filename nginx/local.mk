# nginx/local.mk -- the location blocks an operator includes, installed in
# $(pkgdatadir)/nginx (the demo's complete config stays in the tree).
# ptyd-page.conf serves the installed page, so it names its folder.
nginxdir = $(pkgdatadir)/nginx
dist_nginx_DATA = nginx/ptyd-errors.conf nginx/ptyd-fastcgi.conf \
	nginx/ptyd-location.conf nginx/ptyd-location-auth-basic.conf \
	nginx/ptyd-location-auth-request.conf nginx/ptyd-stream.conf \
	nginx/ptyd-location-fcgiwrap.conf \
	nginx/ptyd-location-accounts.conf nginx/ptyd-accounts.conf.example \
	nginx/ptyd-hosts.conf.example
nginx_DATA = nginx/ptyd-page.conf
EXTRA_DIST += nginx/ptyd-page.conf.in nginx/ptyd-demo.conf.in \
	nginx/ptyd-demo-source.conf
CLEANFILES += nginx/ptyd-page.conf
nginx/ptyd-page.conf: $(srcdir)/nginx/ptyd-page.conf.in Makefile
	$(AM_V_GEN)mkdir -p $(@D) && \
	  $(do_subst) $(srcdir)/nginx/ptyd-page.conf.in > $@.tmp && mv $@.tmp $@
