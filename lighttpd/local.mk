# lighttpd/local.mk -- the lighttpd 1.4 configs an operator includes
# (mod_fastcgi, mod_cgi, and the JSON answer for lighttpd's own errors
# that both include), installed in $(pkgdatadir)/lighttpd.
lighttpddir = $(pkgdatadir)/lighttpd
dist_lighttpd_DATA = lighttpd/ptyd-fastcgi.conf lighttpd/ptyd-cgi.conf \
	lighttpd/ptyd-errors.conf lighttpd/ptyd-error.json
