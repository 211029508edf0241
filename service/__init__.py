"""The I/O shell of rankduel: HTTP API, Redis state, ranker client, command line."""
