"""Length limits on ids that more than one module enforces, defined once.

Two kinds of id, two limits (both the API's contract as it stands):

* the service's own ids (experiments, impressions, campaign items and queries,
  assessors): at most :data:`MAX_ID_CHARS`, in request bodies, query strings and paths
  (:mod:`service.schemas`, :mod:`service.api.frontend`);
* document ids, which rankers choose: at most :data:`MAX_DOC_ID_CHARS`, in a ranker's
  answer (:mod:`service.rankers.client`) and in the click reports that name a document
  (``/clicks`` as a form, ``/r``).

Pure constants: importing this module loads nothing else.
"""

#: the longest id of the service's own (experiment, impression, campaign item, assessor)
MAX_ID_CHARS = 64
#: the longest document id a ranker may return (and a click report may name)
MAX_DOC_ID_CHARS = 256
