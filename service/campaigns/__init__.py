"""Human preference-judging campaigns on the same engine (:mod:`judging`): their
operations in :mod:`service.campaigns.operations`, stored by
:mod:`service.store.campaigns`, served by :mod:`service.api.campaigns`.
"""
