"""The real service for tests (coderl.server.launch)."""

from coderl.server.launch import free_port, running_service

__all__ = ["free_port", "running_service"]
