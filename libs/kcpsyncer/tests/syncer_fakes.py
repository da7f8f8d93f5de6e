"""A fake API resource for the syncer's unit tests: it records every call and answers as scripted."""

from __future__ import annotations

from typing import Any

from kcpsyncer.discovery import APIType


class FakeResource:
    """Records calls; `get_answer` / `delete_answer` / `create_answer` (when set) are returned or raised."""

    def __init__(self, api: APIType) -> None:
        self.api_version, self.plural, self.namespaced = api.api_version, api.plural, api.namespaced
        self.calls: list[tuple[str, Any, ...]] = []
        self.get_answer: Any = None
        self.delete_answer: Any = {"kind": "Status", "status": "Success"}
        self.create_answer: Exception | None = None

    async def get(self, name: str, **kw: Any) -> Any:
        self.calls.append(("get", name, kw))
        if isinstance(self.get_answer, Exception):
            raise self.get_answer
        return self.get_answer

    async def delete(self, name: str, **kw: Any) -> Any:
        self.calls.append(("delete", name, kw))
        if isinstance(self.delete_answer, Exception):
            raise self.delete_answer
        return self.delete_answer

    async def patch(self, name: str, body: Any, **kw: Any) -> Any:
        self.calls.append(("patch", name, body, kw))
        return body

    async def create(self, body: Any, **kw: Any) -> Any:
        self.calls.append(("create", body, kw))
        if self.create_answer is not None:
            raise self.create_answer
        return body

    async def create_in(self, name: str, subresource: str, body: Any, **kw: Any) -> Any:
        self.calls.append((f"create {subresource}", name, body, kw))
        return {"kind": "Status", "status": "Success", "code": 201}

    def verbs(self) -> list[str]:
        return [call[0] for call in self.calls]
