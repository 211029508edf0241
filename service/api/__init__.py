"""HTTP: thin handlers, one blueprint per area (:mod:`~service.api.frontend`,
:mod:`~service.api.operator`, :mod:`~service.api.campaigns`, :mod:`~service.api.status`,
:mod:`~service.api.ui`, :mod:`~service.api.openapi`), each route declared once with its
OpenAPI operation (:mod:`~service.api.spec`); bodies checked against
:mod:`~service.schemas` (:mod:`~service.api.validation`), tokens by
:mod:`~service.api.auth`, cross-origin requests by :mod:`~service.api.cors`. Errors are
typed (:mod:`service.errors`) and turned into JSON in one place (:mod:`service.app`)."""
