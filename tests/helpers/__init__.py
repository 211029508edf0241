"""The test harness the tiers share (tests/conftest.py and the modules of tests/service and
tests/e2e): waiting for a condition, the API and toy rankers on loopback, the Celery worker's
control, the order of the modules under xdist."""
