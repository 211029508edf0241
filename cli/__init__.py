"""The ``rankduel`` command line (the ``rankduel`` console script is :func:`cli.main.main`).

* :mod:`cli.main` — the argument parser; one subcommand per module of :mod:`cli.commands`
  (``simulate``, ``matrix generate|estimate``, ``serve``, ``worker``, ``demo``,
  ``traffic``), each thin: parse, call into :mod:`bandits`, :mod:`interleaving`,
  :mod:`service`, :mod:`workers` or :mod:`demo`, print.
* :mod:`cli.matrix_files` — reading and writing preference-matrix files (the pure matrix
  code is :mod:`bandits.matrices`).
* :mod:`cli.progress` — a terminal progress bar; :mod:`cli.plots` — regret figures
  (matplotlib, from the ``demo`` extra, imported only when a figure is drawn).

Nothing in :mod:`service` or :mod:`workers` imports this package.
"""
