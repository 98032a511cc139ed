"""What the routes of one app share, reached through ``state()`` inside a request."""

from __future__ import annotations

from flask import current_app

from hypermem.config import Settings
from hypermem.records.jobs import IngestJobs


class ApiState:
    """What the routes share: settings, the MemoryService, the ingest jobs. ``close()`` at shutdown."""

    def __init__(self, settings: Settings, service, owns_service: bool, sync_batch_limit: int):
        self.settings = settings
        self.service = service
        self.owns_service = owns_service
        self.sync_batch_limit = sync_batch_limit
        self.jobs = IngestJobs(service, chunk_size=sync_batch_limit)

    @property
    def store(self):
        return self.service.store

    def close(self) -> None:
        """Wait for the running ingest job, then close the service if this app opened it."""
        self.jobs.close()
        if self.owns_service:
            self.service.close()


def state() -> ApiState:
    """The ``ApiState`` of the current app."""
    return current_app.extensions["hypermem"]
