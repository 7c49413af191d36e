# tests/unit/store.mk -- Criterion suites for store (owned with store).
