"""The bus edge. ``open_bus(url)`` picks the implementation: ``memory://`` or ``amqp://``."""

from services.common.bus.base import (
    BatchHandler,
    Bus,
    BusError,
    Consumer,
    Delivery,
    Message,
    Rejection,
)

__all__ = ["BatchHandler", "Bus", "BusError", "Consumer", "Delivery", "Message", "Rejection"]
