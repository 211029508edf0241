"""What differs between experiment designs, asked of one object: an experiment's
:class:`~service.designs.base.Design`, resolved once from its meta by
:func:`~service.designs.registry.design_of`.

A design is a type (:mod:`service.designs.base`): it declares its capabilities once, as
class attributes, and answers the operations that differ between designs: validate and
create an experiment, serve a search and a next page, record clicks and outcomes, credit,
build the report. The designs are interleaving (:mod:`service.interleaving.design`, over
the code rankduel grew around it: ``search/``, ``clicks/``, ``credit/``, ``reports/``)
and A/B (:mod:`service.ab`, one folder). Callers ask the design; nothing outside the
registry and ``service/ab/`` compares a design's name (``tests/unit/test_architecture.py``).

This folder is the bottom layer of :data:`service.LAYERS` (every layer that differs by
design asks here, the store too, for a design's part: ``store.ab``), and imports no
design: the registry loads each design's module the first time it is asked for
(:data:`~service.designs.registry.INSTALLED`, one line per design).
"""
