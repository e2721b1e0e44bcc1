"""Turning a model name into a pull plan: which files, how big, which sha256, from where.

One metadata call (``model_info(files_metadata=True)``) gives every file's size and sha256
from the hub's LFS records before a byte is downloaded, so the content address of each blob
is known up front: finished blobs are skipped, the disk check is exact, and every download is
verified against a digest the hub published, not one we computed ourselves. Files are fetched
from the commit the metadata came from, so a push during the pull cannot mix two versions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import (
    AuthenticationError,
    DownloadError,
    InvalidDigestError,
    PullError,
    UnknownModelError,
)
from localllm.model_registry.names import HUGGING_FACE_HOST, ModelName, parse_name
from localllm.model_registry.pull.catalog import Catalog, CatalogEntry
from localllm.model_registry.pull.ct2 import ct2_file_names, is_ct2_repo
from localllm.model_registry.pull.fetch import auth_advice
from localllm.model_registry.pull.git_files import GitFile
from localllm.model_registry.pull.quants import select
from localllm.model_registry.pull.voice import voice_file_paths
from localllm.model_registry.store.manifests import LayerType

__all__ = ["DEFAULT_ENDPOINT", "PlannedFile", "PullPlan", "Resolver"]

DEFAULT_ENDPOINT = "https://huggingface.co"


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection-level failures of whichever HTTP stack huggingface_hub uses."""
    errors: list[type[BaseException]] = [OSError]
    for module in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError, AttributeError):
            errors.append(__import__(module).TransportError)
    return tuple(errors)


