# web/local.mk -- the page as installed: built by scripts/build-web into
# web/dist (index.html and assets/ with hashed names, no node_modules, no
# package files) and installed in $(pkgdatadir)/web.
#
# The built page travels in the tarball, so a build from `make dist` needs
# neither npm nor the network: where web/node_modules is missing (a
# tarball), the web/dist shipped in the source tree is installed as is.
# app.js and its modules (scripts/build-web takes every web/*.mjs).
WEB_SRC = web/index.html web/app.js web/style.css web/favicon.svg \
	web/api.mjs web/backoff.mjs web/clipboard.mjs web/dialogs.mjs \
	web/input.mjs web/keys.mjs web/link.mjs web/paste.mjs web/predict.mjs \
	web/settings.mjs web/sse.mjs web/status.mjs web/stream.mjs web/view.mjs \
	web/viewer.mjs web/cast.mjs web/replay.mjs web/fragment.mjs \
	web/watchers.mjs web/share.mjs web/player.mjs
EXTRA_DIST += $(WEB_SRC) web/package.json web/package-lock.json \
	scripts/build-web
# The page's checks travel with it (scripts/test --only js, make lint-js).
EXTRA_DIST += tests/js/pure.test.mjs tests/js/sse.test.mjs \
	tests/js/link.test.mjs tests/js/watch.test.mjs tests/js/viewer.test.mjs \
	tests/js/eslint.config.mjs \
	tests/js/package.json tests/js/package-lock.json
WEB_XTERM = $(srcdir)/web/node_modules/@xterm/xterm/lib/xterm.mjs

all-local: web-dist
web-dist:
	@if test -f '$(WEB_XTERM)'; then \
	  $(SHELL) $(srcdir)/scripts/build-web $(srcdir)/web web/dist; \
	elif test -f '$(srcdir)/web/dist/index.html'; then :; \
	else \
	  echo "web: no xterm.js in web/node_modules and no built page:" \
	    "run scripts/setup (npm ci in web/); the page is not built" >&2; \
	fi

# The built page in this tree, else the one that came with the sources.
WEB_DIST = `if test -f web/dist/index.html; then echo web/dist; \
	else echo '$(srcdir)/web/dist'; fi`

install-data-local: install-web
install-web: web-dist
	@d=$(WEB_DIST); test -f "$$d/index.html" || { \
	  echo "web: no built page to install (run scripts/setup)" >&2; \
	  exit 1; }; \
	echo " installing the page ($$d) in $(DESTDIR)$(pkgdatadir)/web"; \
	$(MKDIR_P) '$(DESTDIR)$(pkgdatadir)/web/assets' && \
	$(INSTALL_DATA) "$$d/index.html" '$(DESTDIR)$(pkgdatadir)/web/' && \
	$(INSTALL_DATA) "$$d"/assets/* '$(DESTDIR)$(pkgdatadir)/web/assets/'

uninstall-local: uninstall-web
uninstall-web:
	rm -rf '$(DESTDIR)$(pkgdatadir)/web'

# The tarball gets the page built here (or the one this tree came with).
dist-hook: dist-web
dist-web: web-dist
	@d=$(WEB_DIST); test -f "$$d/index.html" || { \
	  echo "web: no built page for the tarball (run scripts/setup)" >&2; \
	  exit 1; }; \
	$(MKDIR_P) '$(distdir)/web/dist/assets' && \
	cp -p "$$d/index.html" '$(distdir)/web/dist/' && \
	cp -p "$$d"/assets/* '$(distdir)/web/dist/assets/'

clean-local: clean-web
clean-web:
	@test -f '$(WEB_XTERM)' && rm -rf web/dist || :

.PHONY: web-dist install-web uninstall-web dist-web clean-web
