"""Browsing Hugging Face for GGUF models: search repositories, list a repository's quants.

Quant names and their order come from the pull package (``group_gguf_files``), so the name a
listing offers (``hf.co/org/repo:Q4_K_M``) is exactly what a pull of it resolves. Calls block
(huggingface_hub is synchronous): the routes run them in a worker thread.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from huggingface_hub import HfApi, ModelInfo
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

from localllm.model_registry.errors import (
    AuthenticationError,
    DownloadError,
    InvalidRepoError,
    UnknownModelError,
)
from localllm.model_registry.pull import DEFAULT_ENDPOINT
from localllm.model_registry.pull.quants import group_gguf_files

__all__ = ["HubBrowser", "HubFileInfo", "HubListing", "HubRepoInfo"]

_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
_HEADROOM = 0.8  # a recommended quant leaves 20% of free memory


@dataclass(frozen=True, slots=True)
class HubRepoInfo:
    repo: str
    downloads: int
    likes: int
    updated: str | None
    gated: bool


@dataclass(frozen=True, slots=True)
class HubFileInfo:
    file: str
    quant: str
    size: int
    shards: int
    name_to_pull: str
    recommended: bool


@dataclass(frozen=True, slots=True)
class HubListing:
    repo: str  # as the hub spells it
    files: tuple[HubFileInfo, ...]  # best quantization first
    projector: str | None


class HubBrowser:
    def __init__(self, endpoint: str | None, token: str | None, timeout: float = 20.0):
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self._timeout = timeout
        self._token = token
        # token=False: huggingface_hub must not look for a token on its own (env, files).
        self._api = HfApi(endpoint=self.endpoint, token=token or False, library_name="localllm")

    def search(self, query: str, limit: int) -> list[HubRepoInfo]:
        """GGUF repositories matching ``query``, most downloaded first. One plain request:
        huggingface_hub's ``list_models`` retries a dead connection for about 25 s."""
        params: dict[str, str | int] = {"filter": "gguf", "limit": limit, "sort": "downloads"}
        if query:
            params["search"] = query
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        found = self._call(
            "search",
            lambda: _get_json(f"{self.endpoint}/api/models", params, headers, self._timeout),
        )
        if not isinstance(found, list):
            raise DownloadError("Hugging Face answered the search with something unexpected")
        return [_repo_info(ModelInfo(**item)) for item in found[:limit] if isinstance(item, dict)]

    def files(self, repo: str, memory_available: int) -> HubListing:
        """Each quantization of ``repo`` (best first) and its vision projector, if any; the
        recommended one is the best that fits in free memory with headroom."""
        if not _REPO.fullmatch(repo):
            raise InvalidRepoError("repo must look like org/name")
        info = self._call(repo, lambda: self._api.model_info(repo, files_metadata=True))
        repo = str(getattr(info, "id", None) or repo)
        sizes = {s.rfilename: int(s.size or 0) for s in getattr(info, "siblings", None) or ()}
        groups, projectors = group_gguf_files(sizes)
        budget = memory_available * _HEADROOM
        fitting = next((g for g in groups if sum(sizes[f] for f in g.files) <= budget), None)
        chosen = fitting or (
            min(groups, key=lambda g: sum(sizes[f] for f in g.files), default=None)
        )
        files = tuple(
            HubFileInfo(
                file=group.files[0],
                quant=group.quant,
                size=sum(sizes[f] for f in group.files),
                shards=group.shard_count,
                name_to_pull=f"hf.co/{repo}:{group.quant}",
                recommended=group is chosen,
            )
            for group in groups
        )
        return HubListing(repo, files, projectors[0] if projectors else None)

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except GatedRepoError:
            raise AuthenticationError(
                f"hf.co/{what} is gated: accept its terms on Hugging Face and set a token"
            ) from None
        except RepositoryNotFoundError:
            raise UnknownModelError(f"hf.co/{what} was not found on Hugging Face") from None
        except (HfHubHTTPError, httpx.HTTPStatusError) as error:
            status = getattr(getattr(error, "response", None), "status_code", None)
            raise DownloadError(f"Hugging Face answered HTTP {status} for {what}") from None
        except OSError:
            raise DownloadError(self._unreachable()) from None
        except Exception as error:
            if _is_transport_error(error):
                raise DownloadError(self._unreachable()) from None
            raise

    def _unreachable(self) -> str:
        return f"could not reach {self.endpoint}; check the internet connection"


def _get_json(
    url: str, params: dict[str, str | int], headers: dict[str, str], timeout: float
) -> object:
    response = httpx.get(url, params=params, headers=headers, timeout=timeout)
    response.raise_for_status()
    try:
        return response.json()
    except ValueError:
        return None


def _is_transport_error(error: Exception) -> bool:
    for module in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError, AttributeError):
            if isinstance(error, __import__(module).TransportError):
                return True
    return False


def _repo_info(model: Any) -> HubRepoInfo:
    updated: Any = getattr(model, "last_modified", None) or getattr(model, "lastModified", None)
    return HubRepoInfo(
        repo=str(model.id),
        downloads=int(getattr(model, "downloads", 0) or 0),
        likes=int(getattr(model, "likes", 0) or 0),
        updated=updated.isoformat() if hasattr(updated, "isoformat") else updated,
        gated=bool(getattr(model, "gated", False)),
    )
