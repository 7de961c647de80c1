"""The TLS servers of tests/integration/test_tls.py, from
:mod:`tests.integration.private_servers` (kept under this name for its importers)."""

from tests.integration.private_servers import (
    RABBITMQ_SERVER,
    READY_TIMEOUT,
    Certificates,
    free_port,
    make_certificates,
    require,
    server,
    tls_rabbitmq,
    tls_redis,
)

__all__ = [
    "RABBITMQ_SERVER",
    "READY_TIMEOUT",
    "Certificates",
    "free_port",
    "make_certificates",
    "require",
    "server",
    "tls_rabbitmq",
    "tls_redis",
]