_TRANSPORT_ERRORS = _transport_errors()


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file to fetch: its repository path, size, digest, role and download URL."""

    path: str
    size: int
    digest: Digest
    layer_type: LayerType
    url: str


@dataclass(frozen=True, slots=True)
class PullPlan:
    """Everything a pull needs, decided before any download starts."""

    name: ModelName
    repo: str
    revision: str
    quant: str
    files: tuple[PlannedFile, ...]
    catalog_name: str | None = None
    # a Whisper model in CTranslate2 form, or a Piper voice: every file of its folder, those
    # kept in git (no LFS record, so no sha256) checked by their git blob id instead
    format: Literal["gguf", "ct2", "voice"] = "gguf"
    git_files: tuple[GitFile, ...] = ()

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files) + sum(f.size for f in self.git_files)

    @property
    def model_files(self) -> tuple[PlannedFile, ...]:
        return tuple(file for file in self.files if file.layer_type is LayerType.MODEL)

    def source(self) -> dict[str, object]:
        """Where the model came from, as recorded in its config blob."""
        source: dict[str, object] = {
            "hub": HUGGING_FACE_HOST,
            "repo": self.repo,
            "revision": self.revision,
            "quant": self.quant,
            "files": sorted([f.path for f in self.files] + [f.path for f in self.git_files]),
        }
        if self.catalog_name:
            source["catalog"] = self.catalog_name
        return source


class Resolver:
    """Resolves names against one hub endpoint with one (optional) token."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
    ):
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self._token = token
        self._timeout = timeout
        self._catalog = catalog
        # token=False: huggingface_hub must not look for a token on its own (env, files).
        self._api = HfApi(endpoint=self.endpoint, token=token or False, library_name="localllm")

    def resolve(self, name: ModelName | str) -> PullPlan:
        name = name if isinstance(name, ModelName) else parse_name(name)
        entry: CatalogEntry | None = None
        if name.is_catalog:
            entry = self._catalog.lookup(name)
            repo, tag = entry.repo, entry.quant.lower()
        elif name.is_hugging_face:
            repo, tag = f"{name.namespace}/{name.model}", name.tag
        else:
            raise UnknownModelError(
                f"cannot pull {name.display!r}: localllm pulls catalog names (like qwen:7b) and "
                f"Hugging Face models as hf.co/{name.namespace}/{name.model}[:quant]"
            )
        info = self._model_info(repo)
        repo = str(info.id or repo)  # names are lower-cased; the hub knows the real spelling
        files = {sibling.rfilename: sibling for sibling in info.siblings or ()}
        if entry is not None and entry.kind == "speech":
            voice = voice_file_paths(repo, entry.path, files)
            return self._folder_plan(name, repo, info.sha or "main", files, voice, entry)
        if is_ct2_repo(files):
            return self._ct2_plan(name, repo, info.sha or "main", files, entry)
        selection = select(files, tag, repo)
        chosen = [(path, LayerType.MODEL) for path in selection.model_files]
        if selection.projector:
            chosen.append((selection.projector, LayerType.PROJECTOR))
        revision = info.sha or "main"
        planned = tuple(self._planned(repo, revision, files[path], kind) for path, kind in chosen)
        return PullPlan(
            name=name,
            repo=repo,
            revision=revision,
            quant=selection.quant,
            files=planned,
            catalog_name=entry.name if entry else None,
        )

    def _ct2_plan(
        self,
        name: ModelName,
        repo: str,
        revision: str,
        files: dict[str, Any],
        entry: CatalogEntry | None,
    ) -> PullPlan:
        """Every file of a Whisper model's folder; the tag is not a quant here (one each)."""
        chosen = ct2_file_names(repo, files)
        return self._folder_plan(name, repo, revision, files, chosen, entry)

    def _folder_plan(
        self,
        name: ModelName,
        repo: str,
        revision: str,
        files: dict[str, Any],
        chosen: Sequence[str],
        entry: CatalogEntry | None,
    ) -> PullPlan:
        """The ``chosen`` files of a model kept as a folder (a Whisper model's, a voice's)."""
        voice = entry is not None and entry.kind == "speech"
        kind = LayerType.VOICE if voice else LayerType.CT2
        siblings = [files[path] for path in chosen]
        return PullPlan(
            name=name,
            repo=repo,
            revision=revision,
            quant=entry.quant if voice and entry else "ct2",
            files=tuple(
                self._planned(repo, revision, sibling, kind)
                for sibling in siblings
                if sibling.lfs is not None
            ),
            catalog_name=entry.name if entry else None,
            format="voice" if voice else "ct2",
            git_files=tuple(self._git(repo, revision, s) for s in siblings if s.lfs is None),
        )

    def _git(self, repo: str, revision: str, sibling: Any) -> GitFile:
        url = hf_hub_url(repo, sibling.rfilename, revision=revision, endpoint=self.endpoint)
        oid, size = sibling.blob_id, sibling.size
        if not isinstance(oid, str) or not isinstance(size, int):
            raise PullError(f"hf.co/{repo}: {sibling.rfilename} has no git blob id or size")
        return GitFile(sibling.rfilename, size, oid, url)

    def _model_info(self, repo: str) -> Any:
        try:
            return self._api.model_info(repo, files_metadata=True, timeout=self._timeout)
        except GatedRepoError:
            raise AuthenticationError(
                f"hf.co/{repo}: {auth_advice(repo)}"
                + ("" if self._token else " (no Hugging Face token is set)")
            ) from None
        except RepositoryNotFoundError as error:
            if _status(error) == 401 and not self._token:
                raise AuthenticationError(
                    f"hf.co/{repo} was not found, or {auth_advice(repo)}"
                ) from None
            raise UnknownModelError(
                f"hf.co/{repo} was not found on Hugging Face (check the spelling; a private "
                "repository also needs a token with access to it)"
            ) from None
        except HfHubHTTPError as error:
            if _status(error) in (401, 403):
                raise AuthenticationError(
                    f"Hugging Face refused access to hf.co/{repo} (HTTP {_status(error)}): "
                    f"{auth_advice(repo)}"
                ) from None
            raise DownloadError(
                f"Hugging Face answered HTTP {_status(error)} for hf.co/{repo}; "
                "try the pull again later"
            ) from None
        except _TRANSPORT_ERRORS:
            raise DownloadError(
                f"could not reach {self.endpoint} to look up hf.co/{repo}; "
                "check the internet connection and run the pull again"
            ) from None

    def _planned(self, repo: str, revision: str, sibling: Any, kind: LayerType) -> PlannedFile:
        lfs = sibling.lfs
        if lfs is None:
            raise PullError(
                f"hf.co/{repo}: {sibling.rfilename} has no LFS record, so its sha256 is unknown "
                "and it cannot be verified"
            )
        try:
            digest = Digest(str(lfs.sha256))
        except InvalidDigestError:
            raise PullError(f"hf.co/{repo}: {sibling.rfilename} has an invalid sha256") from None
        size = int(lfs.size)
        if size < 0:
            raise PullError(f"hf.co/{repo}: {sibling.rfilename} has an invalid size")
        url = hf_hub_url(repo, sibling.rfilename, revision=revision, endpoint=self.endpoint)
        return PlannedFile(sibling.rfilename, size, digest, kind, url)


def _status(error: HfHubHTTPError) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)
