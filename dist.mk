# dist.mk -- what the tarball carries beyond the sources automake knows of,
# and the documents installed with the programs.  `make dist` gives a
# tarball from which `./configure && make && make install` needs no network
# and no npm (the built page is in it, web/local.mk); `make distcheck`
# builds it out of tree, runs make check (the unit suites; the integration
# suite needs root, nginx and a checkout: scripts/test), installs, and
# uninstalls.
dist_doc_DATA = README.md LICENSE NEWS HACKING.md
# docs/ keeps its folder, so README.md's links to docs/*.md hold where it
# is installed too.
ptyddocsdir = $(docdir)/docs
dist_ptyddocs_DATA = docs/DESIGN.md docs/STYLE.md docs/deploy.md \
	docs/hosting.md docs/operating.md docs/page.md docs/scaling.md \
	docs/security.md docs/pools.md docs/package.md

EXTRA_DIST += .clang-format .clang-tidy .editorconfig \
	build-aux/.keep m4/.keep \
	scripts/demo scripts/fnsize scripts/format scripts/lint scripts/lint.known \
	scripts/ptyd-stack scripts/setup scripts/test .ci/run \
	tests/integration tests/attack/attack.py \
	tests/browser/run.mjs tests/browser/correctness.mjs \
	tests/browser/features.mjs tests/browser/status.mjs \
	tests/browser/security.mjs tests/browser/watch.mjs \
	tests/browser/front.mjs \
	tests/browser/package.json \
	tests/browser/package-lock.json \
	tests/daemon/README tests/fuzz/make-corpus.py \
	tests/keeper/upgrade_from_rev.sh debian docs/proposals \
	bench/README.md bench/store/README.md bench/storm

# Directories above are copied whole: leave out what Python writes there.
dist-hook: dist-clean-pycache
dist-clean-pycache:
	@find '$(distdir)' -name __pycache__ -type d -prune -exec rm -rf {} + ; \
	find '$(distdir)' -name '*.pyc' -exec rm -f {} +
.PHONY: dist-clean-pycache
