# tests/unit/ptyd.mk -- Criterion suites for ptyd (owned with ptyd).
