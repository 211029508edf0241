"""Who may do what: API keys with scopes (:mod:`service.access.scopes`,
:mod:`service.access.secret`), the check of a request's key (:mod:`service.access.gate`)
and the audit trail's reads (:mod:`service.access.audit`). The keys live in
:mod:`service.store.access`; the trail is written by :mod:`service.store.trail`.
docs/operations/security.md tells the operator's side."""
