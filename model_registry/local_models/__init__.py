"""Models other apps already downloaded (Hugging Face cache, LM Studio, Ollama, folders the
user names): found within bounds, then added to the store linked where possible."""

from localllm.model_registry.local_models.adding import MODES, AddedFile, AddReport, add_found_model
from localllm.model_registry.local_models.candidates import FoundModel, ModelFormat, ScanResult
from localllm.model_registry.local_models.folders import describe_folder
from localllm.model_registry.local_models.roots import ScanRoots
from localllm.model_registry.local_models.scan import describe_file, scan
from localllm.model_registry.local_models.voices import describe_voice
from localllm.model_registry.local_models.walk import ScanLimits

__all__ = [
    "MODES",
    "AddReport",
    "AddedFile",
    "FoundModel",
    "ModelFormat",
    "ScanLimits",
    "ScanResult",
    "ScanRoots",
    "add_found_model",
    "describe_file",
    "describe_folder",
    "describe_voice",
    "scan",
]
