# tests/unit/fcgi.mk -- Criterion suites for fcgi (owned with fcgi).
