"""The live service, the I/O shell of rankduel: HTTP API, Redis state, ranker client,
configuration and metrics. The command line (``cli``) and the demo tooling (``demo``) sit
beside it; ``tests/unit/test_architecture.py`` checks that it imports neither."""
